// List+watch of one resource type and selector into a local store, with the
// recovery client-node's informer lacks: it stops on any non-410 error and its
// watch can stall silently. This one never gives up until stop().
import { setTimeout as sleep } from 'node:timers/promises';
import { type KubeClient, statusError } from './client.ts';
import { isGone, isUnknownResource } from './errors.ts';
import { backoffDelay } from './ratelimit.ts';
import { type K8sObject, objectKey, type ResourceType, type WatchEvent } from './resources.ts';

export interface InformerOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** List page size. */
  pageSize?: number;
  /** Re-watch when neither an event nor a bookmark arrived for this long (default 5 min). */
  watchdogMs?: number;
  /** Re-emit update(obj, obj) for every cached object this often; 0 = never. */
  resyncMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** Server-side watch timeout; default random 300..600 s so watches of many informers do not renew in step. */
  timeoutSeconds?: number;
  /** Watch/list failures and handler exceptions, with which informer (describe()); it carries on regardless. */
  onError?: (err: unknown, informer: string) => void;
}

// How often a kind the API server does not serve is looked for again.
const MISSING_KIND_RETRY_MS = 5000;

export type IndexFunc<T> = (obj: T) => string[];

interface Index<T> {
  fn: IndexFunc<T>;
  values: Map<string, Set<string>>;
  byKey: Map<string, string[]>;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class Informer<T extends K8sObject = K8sObject> {
  readonly type: ResourceType;
  readonly opts: Readonly<InformerOptions>;
  /** Counters for tests and debugging. reconnects: watches opened after a previous one ended, for any reason. */
  readonly stats = {
    lists: 0,
    relists: 0,
    watches: 0,
    reconnects: 0,
    failures: 0,
    watchdogFires: 0,
    resyncs: 0,
  };
  private readonly client: KubeClient;
  private readonly store = new Map<string, T>();
  private readonly indexes = new Map<string, Index<T>>();
  private readonly addHandlers = new Set<(obj: T) => void>();
  private readonly updateHandlers = new Set<(oldObj: T, newObj: T) => void>();
  private readonly deleteHandlers = new Set<(obj: T) => void>();
  private readonly waiters = new Set<Waiter>();
  private readonly stopCtl = new AbortController();
  private synced = false;
  /** Why the last list or watch failed, until one succeeds: what a readiness probe reports. */
  private lastError: unknown;
  private rv = '';
  private running: Promise<void> | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  /** Aborts the current backoff wait, if any (catchUp). */
  private backoff: AbortController | undefined;
  /** Aborts the open watch, if any (catchUp). */
  private watching: AbortController | undefined;
  /** catchUp's requests, numbered; `listedFor` is the last one a finished list covers. */
  private catchUps = 0;
  private listedFor = 0;
  private readonly catchUpWaiters = new Map<number, Waiter>();

  constructor(client: KubeClient, type: ResourceType, opts: InformerOptions = {}) {
    this.client = client;
    this.type = type;
    this.opts = opts;
  }

  onAdd(fn: (obj: T) => void): () => void {
    this.addHandlers.add(fn);
    return () => this.addHandlers.delete(fn);
  }
  onUpdate(fn: (oldObj: T, newObj: T) => void): () => void {
    this.updateHandlers.add(fn);
    return () => this.updateHandlers.delete(fn);
  }
  onDelete(fn: (obj: T) => void): () => void {
    this.deleteHandlers.add(fn);
    return () => this.deleteHandlers.delete(fn);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.store.get(namespace ? `${namespace}/${name}` : name);
  }
  getByKey(key: string): T | undefined {
    return this.store.get(key);
  }
  list(): T[] {
    return [...this.store.values()];
  }
  get size(): number {
    return this.store.size;
  }
  /** resourceVersion the next watch resumes from (advanced by events and bookmarks). */
  get resourceVersion(): string {
    return this.rv;
  }

  /** Adds an index; it is built once from the store, then kept up to date per event. */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexes.has(name)) throw new Error(`index ${name} already exists on ${this.type.kind} informer`);
    this.indexes.set(name, { fn, values: new Map(), byKey: new Map() });
    for (const [key, obj] of this.store) this.reindex(key, obj);
  }
  byIndex(name: string, value: string): T[] {
    const idx = this.indexes.get(name);
    if (!idx) throw new Error(`no index ${name} on ${this.type.kind} informer`);
    const out: T[] = [];
    for (const key of idx.values.get(value) ?? []) {
      const obj = this.store.get(key);
      if (obj) out.push(obj);
    }
    return out;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Not synced because the API server serves no such kind (its CRD is not installed). */
  isMissing(): boolean {
    return !this.synced && isUnknownResource(this.lastError);
  }

  /** Resolves after the first full list is in the store; rejects if `signal` aborts or the informer stops first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.stopCtl.signal.aborted) return Promise.reject(new Error(`${this.type.kind} informer stopped`));
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        this.waiters.delete(w);
        reject(signal?.reason);
      };
      const w: Waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      this.waiters.add(w);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  start(): void {
    if (this.running || this.stopCtl.signal.aborted) return;
    this.running = this.run();
    if (this.opts.resyncMs && this.opts.resyncMs > 0) {
      this.resyncTimer = setInterval(() => this.resync(), this.opts.resyncMs);
    }
  }

  /**
   * Resolves once a full list begun after this call is in the store: the store then holds at
   * least what the API server held at the call. WHY: a replica that takes the lease may hold a
   * cache its watches stopped feeding (a partition) and not yet know it; the soak saw new leaders
   * act on deleted nodes, finished maintenances and released PendingNodes from such a cache.
   */
  catchUp(signal?: AbortSignal): Promise<void> {
    if (this.stopCtl.signal.aborted) return Promise.reject(new Error(`${this.type.kind} informer stopped`));
    const seq = ++this.catchUps;
    const done = new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        this.catchUpWaiters.delete(seq);
        reject(signal?.reason);
      };
      const off = () => signal?.removeEventListener('abort', onAbort);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.catchUpWaiters.set(seq, {
        resolve: () => {
          off();
          resolve();
        },
        reject: (err) => {
          off();
          reject(err);
        },
      });
    });
    this.watching?.abort(new Error('catch up'));
    this.backoff?.abort();
    return done;
  }

  /** Aborts the in-flight request and clears every timer; resolves when the loop has exited. */
  async stop(): Promise<void> {
    this.stopCtl.abort();
    clearInterval(this.resyncTimer);
    const stopped = new Error(`${this.type.kind} informer stopped`);
    for (const w of [...this.waiters, ...this.catchUpWaiters.values()]) w.reject(stopped);
    this.waiters.clear();
    this.catchUpWaiters.clear();
    await this.running;
  }

  private async run(): Promise<void> {
    const signal = this.stopCtl.signal;
    let needList = true;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (this.listedFor < this.catchUps) needList = true;
        if (needList) {
          const covers = this.catchUps;
          await this.relist(signal);
          needList = false;
          this.caughtUp(covers);
          // A catchUp that came while this list was under way needs a list begun after it.
          if (this.listedFor < this.catchUps) continue;
        }
        if (this.stats.watches > 0) this.stats.reconnects++;
        const { events, ms, fired } = await this.watchOnce(signal);
        // A watch that ends at once and empty (e.g. a proxy dropping it) must not become a hot loop.
        if (events > 0 || ms > 1000 || fired) {
          failures = 0;
          continue;
        }
        throw new Error(`${this.type.kind} watch closed at once with no events`);
      } catch (err) {
        if (signal.aborted) break;
        // catchUp ended the watch on purpose: list again at once, no failure.
        if (!needList && this.listedFor < this.catchUps) continue;
        // 410 from the watch (HTTP or ERROR event): our resourceVersion is compacted away, relist now.
        if (isGone(err) && !needList) {
          needList = true;
          continue;
        }
        this.stats.failures++;
        this.lastError = err;
        if (isUnknownResource(err)) {
          // Before the first sync this is a state the manager reports calmly, not a fault to log
          // at every retry; a kind that vanishes later (its CRD deleted) is a fault. Look again
          // every few seconds so CRDs installed meanwhile are picked up soon.
          if (this.synced) this.report(err);
          // Nothing served to catch up with: a leader must not wait on a kind whose CRD went.
          this.caughtUp(this.catchUps);
          await sleep(MISSING_KIND_RETRY_MS, undefined, { signal }).catch(() => {});
          continue;
        }
        this.report(err);
        const delay = backoffDelay(
          failures++,
          this.opts.backoffInitialMs ?? 100,
          this.opts.backoffMaxMs ?? 30_000,
        );
        this.backoff = new AbortController();
        await sleep(delay, undefined, { signal: AbortSignal.any([signal, this.backoff.signal]) }).catch(
          () => {},
        );
        this.backoff = undefined;
      }
    }
  }

  /** Resolves the catchUp calls a list begun at request `covers` answers. */
  private caughtUp(covers: number): void {
    this.listedFor = Math.max(this.listedFor, covers);
    for (const [seq, w] of this.catchUpWaiters) {
      if (seq > covers) continue;
      this.catchUpWaiters.delete(seq);
      w.resolve();
    }
  }

  // Lists everything and reconciles the store with it, emitting what changed
  // meanwhile: objects gone from the list are deleted (the gap's deletes are not lost).
  private async relist(signal: AbortSignal): Promise<void> {
    const { namespace, labelSelector, fieldSelector } = this.opts;
    const list = await this.client.listAll<T>(this.type, {
      namespace,
      labelSelector,
      fieldSelector,
      limit: this.opts.pageSize ?? 500,
      signal,
    });
    if (this.stats.lists++ > 0) this.stats.relists++;
    const fresh = new Map<string, T>();
    for (const item of list.items) fresh.set(objectKey(item), strip(item));
    for (const [key, old] of this.store) {
      if (!fresh.has(key)) this.remove(key, old);
    }
    for (const [key, obj] of fresh) {
      const old = this.store.get(key);
      if (old && old.metadata?.uid !== obj.metadata?.uid) {
        // Deleted and recreated under the same name during the gap.
        this.remove(key, old);
        this.upsert(key, obj, undefined);
      } else if (!old || old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) {
        this.upsert(key, obj, old);
      }
    }
    this.rv = list.metadata.resourceVersion;
    this.lastError = undefined;
    if (!this.synced) {
      this.synced = true;
      for (const w of this.waiters) w.resolve();
      this.waiters.clear();
    }
  }

  private async watchOnce(parent: AbortSignal): Promise<{ events: number; ms: number; fired: boolean }> {
    const ctl = new AbortController();
    this.watching = ctl;
    const onStop = () => ctl.abort(parent.reason);
    parent.addEventListener('abort', onStop, { once: true });
    const watchdogMs = this.opts.watchdogMs ?? 300_000;
    let timer: NodeJS.Timeout | undefined;
    let fired = false;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        // A stalled stream (half-open TCP, wedged proxy) would otherwise hang forever.
        this.stats.watchdogFires++;
        fired = true;
        ctl.abort(new Error('watchdog'));
      }, watchdogMs);
    };
    const started = performance.now();
    let events = 0;
    this.stats.watches++;
    arm();
    try {
      const stream = this.client.watch<T>(this.type, {
        namespace: this.opts.namespace,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        resourceVersion: this.rv,
        allowWatchBookmarks: true,
        timeoutSeconds: this.opts.timeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
        signal: ctl.signal,
      });
      for await (const ev of stream) {
        arm();
        events++;
        this.handle(ev);
      }
    } finally {
      this.watching = undefined;
      clearTimeout(timer);
      parent.removeEventListener('abort', onStop);
    }
    return { events, ms: performance.now() - started, fired };
  }

  private handle(ev: WatchEvent<T>): void {
    const obj = ev.object;
    if (ev.type === 'ERROR') {
      const status = obj as { code?: number; message?: string };
      throw statusError(status.code ?? 500, status, `${this.type.kind} watch ERROR event`);
    }
    const rv = obj?.metadata?.resourceVersion;
    if (rv) this.rv = rv;
    if (ev.type === 'BOOKMARK') return;
    const key = objectKey(obj);
    if (ev.type === 'DELETED') {
      this.remove(key, strip(obj));
    } else if (ev.type === 'ADDED' || ev.type === 'MODIFIED') {
      this.upsert(key, strip(obj), this.store.get(key));
    }
  }

  private upsert(key: string, obj: T, old: T | undefined): void {
    this.store.set(key, obj);
    this.reindex(key, obj);
    if (old) for (const h of this.updateHandlers) this.call(() => h(old, obj));
    else for (const h of this.addHandlers) this.call(() => h(obj));
  }

  private remove(key: string, last: T): void {
    this.store.delete(key);
    this.reindex(key, undefined);
    for (const h of this.deleteHandlers) this.call(() => h(last));
  }

  // Moves `key` between index buckets: touches only the values it had and has.
  private reindex(key: string, obj: T | undefined): void {
    for (const idx of this.indexes.values()) {
      const before = idx.byKey.get(key) ?? [];
      let after: string[] = [];
      if (obj) {
        try {
          after = [...new Set(idx.fn(obj))];
        } catch (err) {
          this.report(err);
        }
      }
      for (const v of before) {
        if (after.includes(v)) continue;
        const set = idx.values.get(v);
        set?.delete(key);
        if (set?.size === 0) idx.values.delete(v);
      }
      for (const v of after) {
        const set = idx.values.get(v);
        if (set) set.add(key);
        else idx.values.set(v, new Set([key]));
      }
      if (after.length > 0) idx.byKey.set(key, after);
      else idx.byKey.delete(key);
    }
  }

  private resync(): void {
    if (!this.synced) return;
    this.stats.resyncs++;
    for (const obj of this.store.values()) for (const h of this.updateHandlers) this.call(() => h(obj, obj));
  }

  private call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.report(err);
    }
  }

  /** Which informer this is, for logs: `Pod in ns [app=web]`. */
  describe(): string {
    const { namespace, labelSelector, fieldSelector } = this.opts;
    const selectors = [labelSelector, fieldSelector].filter(Boolean).join(',');
    return `${this.type.kind}${namespace ? ` in ${namespace}` : ''}${selectors ? ` [${selectors}]` : ''}`;
  }

  private report(err: unknown): void {
    try {
      this.opts.onError?.(err, this.describe());
    } catch {}
  }
}

// managedFields are often the bulk of an object and no controller here reads them.
function strip<T extends K8sObject>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}
