// One eviction, its answer sorted into the few outcomes a drain acts on; and
// many at once, bounded. Never retries: the tracker decides when to try again.
import type { KubeClient } from '../runtime/client.ts';
import { ApiError } from '../runtime/errors.ts';
import { mapConcurrently } from '../runtime/pool.ts';
import { evictionsTotal } from './metrics.ts';
import type { Pod } from './pod.ts';

export type EvictionOutcome =
  | { result: 'evicted' }
  | { result: 'gone' }
  | { result: 'blocked'; pdb?: string; message: string }
  | { result: 'terminating-namespace'; message: string }
  | { result: 'error'; message: string };

/** Only evict is needed, so a drain needs just pods/eviction (create) in RBAC. */
export type EvictClient = Pick<KubeClient, 'evict'>;

export interface EvictOptions {
  /** Negative: the pod's own terminationGracePeriodSeconds (kubectl's -1). */
  gracePeriodSeconds?: number;
}

// The API server names the PDB in the Status cause: "The disruption budget web-pdb needs 3
// healthy pods and has 3 currently", or "...the disruption budget web-pdb is still being processed".
const PDB_NAME = /disruption budget ([a-z0-9]([-a-z0-9.]*[a-z0-9])?)/i;

function pdbName(err: ApiError): string | undefined {
  for (const text of [...err.causes.map((c) => c.message ?? ''), err.message]) {
    const m = PDB_NAME.exec(text);
    if (m) return m[1];
  }
  return undefined;
}

// The namespace lifecycle admission plugin marks this refusal with a NamespaceTerminating cause.
const isTerminatingNamespace = (err: ApiError) =>
  err.causes.some((c) => c.reason === 'NamespaceTerminating') || /being terminated/.test(err.message);

/** Maps an eviction error to what the drain does next (kubectl drain's evictPods switch). */
export function outcomeOf(err: unknown): EvictionOutcome {
  if (!(err instanceof ApiError)) return { result: 'error', message: String((err as Error)?.message ?? err) };
  switch (err.statusCode) {
    case 404:
      // Deleted meanwhile: kubectl counts it as done.
      return { result: 'gone' };
    case 429: {
      // A PDB would be violated (or the server is shedding load): retry later.
      const pdb = pdbName(err);
      return pdb
        ? { result: 'blocked', pdb, message: err.message }
        : { result: 'blocked', message: err.message };
    }
    case 403:
      // The namespace controller is deleting everything in it; the pod goes by itself.
      if (isTerminatingNamespace(err)) return { result: 'terminating-namespace', message: err.message };
      return { result: 'error', message: err.message };
    default:
      // 500 when several PDBs match the pod, RBAC 403s, ...: kubectl fails such a pod at once.
      return { result: 'error', message: err.message };
  }
}

/**
 * Evicts one pod. Completed pods go through the Eviction API too, as in kubectl:
 * the API server deletes terminal pods without consulting PDBs, so no DELETE
 * path (and no pods/delete permission) is needed.
 */
export async function evictPod(
  client: EvictClient,
  pod: Pod,
  opts: EvictOptions = {},
): Promise<EvictionOutcome> {
  const name = pod.metadata?.name ?? '';
  const namespace = pod.metadata?.namespace ?? '';
  const grace = opts.gracePeriodSeconds;
  let outcome: EvictionOutcome;
  try {
    await client.evict(
      name,
      namespace,
      grace !== undefined && grace >= 0 ? { gracePeriodSeconds: grace } : {},
    );
    outcome = { result: 'evicted' };
  } catch (err) {
    outcome = outcomeOf(err);
  }
  evictionsTotal.inc({ result: outcome.result });
  return outcome;
}

/**
 * Evicts many pods, at most `concurrency` requests in flight (the client's QPS
 * limit still applies). The map iterates in the order the pods were given.
 */
export async function evictPods(
  client: EvictClient,
  pods: readonly Pod[],
  opts: EvictOptions = {},
  concurrency = 32,
): Promise<Map<Pod, EvictionOutcome>> {
  const results = await mapConcurrently(pods, { concurrency }, (pod) => evictPod(client, pod, opts));
  return new Map(pods.map((p, i) => [p, results[i]!]));
}
