// Following one object until a condition holds, it is deleted, or time runs
// out: watch it, and fall back to polling when watching fails.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';
import type { ResourceType } from './resources.ts';

/** How following ended, with the last version of the object seen (if any). */
export type FollowOutcome<O> = { kind: 'done' | 'gone' | 'timeout'; last: O | undefined };

/**
 * Follows one object until `visit` says stop, it is deleted, or `limitMs`
 * passes. Watches (changes arrive at once, one request); if watching fails
 * (no watch permission, a proxy that cuts streams) it polls every 500 ms.
 */
export async function follow<O extends { metadata?: { name?: string; resourceVersion?: string } }>(
  client: KubeClient,
  type: ResourceType,
  name: string,
  limitMs: number | undefined,
  visit: (obj: O) => boolean,
  namespace?: string,
): Promise<FollowOutcome<O>> {
  const signal = limitMs === undefined ? undefined : AbortSignal.timeout(limitMs);
  let last: O | undefined;
  let rv: string | undefined;
  const see = (obj: O | undefined): FollowOutcome<O> | undefined => {
    if (!obj) return { kind: 'gone', last };
    last = obj;
    rv = obj.metadata?.resourceVersion ?? rv;
    return visit(obj) ? { kind: 'done', last } : undefined;
  };
  const read = () =>
    client.get<O>(type, name, namespace, signal).then(see, (err: unknown) => {
      if (isNotFound(err)) return see(undefined);
      throw err;
    });
  try {
    let out = await read();
    try {
      const fieldSelector = `metadata.name=${name}`;
      while (!out) {
        const opened = Date.now();
        const opts = { namespace, fieldSelector, resourceVersion: rv, timeoutSeconds: 60, signal };
        for await (const ev of client.watch<O>(type, opts)) {
          if (ev.type === 'BOOKMARK') rv = ev.object.metadata?.resourceVersion ?? rv;
          else if (ev.type === 'ERROR') {
            // 410 Gone: our resourceVersion is too old, so read afresh and watch from there.
            if ((ev.object as { code?: number }).code !== 410) throw new Error('watch failed');
            out = await read();
            break;
          } else if (ev.object.metadata?.name === name) {
            // (the field selector already picks the object; the check guards against servers that ignore it)
            out = see(ev.type === 'DELETED' ? undefined : ev.object);
          }
          if (out) break;
        }
        if (signal?.aborted) throw signal.reason;
        // A stream that ends at once (a proxy, a broken server) must not become a hot loop.
        if (!out && Date.now() - opened < 1000) await sleep(500, undefined, { signal });
      }
    } catch (err) {
      if (signal?.aborted) throw err; // otherwise fall back to polling
    }
    while (!out) {
      await sleep(500, undefined, { signal });
      out = await read();
    }
    return out;
  } catch (err) {
    if (signal?.aborted) return { kind: 'timeout', last };
    throw err;
  }
}
