// The cache against the API server, for the moment before acting on an object.
// An informer's cache may lag: a replica that just took the lease may have had
// its watches cut for a while (a partition, an API server restart), and still
// hold an object the previous leader finished and deleted. Acting on that view
// re-cordons a restored node, or restores a node a newer object cordoned.
// controller-runtime leaves this to optimistic concurrency on the object
// written; a write to *another* object (the Node) needs a live read first.
import type { KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';
import type { K8sObject, ResourceType } from './resources.ts';

export type Liveness = 'current' | 'gone' | 'behind';

/**
 * 'current' when the API server holds the cached object at the same resourceVersion;
 * 'gone' when it holds none of that uid; 'behind' when it holds a newer version (the
 * cache will catch up, and the reconcile should wait for it).
 */
export async function liveness(client: KubeClient, type: ResourceType, cached: K8sObject): Promise<Liveness> {
  const meta = cached.metadata ?? {};
  let live: K8sObject;
  try {
    live = await client.get(type, meta.name ?? '', meta.namespace);
  } catch (err) {
    if (isNotFound(err)) return 'gone';
    throw err;
  }
  if (live.metadata?.uid !== meta.uid) return 'gone';
  return live.metadata?.resourceVersion === meta.resourceVersion ? 'current' : 'behind';
}

/**
 * liveness() once per object (by uid) for this process, before it first acts on
 * it; after a 'current' answer the cache is trusted for that object. A reconciler
 * keeps one per kind it acts from, and forgets an object it is done with, so a
 * late reconcile of it from a lagging cache reads it live again.
 */
export class FirstActionCheck {
  private readonly client: KubeClient;
  private readonly type: ResourceType;
  private readonly confirmed = new Set<string>();

  constructor(client: KubeClient, type: ResourceType) {
    this.client = client;
    this.type = type;
  }

  async check(cached: K8sObject): Promise<Liveness> {
    const uid = cached.metadata?.uid ?? '';
    if (this.confirmed.has(uid)) return 'current';
    const live = await liveness(this.client, this.type, cached);
    if (live === 'current') this.confirmed.add(uid);
    return live;
  }

  forget(uid: string): void {
    this.confirmed.delete(uid);
  }
}
