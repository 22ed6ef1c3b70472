// One informer per (type, namespace, selectors) shared by every controller in
// the process, with incrementally maintained indexes and client-side label
// selector matching for reads.
import type { KubeClient } from './client.ts';
import { type IndexFunc, Informer, type InformerOptions } from './informer.ts';
import { matchesLabelSelector, toLabelSelector } from './label-selector.ts';
import { type K8sObject, objectKey, Pods, type ResourceType } from './resources.ts';

export interface CacheInformerOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

/** Index of pods by spec.nodeName, registered on every Pods informer. */
export const POD_NODE_INDEX = 'spec.nodeName';

const typeKey = (t: ResourceType) => `${t.group}/${t.version}/${t.plural}`;

export class SharedCache {
  private readonly client: KubeClient;
  private readonly defaults: InformerOptions;
  private readonly informers = new Map<string, Informer>();
  private readonly byType = new Map<string, Informer[]>();
  private readonly indexDefs = new Map<string, Map<string, IndexFunc<K8sObject>>>();
  private started = false;

  /** `defaults` apply to every informer (watchdog, resync, backoff, onError); selectors come per informer. */
  constructor(client: KubeClient, defaults: Omit<InformerOptions, keyof CacheInformerOptions> = {}) {
    this.client = client;
    this.defaults = defaults;
    this.addIndex(Pods, POD_NODE_INDEX, (pod) => {
      const node = (pod.spec as { nodeName?: string } | undefined)?.nodeName;
      return node ? [node] : [];
    });
  }

  /** The shared informer for this type and selectors, created (and started, if the cache runs) on first use. */
  informer<T extends K8sObject = K8sObject>(
    type: ResourceType,
    opts: CacheInformerOptions = {},
  ): Informer<T> {
    const key = [
      typeKey(type),
      opts.namespace ?? '',
      opts.labelSelector ?? '',
      opts.fieldSelector ?? '',
    ].join('|');
    let inf = this.informers.get(key);
    if (!inf) {
      inf = new Informer(this.client, type, { ...this.defaults, ...opts });
      for (const [name, fn] of this.indexDefs.get(typeKey(type)) ?? []) inf.addIndex(name, fn);
      this.informers.set(key, inf);
      const list = this.byType.get(typeKey(type)) ?? [];
      list.push(inf);
      this.byType.set(typeKey(type), list);
      if (this.started) inf.start();
    }
    return inf as unknown as Informer<T>;
  }

  /** Registers an index on every current and future informer of `type`. */
  addIndex<T extends K8sObject = K8sObject>(type: ResourceType, name: string, fn: IndexFunc<T>): void {
    const defs = this.indexDefs.get(typeKey(type)) ?? new Map<string, IndexFunc<K8sObject>>();
    if (defs.has(name)) throw new Error(`index ${name} already registered for ${type.kind}`);
    defs.set(name, fn as IndexFunc<K8sObject>);
    this.indexDefs.set(typeKey(type), defs);
    for (const inf of this.byType.get(typeKey(type)) ?? []) inf.addIndex(name, fn as IndexFunc<K8sObject>);
  }

  byIndex<T extends K8sObject = K8sObject>(type: ResourceType, name: string, value: string): T[] {
    const infs = this.informersOf(type);
    const found = dedupe(infs.flatMap((i) => i.byIndex(name, value)));
    if (infs.length < 2) return found as T[];
    // An informer behind may index an object under a value its fresher copy left.
    const fn = this.indexDefs.get(typeKey(type))?.get(name);
    const out: K8sObject[] = [];
    for (const o of found) {
      const fresh = this.get(type, o.metadata?.name ?? '', o.metadata?.namespace) ?? o;
      if (fresh === o || !fn || fn(fresh).includes(value)) out.push(fresh);
    }
    return out as T[];
  }

  podsByNode<T extends K8sObject = K8sObject>(nodeName: string): T[] {
    return this.byIndex<T>(Pods, POD_NODE_INDEX, nodeName);
  }

