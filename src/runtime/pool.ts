// A bounded worker pool: run an async function over many items with at most N
// in flight, so a fleet of a thousand nodes is N API calls at a time, not a
// thousand (the client's QPS limit still applies on top).

export interface PoolOptions {
  /** Items in flight at once; values below 1 count as 1. */
  concurrency: number;
  /** Checked before each item is started; an abort rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Calls `fn` on every item, at most `concurrency` at a time, items started in
 * order; resolves to the results in the items' order. The first failure (or an
 * abort) stops further items from starting, waits for those in flight, and
 * rejects with that failure — nothing is left running behind the caller.
 */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  opts: PoolOptions,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed: { err: unknown } | undefined;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        opts.signal?.throwIfAborted();
        results[i] = await fn(items[i]!, i);
      } catch (err) {
        failed ??= { err };
      }
    }
  };
  const workers = Math.max(1, Math.min(Math.floor(opts.concurrency) || 1, items.length));
  await Promise.all(Array.from({ length: workers }, worker));
  if (failed) throw failed.err;
  return results;
}
