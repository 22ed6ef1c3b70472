// Our own writes the cache has not shown yet. A round that starts right after
// the one that created a PendingNode or a NodeMaintenance would otherwise not
// see it and do the same again (a second node, a second drain). Like
// controller-runtime's expectations: each write is remembered until the cache
// shows it, or for `ttlMs` at most.
export class Expectations<T> {
  private readonly ttlMs: number;
  private readonly made = new Map<string, { obj: T; at: number }>();
  private readonly gone = new Map<string, number>();

  constructor(ttlMs = 30_000) {
    this.ttlMs = ttlMs;
  }

  created(key: string, obj: T, now = Date.now()): void {
    this.gone.delete(key);
    this.made.set(key, { obj, at: now });
  }

  deleted(key: string, now = Date.now()): void {
    this.made.delete(key);
    this.gone.set(key, now);
  }

  /** The cache's objects, corrected by the writes it has not caught up with. */
  view(cached: readonly T[], keyOf: (obj: T) => string, now = Date.now()): T[] {
    const keys = new Set(cached.map(keyOf));
    for (const [k, e] of this.made) if (keys.has(k) || now - e.at > this.ttlMs) this.made.delete(k);
    for (const [k, at] of this.gone) if (!keys.has(k) || now - at > this.ttlMs) this.gone.delete(k);
    return [...cached.filter((o) => !this.gone.has(keyOf(o))), ...[...this.made.values()].map((e) => e.obj)];
  }
}
