// The guest's pod network, as the node's CNI config: a bridge in each VM with
// host-local addresses from the node's own /25 of the cluster's pod range, the
// one numbered by its node index, masqueraded out through the VM's address.
// A /25, not the usual /24: it holds the kubelet's 110 pods, and a /16 (the
// largest prefix the API takes, src/api/kvm.ts) then has 512, more than any
// index a valid spec reaches (207 nodes, plus as many freed in the same pass).
// Debian's plugins (containernetworking-plugins) in the OS image; containerd
// sets up each pod's loopback itself with the loopback plugin from the same folder.
//
// The range comes from the node index, not from the Node's spec.podCIDR: it is
// known when the config is rendered, stays the node's for its life, and no VM
// waits for its Node to register and the controller-manager to allocate (which
// it does only when the spec sets podCIDR, and in registration order: that
// range may differ from this one, and nothing in the guest reads it). Pods of
// two VMs get distinct addresses, but nothing routes between VMs yet.
import type { KVMClusterSpecType } from '../../api/kvm.ts';
import { serviceAddress } from './pki.ts';

/**
 * The pod range when the spec sets none. Never the management cluster's
 * 10.244.0.0/16 (src/cluster/real-nodes/layout.ts POD_CIDR): the VM's own
 * address is in it, so a bridge there would hide the VM's route to its pod
 * network; nor the default service range 10.96.0.0/12.
 */
export const DEFAULT_POD_CIDR = '10.200.0.0/16';
/** containerd's folder of CNI configs (its default), and ours, the first in name order it loads. */
export const CNI_CONF_DIR = '/etc/cni/net.d';
export const CNI_CONFIG = `${CNI_CONF_DIR}/10-nodewarden.conflist`;
/** Where Debian's containernetworking-plugins puts them; Flatcar's are in /opt/cni/bin (no kubelet there yet either). */
export const CNI_BIN_DIR = '/usr/lib/cni';
const NODE_PREFIX = 25;

/** The node's /25: the index-th of the cluster's pod range (indexes start at 1); RangeError if it has fewer. */
export function nodePodRange(podCIDR: string, index: number): string {
  const bits = Number(podCIDR.split('/')[1]);
  const ranges = 2 ** (NODE_PREFIX - bits);
  if (!(bits <= NODE_PREFIX && Number.isInteger(index) && index >= 0 && index < ranges))
    throw new RangeError(`pod range ${podCIDR} has no /${NODE_PREFIX} for node index ${index}`);
  return `${serviceAddress(podCIDR, index * 2 ** (32 - NODE_PREFIX))}/${NODE_PREFIX}`;
}

/** The conflist: the bridge cni0, its gateway the first address, pods' traffic out masqueraded. */
export function cniConfig(podRange: string): string {
  const config = {
    cniVersion: '1.0.0',
    name: 'nodewarden',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        // Off the VM, only its own address is routed back (the pod network of the management cluster).
        ipMasq: true,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: podRange }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
    ],
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/**
 * Why no node can be made from a stored spec's pod range, or undefined. WHY: a KVMCluster stored before
 * the API refused a pod range under /16 may hold one with no /25 for some node's index; the
 * renderer would throw on every pass, and nothing would tell the user.
 */
export function podRangeProblem(
  spec: KVMClusterSpecType,
  indexes: Readonly<Record<string, number>>,
): string | undefined {
  const podCIDR = spec.network.podCIDR ?? DEFAULT_POD_CIDR;
  const short = Object.entries(indexes)
    .filter(([, index]) => {
      try {
        nodePodRange(podCIDR, index);
        return false;
      } catch {
        return true;
      }
    })
    .map(([id]) => id);
  if (!short.length) return undefined;
  return `spec.network.podCIDR ${podCIDR} has no /25 for node ${short.sort().join(', ')}: give a range of /16 or larger (nodes are not changed until then)`;
}
