// The node annotation a hypervisor agent reads its network setup from (the
// anchor's vino.network-values): per pool using the node, each network's
// bridge address and MAC, its DHCP block, routes and DNS. JSON, keyed by
// <namespace>/<pool>, so two pools on one node never overwrite each other.
import type { VirtualHostPoolSpecType } from '../../api/virtualhosts.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { retryOnConflict } from '../../runtime/conflict.ts';
import { isNotFound } from '../../runtime/errors.ts';
import type { CacheReader } from '../../runtime/host.ts';
import { type K8sObject, Nodes } from '../../runtime/resources.ts';
import type { HypervisorAddresses } from './addresses.ts';
import { NETWORK_VALUES_ANNOTATION, type Pool } from './objects.ts';

export interface NodeNetworkValues {
  network: string;
  subnet: string;
  bridgeIP?: string;
  bridgeMAC?: string;
  dhcpStart?: string;
  dhcpStop?: string;
  bridgeName?: string;
  physicalInterface?: string;
  routes?: VirtualHostPoolSpecType['networks'][number]['routes'];
  dnsServers?: string[];
}

export type PoolNetworkValues = { networks: NodeNetworkValues[] };

/** What one node's agent needs to know of the pool's networks. */
export function nodeNetworkValues(pool: Pool, a: HypervisorAddresses | undefined): PoolNetworkValues {
  return {
    networks: pool.spec.networks.map((n) => ({
      network: n.name,
      subnet: n.subnet,
      bridgeIP: a?.bridge[n.name]?.ip,
      bridgeMAC: a?.bridge[n.name]?.mac,
      dhcpStart: a?.dhcp[n.name]?.start,
      dhcpStop: a?.dhcp[n.name]?.stop,
      bridgeName: n.bridgeName,
      physicalInterface: n.physicalInterface,
      routes: n.routes,
      dnsServers: n.dnsServers,
    })),
  };
}

/** The annotation's value with this pool's entry set (or removed when `values` is undefined). */
export function networkValuesAnnotation(
  current: string | undefined,
  poolKey: string,
  values: PoolNetworkValues | undefined,
): string | undefined {
  let all: Record<string, unknown> = {};
  try {
    const parsed = current ? JSON.parse(current) : {};
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) all = parsed;
  } catch {
    // Not ours to keep: a value we cannot read is replaced.
  }
  if (values) all[poolKey] = values;
  else delete all[poolKey];
  return Object.keys(all).length ? JSON.stringify(all) : undefined;
}

/** Whether the node's annotation holds an entry of this pool. */
export function holdsEntry(node: K8sObject, poolKey: string): boolean {
  const current = node.metadata?.annotations?.[NETWORK_VALUES_ANNOTATION];
  return networkValuesAnnotation(current, poolKey, undefined) !== current;
}

/** Writes the pool's entry on the node (undefined: removes it), unless it already reads so. */
export async function setNetworkValues(
  client: KubeClient,
  cache: CacheReader,
  pool: Pool,
  node: string,
  values: PoolNetworkValues | undefined,
): Promise<void> {
  const key = `${pool.metadata.namespace}/${pool.metadata.name}`;
  const cached = cache.get<K8sObject>(Nodes, node);
  if (!cached) return;
  const want = (n: K8sObject) => {
    const current = n.metadata?.annotations?.[NETWORK_VALUES_ANNOTATION];
    const next = networkValuesAnnotation(current, key, values);
    return next === current ? undefined : { next: next ?? null };
  };
  if (!want(cached)) return;
  // Other pools may share the node: read it fresh and write guarded by its resourceVersion.
  await retryOnConflict(async () => {
    let n: K8sObject;
    try {
      n = await client.get<K8sObject>(Nodes, node);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    const change = want(n);
    if (!change) return;
    const patch = {
      metadata: {
        resourceVersion: n.metadata?.resourceVersion,
        annotations: { [NETWORK_VALUES_ANNOTATION]: change.next },
      },
    };
    await client.patch(Nodes, node, undefined, patch, { type: 'merge' });
  });
}
