// Where a local cluster's real nodes live: their names, addresses, folders,
// network namespaces and cgroups. Pure: everything else in this folder acts on
// what this decides. Every address that is not loopback is inside a network
// namespace of the cluster's own, so clusters may reuse the same addresses.
import { join } from 'node:path';

/**
 * The bridge in the cluster's namespace. The relay publishes here, on the same port, each
 * port of the host's loopback that pods and kubelets need: the API server's, the add-ons'.
 */
export const CLUSTER_GATEWAY = '172.30.0.1';
const NODE_SUBNET_PREFIX = '172.30.0';
/** The pod range of all real nodes; node i gets 10.244.(i+1).0/24. */
export const POD_CIDR = '10.244.0.0/16';
/** kwokctl's Service range: the `kubernetes` Service and cluster DNS. */
export const KUBERNETES_SERVICE_IP = '10.0.0.1';
export const CLUSTER_DNS_IP = '10.0.0.10';
export const MAX_REAL_NODES = 200;

/**
 * Where pods and kubelets reach a URL on the host's loopback once the relay publishes its
 * port (real-nodes.ts, relayCommands): the same port at the cluster's gateway. Undefined
 * for a URL on any other host.
 */
export function atClusterGateway(url: string): string | undefined {
  const u = new URL(url);
  if (u.hostname !== '127.0.0.1' || !u.port) return undefined;
  return url.replace(`//${u.host}`, `//${CLUSTER_GATEWAY}:${u.port}`);
}

/** Label every real node carries (kubelet sets it); kwok leaves nodes with it alone. */
export const REAL_NODE_LABEL = 'nodewarden.dev/real';

export interface RealNode {
  name: string;
  /** 0-based, in the order the nodes were asked for; fixes the addresses. */
  index: number;
  /** The node's own network namespace (its eth0, pods' bridge and iptables). */
  netns: string;
  /** eth0's address, also kubelet's node IP. */
  ip: string;
  podCidr: string;
  /** The node's folder: configs, containerd's root and state, logs, kubelet's /var. */
  dir: string;
  /** kubelet's cgroupRoot (without the leading slash); the node's processes run in `<cgroup>/node`. */
  cgroup: string;
  /** The node's veth on the cluster bridge, named in the cluster namespace only. */
  bridgePort: string;
}

export interface RealNodesLayout {
  cluster: string;
  /** <cluster folder>/real-nodes */
  dir: string;
  /** The cluster's namespace: its bridge, routes to the pod ranges, the relay. */
  netns: string;
  /** The parent cgroup of everything the cluster runs for its real nodes. */
  cgroup: string;
  /** The relay's cgroup. */
  relayCgroup: string;
  /** A port of the host's loopback (the API server's, an add-on's), reached from the namespaces through this socket. */
  hostPortSocket(port: number): string;
  /** The API server's egress into the cluster network: an HTTP CONNECT proxy on this socket. */
  egressSocket: string;
  nodes: RealNode[];
}

/** Node names as the simulated fleet names its nodes: `<pool>-000`, `<pool>-001`… */
export function realNodeNames(pool: string, count: number): string[] {
  const width = Math.max(3, String(count - 1).length);
  return Array.from({ length: count }, (_, i) => `${pool}-${String(i).padStart(width, '0')}`);
}

export function realNodesLayout(
  cluster: string,
  clusterDir: string,
  names: readonly string[],
): RealNodesLayout {
  if (names.length > MAX_REAL_NODES)
    throw new Error(`at most ${MAX_REAL_NODES} real nodes per cluster, not ${names.length}`);
  const dir = join(clusterDir, 'real-nodes');
  const cgroup = `nodewarden/${cluster}`;
  return {
    cluster,
    dir,
    netns: `nw-${cluster}`,
    cgroup,
    relayCgroup: `${cgroup}/relay`,
    hostPortSocket: (port) => join(dir, `port-${port}.sock`),
    egressSocket: join(dir, 'egress.sock'),
    nodes: names.map((name, index) => ({
      name,
      index,
      netns: `nw-${cluster}-${name}`,
      ip: `${NODE_SUBNET_PREFIX}.${index + 2}`,
      podCidr: `10.244.${index + 1}.0/24`,
      dir: join(dir, name),
      cgroup: `${cgroup}/${name}`,
      bridgePort: `nw${index}`,
    })),
  };
}
