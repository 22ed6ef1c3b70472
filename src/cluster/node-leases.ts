// The node heartbeats of a local cluster, and what a restart must do about them.
//
// kwok is the kubelet of every simulated node: it holds each node's Lease in
// kube-node-lease and plays pods (start, finish, delete) only on nodes whose
// lease it holds. kwok v0.8 names itself "<hostname>_<random uuid>", so the
// kwok a restart starts is a stranger to the leases the previous one left
// (200 s each): it leaves those nodes alone until the leases expire, and when
// it then takes one over it re-lists the node's pods before its own lease
// cache has caught up, so pods caught Pending or Terminating stay so for good
// (measured: still stuck minutes later). kwok has no flag to keep its identity,
// so a restart hands the nodes over instead: stop the new kwok, delete the
// leases, start it again; it then creates every lease itself and plays every pod.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from '../runtime/client.ts';
import { mapConcurrently } from '../runtime/pool.ts';
import { type K8sObject, Leases, Nodes } from '../runtime/resources.ts';
import { REAL_NODE_LABEL } from './real-nodes/layout.ts';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

export interface NodeLease extends K8sObject {
  spec?: { holderIdentity?: string; renewTime?: string };
}

/**
 * The leases of kube-node-lease that are kwok's node heartbeats (named after a node kwok plays),
 * and those nodes' names. A real node's lease is its own kubelet's, never handed over.
 */
export async function listNodeLeases(client: KubeClient): Promise<{ nodes: string[]; leases: NodeLease[] }> {
  const simulated = { labelSelector: `!${REAL_NODE_LABEL}` };
  const nodes = (await client.listAll(Nodes, simulated)).items.map((n) => n.metadata?.name ?? '');
  const names = new Set(nodes);
  const leases = (await client.listAll<NodeLease>(Leases, { namespace: NODE_LEASE_NAMESPACE })).items;
  return { nodes, leases: leases.filter((l) => names.has(l.metadata?.name ?? '')) };
}

/**
 * The leases created before `since` (ms), i.e. by a kwok that ran before this
 * start. creationTimestamp has whole seconds, so only a strictly earlier
 * second counts: the new kwok's own leases are never mistaken for old ones.
 */
export function leasesLeftBehind(leases: readonly NodeLease[], since: number): NodeLease[] {
  const sinceSecond = Math.floor(since / 1000) * 1000;
  return leases.filter((l) => {
    const created = Date.parse(l.metadata?.creationTimestamp ?? '');
    return Number.isFinite(created) && created < sinceSecond;
  });
}

/**
 * The nodes whose heartbeat the running kwok does not keep yet: no lease, or one
 * not renewed since `since` (ms), or one held by another holder than the rest.
 * Empty: one kwok holds every node and has renewed each lease since it started.
 */
export function nodesWithoutHeartbeat(
  nodes: readonly string[],
  leases: readonly NodeLease[],
  since: number,
): string[] {
  const byName = new Map(leases.map((l) => [l.metadata?.name ?? '', l]));
  const fresh = (l: NodeLease | undefined) => Date.parse(l?.spec?.renewTime ?? '') >= since;
  // The holder most fresh leases name is the running kwok; any other is a leftover.
  const holders = new Map<string, number>();
  for (const l of leases)
    if (fresh(l))
      holders.set(l.spec?.holderIdentity ?? '', (holders.get(l.spec?.holderIdentity ?? '') ?? 0) + 1);
  const holder = [...holders].sort((a, b) => b[1] - a[1])[0]?.[0];
  return nodes.filter((n) => {
    const l = byName.get(n);
    return !fresh(l) || l?.spec?.holderIdentity !== holder;
  });
}

/** Deletes the given node leases; one already gone is fine. */
async function deleteNodeLeases(client: KubeClient, leases: readonly NodeLease[]): Promise<void> {
  await mapConcurrently(leases, { concurrency: 32 }, (l) =>
    client.delete(Leases, l.metadata?.name ?? '', NODE_LEASE_NAMESPACE, { ignoreNotFound: true }),
  );
}

/**
 * Deletes every node lease while no kwok runs, and again until none comes back
 * within `quietMs`. A create the stopped kwok sent just before it died (kwok
 * creates a lease its cache has none of, as one just started does before its
 * cache is filled) can land after the delete: the next kwok would then leave
 * that node alone until the dead holder's 200 s ran out. Its renewals cannot:
 * they carry the deleted lease's uid, and the API server refuses them. Returns
 * how many rounds of deleting it took; throws when leases keep coming back.
 */
export async function clearNodeLeases(client: KubeClient, quietMs = 1000, maxRounds = 5): Promise<number> {
  let leases = (await listNodeLeases(client)).leases;
  for (let round = 1; round <= maxRounds; round++) {
    await deleteNodeLeases(client, leases);
    await sleep(quietMs);
    leases = (await listNodeLeases(client)).leases;
    if (leases.length === 0) return round;
  }
  const names = leases.map((l) => `${l.metadata?.name} (held by ${l.spec?.holderIdentity ?? 'nobody'})`);
  throw new Error(`node leases came back ${maxRounds} times with kwok stopped: ${names.join(', ')}`);
}
