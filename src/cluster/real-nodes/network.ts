// The cluster's network for its real nodes, all inside network namespaces it
// makes and removes: one namespace for the cluster (a bridge, and a route to
// each node's pod range), one per node (eth0 on that bridge). Veths are made
// directly inside the namespaces, so no interface ever appears on the host.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { CLUSTER_GATEWAY, type RealNode, type RealNodesLayout } from './layout.ts';

const exec = promisify(execFile);

async function ip(...args: string[]): Promise<string> {
  try {
    return (await exec('ip', args)).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim()}`);
  }
}

const inNs = (ns: string, ...args: string[]) => ip('netns', 'exec', ns, ...args);

/** The namespaces that exist, by name. */
export function namespaces(): Set<string> {
  return existsSync('/run/netns') ? new Set(readdirSync('/run/netns')) : new Set();
}

/** Makes the cluster's namespace and bridge; idempotent. */
export async function ensureClusterNetwork(layout: RealNodesLayout): Promise<void> {
  if (!namespaces().has(layout.netns)) await ip('netns', 'add', layout.netns);
  const ns = layout.netns;
  await inNs(ns, 'ip', 'link', 'set', 'lo', 'up');
  if (!(await inNs(ns, 'ip', '-o', 'link', 'show')).includes(' br0:'))
    await inNs(ns, 'ip', 'link', 'add', 'br0', 'type', 'bridge');
  await inNs(ns, 'ip', 'addr', 'replace', `${CLUSTER_GATEWAY}/24`, 'dev', 'br0');
  await inNs(ns, 'ip', 'link', 'set', 'br0', 'up');
  // No default route: nothing leaves the cluster's namespaces. Forward between nodes only.
  await inNs(ns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1');
}

/** Makes a node's namespace, its eth0 on the cluster bridge, and the route to its pods; idempotent. */
export async function ensureNodeNetwork(layout: RealNodesLayout, node: RealNode): Promise<void> {
  if (!namespaces().has(node.netns)) await ip('netns', 'add', node.netns);
  const links = await inNs(node.netns, 'ip', '-o', 'link', 'show');
  if (!links.includes(' eth0@')) {
    await ip(
      'link',
      'add',
      'eth0',
      'netns',
      node.netns,
      'type',
      'veth',
      'peer',
      'name',
      node.bridgePort,
      'netns',
      layout.netns,
    );
  }
  await inNs(layout.netns, 'ip', 'link', 'set', node.bridgePort, 'master', 'br0', 'up');
  await inNs(node.netns, 'ip', 'addr', 'replace', `${node.ip}/24`, 'dev', 'eth0');
  await inNs(node.netns, 'ip', 'link', 'set', 'eth0', 'up');
  await inNs(node.netns, 'ip', 'link', 'set', 'lo', 'up');
  await inNs(node.netns, 'ip', 'route', 'replace', 'default', 'via', CLUSTER_GATEWAY);
  await inNs(layout.netns, 'ip', 'route', 'replace', node.podCidr, 'via', node.ip);
  await inNs(node.netns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1');
  // kube-proxy's rules must see traffic between pods on the node's own bridge (a Service's hairpin).
  await inNs(node.netns, 'sysctl', '-qw', 'net.bridge.bridge-nf-call-iptables=1');
}

/** Removes the nodes' namespaces, then the cluster's (its veth peers and routes go with them). */
export async function removeNetwork(layout: RealNodesLayout): Promise<void> {
  const present = namespaces();
  for (const ns of [...layout.nodes.map((n) => n.netns), layout.netns])
    if (present.has(ns)) await ip('netns', 'delete', ns);
}
