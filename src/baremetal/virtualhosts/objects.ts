// The objects a VirtualHostPool makes, built as plain manifests from what was
// decided (pure): the hypervisor agent DaemonSet (its pod as the backend
// needs it: hypervisors/hypervisor.ts AgentRun), each VM's two Secrets and
// its BareMetalHost, the VM its node's hypervisor defines, the node annotation, and
// the label and owner-key conventions that let the controller find them all
// again after a restart.
import { createHash } from 'node:crypto';
import { type BareMetalHost, BareMetalHosts, RACK_LABEL } from '../../api/baremetal.ts';
import { type FlavorSpec, VIRTUAL_HOSTS_GROUP, type VirtualHostPool } from '../../api/virtualhosts.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import type { AgentRun, VmDefinition } from './hypervisors/hypervisor.ts';
import { vmHostAgentPod } from './hypervisors/libvirt/agent-pod.ts';
import type { NicAddress } from './network-data.ts';
import type { DesiredVm, VmRef } from './plan.ts';

export const POOL_LABEL = `${VIRTUAL_HOSTS_GROUP}/pool`;
export const FLAVOR_LABEL = `${VIRTUAL_HOSTS_GROUP}/flavor`;
export const HYPERVISOR_LABEL = `${VIRTUAL_HOSTS_GROUP}/hypervisor`;
export const INDEX_LABEL = `${VIRTUAL_HOSTS_GROUP}/index`;
export const AGENT_LABEL = 'app.kubernetes.io/name';
export const AGENT_NAME = 'nodewarden-hypervisor-agent';
export const NETWORK_VALUES_ANNOTATION = `${VIRTUAL_HOSTS_GROUP}/network-values`;
export const FINALIZER = `${VIRTUAL_HOSTS_GROUP}/virtualhostpool`;
/** What the pool's pods run where the simulated fleet acts for every node. */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

export type Pool = VirtualHostPool & K8sObject;
type OwnerRefs = NonNullable<K8sObject['metadata']>['ownerReferences'];

// ----------------------------------------------------------- IPAM owner keys

/** `vm/<node>/<flavor>/<index>/<nic>`: one NIC of one VM. */
export const nicOwner = (vm: VmRef, nic: string) => `vm/${vm.node}/${vm.flavor}/${vm.index}/${nic}`;
export const vmOwnerPrefix = (vm: VmRef) => `vm/${vm.node}/${vm.flavor}/${vm.index}/`;
export const bridgeOwner = (node: string) => `bridge/${node}`;
export const dhcpOwner = (node: string) => `dhcp/${node}`;

/** The VM an owner key names, if it names one. */
export function vmOfOwner(owner: string): VmRef | undefined {
  const m = owner.match(/^vm\/([^/]+)\/([^/]+)\/(\d+)\/[^/]+$/);
  return m ? { node: m[1]!, flavor: m[2]!, index: Number(m[3]) } : undefined;
}

/** The node a bridge or DHCP owner key names, if it names one. */
export const nodeOfOwner = (owner: string): string | undefined => owner.match(/^(?:bridge|dhcp)\/(.+)$/)?.[1];

/** The VM a labelled object (host, Secret) belongs to. */
export function vmOfLabels(labels: Record<string, string> | undefined): VmRef | undefined {
  const node = labels?.[HYPERVISOR_LABEL];
  const flavor = labels?.[FLAVOR_LABEL];
  const index = Number(labels?.[INDEX_LABEL]);
  return node && flavor && Number.isInteger(index) ? { node, flavor, index } : undefined;
}

// ------------------------------------------------------------------- names

export const ipPoolName = (pool: string, network: string) => `${pool}-${network}`;
export const agentName = (pool: string) => `${pool}-agent`;
export const networkDataSecret = (vm: string) => `${vm}-network-data`;
export const credentialsSecret = (vm: string) => `${vm}-bmc-secret`;
/**
 * The VM's id on its hypervisor: the namespace keeps two namespaces' pools of
 * one name apart. Ids are DNS labels (63 characters at most): a longer one is
 * cut and ends in a hash of the whole, so it stays unique and stable.
 */
export function machineId(namespace: string, vm: string): string {
  const full = `${namespace}-${vm}`;
  if (full.length <= 63) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 10);
  return `${full.slice(0, 52).replace(/-+$/, '')}-${hash}`;
}

export function ownerRefs(pool: Pool): OwnerRefs {
  return [
    {
      apiVersion: pool.apiVersion,
      kind: pool.kind,
      name: pool.metadata.name!,
      uid: pool.metadata.uid!,
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
}

// --------------------------------------------------------------- the agent

/** The anchor's hypervisor agent, one pod per selected node, running what the backend needs; on kwok nodes its pods are simulated. */
export function agentDaemonSet(pool: Pool, run: AgentRun): K8sObject {
  const name = pool.metadata.name!;
  const labels = { [AGENT_LABEL]: AGENT_NAME, [POOL_LABEL]: name };
  const { matchLabels, matchExpressions } = pool.spec.nodeSelector;
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {
      name: agentName(name),
      namespace: pool.metadata.namespace,
      labels,
      ownerReferences: ownerRefs(pool),
    },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          ...(matchLabels && Object.keys(matchLabels).length ? { nodeSelector: matchLabels } : {}),
          ...(matchExpressions?.length
            ? {
                affinity: {
                  nodeAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: {
                      nodeSelectorTerms: [{ matchExpressions }],
                    },
                  },
                },
              }
            : {}),
          ...(run.kind === 'pause'
            ? pausePod(pool)
            : vmHostAgentPod(name, pool.spec.daemonSet?.image ?? run.image, run.libvirtDir)),
        },
      },
    },
  };
}