  /** The freshest copy any informer holds (one behind after a refused watch must not answer for the others). */
  get<T extends K8sObject = K8sObject>(type: ResourceType, name: string, namespace?: string): T | undefined {
    let best: K8sObject | undefined;
    for (const inf of this.informersOf(type)) {
      if (inf.opts.namespace && inf.opts.namespace !== namespace) continue;
      const obj = inf.get(name, type.namespaced ? namespace : undefined);
      if (obj && (!best || newer(obj, best))) best = obj;
    }
    return best as T | undefined;
  }

  list<T extends K8sObject = K8sObject>(
    type: ResourceType,
    opts: { namespace?: string; labelSelector?: string } = {},
  ): T[] {
    const selector = toLabelSelector(opts.labelSelector ?? '');
    const infs = this.informersOf(type).filter(
      (i) => !opts.namespace || !i.opts.namespace || i.opts.namespace === opts.namespace,
    );
    const all = dedupe(infs.flatMap((i) => i.list()));
    return all.filter(
      (o) =>
        (!opts.namespace || o.metadata?.namespace === opts.namespace) &&
        matchesLabelSelector(selector, o.metadata?.labels ?? {}),
    ) as T[];
  }

  start(): void {
    this.started = true;
    for (const inf of this.informers.values()) inf.start();
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync(signal)));
  }

  hasSynced(): boolean {
    return [...this.informers.values()].every((i) => i.hasSynced());
  }

  /** The kinds not synced yet, as Kind (plural.group), and which of them the API server does not serve. */
  unsynced(): { waiting: string[]; missing: string[] } {
    const waiting = new Set<string>();
    const missing = new Set<string>();
    for (const inf of this.informers.values()) {
      if (inf.hasSynced()) continue;
      const t = inf.type;
      const name = `${t.kind} (${t.group ? `${t.plural}.${t.group}` : t.plural})`;
      (inf.isMissing() ? missing : waiting).add(name);
    }
    return { waiting: [...waiting].filter((n) => !missing.has(n)), missing: [...missing] };
  }

  /**
   * Resolves once every synced informer has listed afresh (see Informer.catchUp); one not synced
   * yet lists afresh anyway, and one whose kind is not served has nothing to catch up.
   */
  async catchUp(signal?: AbortSignal): Promise<void> {
    const synced = [...this.informers.values()].filter((i) => i.hasSynced());
    await Promise.all(synced.map((i) => i.catchUp(signal)));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  // Reading a type nobody informs on is a wiring bug; an empty answer would hide it.
  private informersOf(type: ResourceType): Informer[] {
    const infs = this.byType.get(typeKey(type));
    if (!infs?.length)
      throw new Error(`no informer for ${type.kind}: call cache.informer(${type.kind}) before reading`);
    return infs;
  }
}

// Overlapping informers (e.g. one cluster-wide, one per namespace) may hold the
// same object, one of them behind the other: the freshest copy answers.
function dedupe(objs: K8sObject[]): K8sObject[] {
  if (objs.length < 2) return objs;
  const seen = new Map<string, K8sObject>();
  for (const o of objs) {
    const had = seen.get(objectKey(o));
    if (!had || newer(o, had)) seen.set(objectKey(o), o);
  }
  return [...seen.values()];
}

/**
 * Whether `a` is a later version of the same object than `b`. resourceVersions
 * are opaque to clients, but every API server on etcd writes its revision, a
 * number; anything else is taken as no newer (the first informer's copy stays).
 */
function newer(a: K8sObject, b: K8sObject): boolean {
  const [ra, rb] = [a.metadata?.resourceVersion ?? '', b.metadata?.resourceVersion ?? ''];
  if (!/^\d+$/.test(ra) || !/^\d+$/.test(rb)) return false;
  return BigInt(ra) > BigInt(rb);
}
