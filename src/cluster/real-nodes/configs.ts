// The files a real node runs from, rendered from its layout: kubelet's and
// kube-proxy's configuration, the CNI network, the holder's mount script, and
// the API server's egress selector. Pure; each setting that is not a default
// says what forced it (docs/design/real-nodes.md has the longer story).
import { join } from 'node:path';
import { CLUSTER_DNS_IP, POD_CIDR, type RealNode, type RealNodesLayout } from './layout.ts';

/** Where a node keeps its credentials, inside its folder. */
export function nodePaths(node: RealNode) {
  const d = node.dir;
  return {
    kubeletConfig: join(d, 'kubelet.yaml'),
    kubeletKubeconfig: join(d, 'kubelet.kubeconfig'),
    kubeletServingCert: join(d, 'pki', 'kubelet.crt'),
    kubeletServingKey: join(d, 'pki', 'kubelet.key'),
    proxyConfig: join(d, 'kube-proxy.yaml'),
    proxyKubeconfig: join(d, 'kube-proxy.kubeconfig'),
    containerdConfig: join(d, 'containerd', 'config.toml'),
    containerdSocket: join(d, 'containerd', 'containerd.sock'),
    cniConfDir: join(d, 'cni', 'net.d'),
    cniIpamDir: join(d, 'cni', 'ipam'),
    mountScript: join(d, 'node-ns.sh'),
    resolvConf: join(d, 'resolv.conf'),
    sysctlDir: join(d, 'sysctl'),
    var: join(d, 'var'),
    logs: join(d, 'logs'),
    pids: join(d, 'pids'),
  };
}

export function kubeletConfig(node: RealNode, clientCaFile: string): object {
  const p = nodePaths(node);
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // These machines run cgroup v1; kubelet 1.35+ refuses it unless told (a v2 host is unaffected).
    failCgroupV1: false,
    // PID 1 is not systemd.
    cgroupDriver: 'cgroupfs',
    cgroupRoot: `/${node.cgroup}`,
    containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
    address: node.ip,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    tlsCertFile: p.kubeletServingCert,
    tlsPrivateKeyFile: p.kubeletServingKey,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: clientCaFile },
    },
    authorization: { mode: 'Webhook' },
    clusterDomain: 'cluster.local',
    clusterDNS: [CLUSTER_DNS_IP],
    // Nothing outside to forward to: pods resolve only the cluster's names.
    resolvConf: p.resolvConf,
    failSwapOn: false,
    // The disk is the host's, shared with everything else: never evict or collect for its sake.
    evictionHard: { 'nodefs.available': '1%', 'imagefs.available': '1%', 'memory.available': '100Mi' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // Nodes come and go with `cluster down` and `up`: report fast so tests need not wait.
    nodeStatusUpdateFrequency: '5s',
    syncFrequency: '10s',
  };
}

export function kubeProxyConfig(node: RealNode): object {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'iptables',
    clusterCIDR: POD_CIDR,
    bindAddress: node.ip,
    hostnameOverride: node.name,
    clientConnection: { kubeconfig: nodePaths(node).proxyKubeconfig },
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    // 0: leave the machine-wide nf_conntrack_max alone (kube-proxy would raise it for the whole host).
    conntrack: { maxPerCore: 0 },
  };
}

/** Debian's CNI plugins: a bridge per node with host-local addresses from its pod range. */
export function cniConfig(cluster: string, node: RealNode): object {
  return {
    cniVersion: '1.0.0',
    name: cluster,
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        // Pods' traffic never leaves the cluster's namespaces: nothing to masquerade for.
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: node.podCidr }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: nodePaths(node).cniIpamDir,
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

/** kubelet writes these machine-wide; the holder binds files over them so the host keeps its own. */
export const GUARDED_SYSCTLS: Readonly<Record<string, string>> = {
  'vm/overcommit_memory': '1',
  'kernel/panic': '10',
  'kernel/panic_on_oops': '1',
};

/**
 * The holder's script, run in the node's fresh network and private mount namespace, ending as pause.
 * `ip netns exec` remounts /sys without the cgroup mounts, and kubelet and containerd write to fixed
 * host paths (/var/log/pods, /var/lib/kubelet, /run/netns…): mount both right, inside the namespace.
 */
export function mountScript(node: RealNode, pauseBinary: string): string {
  const p = nodePaths(node);
  const hierarchies = ['cpu', 'cpuacct', 'cpuset', 'memory', 'devices', 'freezer', 'blkio', 'pids'];
  const sysctls = Object.keys(GUARDED_SYSCTLS).map(
    (key) => `mount --bind ${p.sysctlDir}/${key.replace('/', '.')} /proc/sys/${key}`,
  );
  return [
    '#!/bin/sh',
    'set -eu',
    'mount --make-rprivate /',
    'mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup',
    `for c in ${hierarchies.join(' ')}; do mkdir -p /sys/fs/cgroup/$c; mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c; done`,
    'mkdir -p /sys/fs/cgroup/systemd /sys/fs/cgroup/unified',
    'mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd',
    'mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified',
    ...sysctls,
    `mount --bind ${p.var} /var`,
    `mount --bind ${p.resolvConf} /etc/resolv.conf`,
    'mount -t tmpfs -o mode=755 noderun /run',
    'ip link set lo up',
    `exec ${pauseBinary}`,
    '',
  ].join('\n');
}

/** The API server dials kubelets and pods through the proxy in the cluster's namespace. */
export function egressSelectorConfig(layout: RealNodesLayout): object {
  return {
    apiVersion: 'apiserver.k8s.io/v1beta1',
    kind: 'EgressSelectorConfiguration',
    egressSelections: [
      {
        name: 'cluster',
        connection: { proxyProtocol: 'HTTPConnect', transport: { uds: { udsName: layout.egressSocket } } },
      },
    ],
  };
}