/** The simulated fleet's agent pod: it only marks the node as the pool's. */
function pausePod(pool: Pool): Record<string, unknown> {
  return {
    containers: [
      {
        name: 'agent',
        image: pool.spec.daemonSet?.image ?? PAUSE_IMAGE,
        env: [
          { name: 'POOL_NAME', value: pool.metadata.name },
          { name: 'POOL_NAMESPACE', value: pool.metadata.namespace },
          { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
        ],
      },
    ],
  };
}

// --------------------------------------------------------------------- VMs

/** Copied node labels and the rack, overlaid with the flavor's bmhLabels, then ours (which always hold). */
export function hostLabels(
  pool: Pool,
  vm: DesiredVm,
  flavor: FlavorSpec,
  nodeLabels: Record<string, string>,
): Record<string, string> {
  const copied: Record<string, string> = {};
  for (const key of pool.spec.nodeLabelKeysToCopy ?? [])
    if (nodeLabels[key] !== undefined) copied[key] = nodeLabels[key];
  if (nodeLabels[RACK_LABEL] !== undefined) copied[RACK_LABEL] = nodeLabels[RACK_LABEL];
  return { ...copied, ...(flavor.bmhLabels ?? {}), ...vmLabels(pool.metadata.name!, vm) };
}

export function vmLabels(pool: string, vm: DesiredVm): Record<string, string> {
  return {
    [POOL_LABEL]: pool,
    [FLAVOR_LABEL]: vm.flavor,
    [HYPERVISOR_LABEL]: vm.node,
    [INDEX_LABEL]: String(vm.index),
  };
}

/** The NIC the VM boots from: the flavor's bootInterfaceName, else its first. */
export function bootNic(flavor: FlavorSpec, nics: readonly NicAddress[]): NicAddress {
  return nics.find((n) => n.nic === flavor.bootInterfaceName) ?? nics[0]!;
}

export function vmDefinition(
  pool: Pool,
  vm: DesiredVm,
  flavor: FlavorSpec,
  nics: readonly NicAddress[],
): VmDefinition {
  return {
    id: machineId(pool.metadata.namespace!, vm.name),
    flavor: { name: flavor.name, cpus: flavor.cpus ?? 1, memoryMiB: flavor.memoryMiB ?? 2048 },
    disks: [{ sizeGB: flavor.diskGB ?? 10 }],
    nics: nics.map((n) => ({ name: n.nic, mac: n.mac, ip: n.ip, network: n.network })),
    credentials: { ...pool.spec.bmcCredentials },
  };
}

function secret(
  pool: Pool,
  name: string,
  labels: Record<string, string>,
  data: Record<string, string>,
): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: pool.metadata.namespace, labels, ownerReferences: ownerRefs(pool) },
    type: 'Opaque',
    // data, not stringData: server-side apply compares what is stored.
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

export function credentialsSecretOf(pool: Pool, vm: DesiredVm): K8sObject {
  const { username, password } = pool.spec.bmcCredentials;
  return secret(pool, credentialsSecret(vm.name), vmLabels(pool.metadata.name!, vm), { username, password });
}

export function networkDataSecretOf(pool: Pool, vm: DesiredVm, networkData: string): K8sObject {
  return secret(pool, networkDataSecret(vm.name), vmLabels(pool.metadata.name!, vm), { networkData });
}

export function bareMetalHostOf(
  pool: Pool,
  vm: DesiredVm,
  o: {
    labels: Record<string, string>;
    bmcAddress: string;
    bootMAC: string;
    rootDeviceName: string;
    /** spec.online: a new host's VM is powered on; an existing host keeps what its user set. */
    online?: boolean;
  },
): BareMetalHost {
  const ns = pool.metadata.namespace!;
  const host = BareMetalHosts.make(
    { name: vm.name, namespace: ns, labels: o.labels, ownerReferences: ownerRefs(pool) },
    {
      online: o.online ?? true,
      bootMACAddress: o.bootMAC,
      bmc: {
        address: o.bmcAddress,
        credentialsName: credentialsSecret(vm.name),
        // The fleet's certificate is self-signed, as real BMCs' are.
        disableCertificateVerification: true,
      },
      networkData: { name: networkDataSecret(vm.name), namespace: ns },
      rootDeviceHints: { deviceName: o.rootDeviceName },
      description: `VM ${vm.flavor}-${vm.index} on hypervisor ${vm.node} (VirtualHostPool ${pool.metadata.name})`,
    },
  );
  return host;
}

/** Whether the host as it is carries everything we would write (so no write is needed). */
export function hostUpToDate(have: BareMetalHost | undefined, want: BareMetalHost): boolean {
  if (!have || have.metadata.deletionTimestamp) return false;
  const labels = have.metadata.labels ?? {};
  if (!Object.entries(want.metadata.labels ?? {}).every(([k, v]) => labels[k] === v)) return false;
  const a = have.spec;
  const b = want.spec;
  return (
    a.online === b.online &&
    a.bootMACAddress === b.bootMACAddress &&
    a.bmc?.address === b.bmc?.address &&
    a.bmc?.credentialsName === b.bmc?.credentialsName &&
    a.networkData?.name === b.networkData?.name &&
    JSON.stringify(a.rootDeviceHints ?? {}) === JSON.stringify(b.rootDeviceHints ?? {})
  );
}
