// The Ignition config (spec v3.3.0) a node's VM boots with, as the anchor
// hands one to QEMU via fw_cfg: its hostname, the SSH users, the container-runtime and kubelet
// disks formatted and mounted, on masters the etcd share (9p) from the
// hypervisor host, and what makes it a Kubernetes node (node-files.ts:
// certificates, kubeconfigs, containerd, the kubelet, the static pods). Stored in the node's ConfigMap gzipped and base64-encoded
// (key user_data), like the anchor. Every rendered config is checked by the
// real ignition-validate in the unit tests. No network config: the VM takes
// its pod's address by DHCP from its container (api/vm-image.ts), as Flatcar's
// default network config and our OS image's both ask; a static file for eth0
// would take its place on Flatcar and leave the VM off the pod network.
import { gzipSync } from 'node:zlib';
import type { KVMClusterSpecType } from '../../api/kvm.ts';
import { ETCD_SHARE_TAG, HOSTNAME_FW_CFG, NODE_ENV_PATH, NodeEnv, VmDisks } from '../../api/vm-image.ts';
import { kubernetesFiles, kubernetesUnits } from './node-files.ts';
import type { ClusterPki } from './pki.ts';
import type { ClusterNode } from './spec.ts';

export const IGNITION_VERSION = '3.3.0';

/**
 * The etcd share's 9p mount options: the anchor's msize, which etcd needed to
 * keep up (kvm-operator #1250/#1295), and cache=mmap: without a cache, Linux's
 * 9p refuses a shared mapping of a file open for writing (EINVAL), which is
 * how bbolt maps etcd's database — etcd wrote its first pages and died.
 */
export const ETCD_SHARE_OPTIONS = 'trans=virtio,version=9p2000.L,msize=512000,cache=mmap';

function dataUrl(text: string): string {
  return `data:,${encodeURIComponent(text)}`;
}

function file(path: string, contents: string, mode = 0o644) {
  return { path, mode, overwrite: true, contents: { source: dataUrl(contents) } };
}

function mountUnit(what: string, where: string, type: string, options?: string) {
  const name = `${where.slice(1).replaceAll('-', '\\x2d').replaceAll('/', '-')}.mount`;
  const lines = [
    '[Unit]',
    `Description=${where}`,
    '[Mount]',
    `What=${what}`,
    `Where=${where}`,
    `Type=${type}`,
    ...(options ? [`Options=${options}`] : []),
    '[Install]',
    'WantedBy=local-fs.target',
    '',
  ];
  return { name, enabled: true, contents: lines.join('\n') };
}

/**
 * The hostname is the VM pod's name, as the anchor's qemu-node-setup set it:
 * the kubelet registers under it, and the pod and the workload Node are
 * matched by name. It is not known when the config is rendered (one config per
 * node, many pods over its life), so it comes through fw_cfg at boot.
 */
function hostnameUnit() {
  const contents = [
    '[Unit]',
    "Description=Hostname from the VM's pod",
    'Before=kubelet.service',
    '[Service]',
    'Type=oneshot',
    `ExecStart=/bin/sh -c 'hostnamectl set-hostname "$(cat /sys/firmware/qemu_fw_cfg/by_name/${HOSTNAME_FW_CFG}/raw)"'`,
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
  return { name: 'hostname-from-pod.service', enabled: true, contents };
}

export interface IgnitionInput {
  cluster: string;
  spec: KVMClusterSpecType;
  node: ClusterNode;
  index: number;
  /** The cluster's PKI: the node's certificates, keys and bootstrap token go into its config. */
  pki: ClusterPki;
}

/** The Ignition config of one node's VM, as an object. */
export function renderIgnition(input: IgnitionInput): Record<string, unknown> {
  const { cluster, spec, node, index } = input;
  const kubernetes = { cluster, spec, node, index, pki: input.pki };
  const env = [
    `${NodeEnv.clusterId}=${cluster}`,
    `${NodeEnv.nodeId}=${node.id}`,
    `${NodeEnv.nodeRole}=${node.role}`,
    `${NodeEnv.nodeIndex}=${index}`,
    `${NodeEnv.apiDomain}=${spec.api.domain}`,
    `${NodeEnv.apiSecurePort}=${spec.api.securePort ?? 443}`,
    `${NodeEnv.kubernetesVersion}=${spec.release.kubernetesVersion}`,
    `${NodeEnv.releaseVersion}=${spec.release.version}`,
    ...(spec.network.podCIDR ? [`${NodeEnv.podCidr}=${spec.network.podCIDR}`] : []),
    ...(spec.network.serviceCIDR ? [`${NodeEnv.serviceCidr}=${spec.network.serviceCIDR}`] : []),
    '',
  ].join('\n');
  const units = [
    hostnameUnit(),
    mountUnit('/dev/disk/by-label/containerd', '/var/lib/containerd', 'xfs'),
    mountUnit('/dev/disk/by-label/kubelet', '/var/lib/kubelet', 'xfs'),
    ...(node.role === 'master' ? [mountUnit(ETCD_SHARE_TAG, '/var/lib/etcd', '9p', ETCD_SHARE_OPTIONS)] : []),
    ...(node.role === 'worker'
      ? (node.spec.hostVolumes ?? []).map((v) =>
          mountUnit(v.mountTag, `/mnt/${v.mountTag}`, '9p', 'trans=virtio,version=9p2000.L'),
        )
      : []),
    ...kubernetesUnits(kubernetes),
  ];
  return {
    ignition: { version: IGNITION_VERSION },
    passwd: {
      users: (spec.sshUsers ?? []).map((u) => ({
        name: u.name,
        sshAuthorizedKeys: [u.publicKey],
        groups: ['sudo', 'docker'],
      })),
    },
    storage: {
      filesystems: [
        {
          device: VmDisks.containerd,
          format: 'xfs',
          label: 'containerd',
          wipeFilesystem: true,
        },
        { device: VmDisks.kubelet, format: 'xfs', label: 'kubelet', wipeFilesystem: true },
      ],
      files: [
        file(NODE_ENV_PATH, env, 0o600),
        ...kubernetesFiles(kubernetes).map((f) => file(f.path, f.contents, f.mode)),
      ],
    },
    systemd: { units },
  };
}

/** The config as the ConfigMap holds it: JSON, gzipped, base64 (anchor: user_data). */
export function encodeUserData(config: Record<string, unknown>): string {
  // Node writes mtime 0 into the gzip header: the same config always encodes the same, so re-applying changes nothing.
  return gzipSync(Buffer.from(JSON.stringify(config)), { level: 9 }).toString('base64');
}
