// The fluent wiring of a controller to the shared cache, as controller-runtime's
// builder: for(kind) enqueues the object itself, owns(kind) enqueues the owner
// named by an owned object's controller reference, watches(kind, map) enqueues
// whatever the map function says, every(interval, request) enqueues a fixed
// request on a timer while the controller runs. The reconciler sees none of this.
import type { SharedCache } from './cache.ts';
import { Controller, type RunningSource } from './controller.ts';
import type { Logger } from './log.ts';
import { type PeriodicOptions, periodicSource } from './periodic.ts';
import type { UpdatePredicate } from './predicates.ts';
import type { RateLimiter } from './queue.ts';
import type { Reconcile, Request } from './reconcile.ts';
import { apiVersionOf, type K8sObject, type ResourceType } from './resources.ts';

export interface WatchOptions {
  /** Update events pass only if every predicate says yes. Adds and deletes always pass. */
  predicates?: UpdatePredicate[];
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

type MapFn = (obj: K8sObject) => Request[];

/** What the builder needs from whoever runs controllers (the Manager). */
export interface ControllerRegistry {
  readonly cache: Pick<SharedCache, 'informer'>;
  readonly log: Logger;
  /** Runs the controller with the others (while we lead). */
  add(controller: Controller): void;
}

interface Source {
  type: ResourceType;
  map: MapFn;
  opts: WatchOptions;
}

export class ControllerBuilder {
  private readonly registry: ControllerRegistry;
  private readonly name: string;
  private forType: ResourceType | undefined;
  private readonly sources: Source[] = [];
  private readonly timers: RunningSource[] = [];
  private workers = 1;
  private rateLimiter: RateLimiter | undefined;

  constructor(registry: ControllerRegistry, name: string) {
    this.registry = registry;
    this.name = name;
  }

  /** The kind this controller reconciles: each of its objects is a request. */
  for(type: ResourceType, opts: WatchOptions = {}): this {
    if (this.forType) throw new Error(`controller ${this.name}: for() given twice`);
    this.forType = type;
    this.sources.push({ type, map: selfRequest, opts });
    return this;
  }

  /** Objects this controller creates: a change to one reconciles its controlling owner. */
  owns(type: ResourceType, opts: WatchOptions = {}): this {
    const owner = () => {
      if (!this.forType) throw new Error(`controller ${this.name}: call for() before owns()`);
      return this.forType;
    };
    this.sources.push({
      type,
      opts,
      map: (obj) => {
        const t = owner();
        const ref = obj.metadata?.ownerReferences?.find((r) => r.controller);
        if (!ref || ref.kind !== t.kind || ref.apiVersion !== apiVersionOf(t)) return [];
        return [{ name: ref.name, namespace: t.namespaced ? obj.metadata?.namespace : undefined }];
      },
    });
    return this;
  }

  /** Any other kind, mapped to the requests it should trigger (e.g. a Node → the maintenances naming it). */
  watches(type: ResourceType, map: MapFn, opts: WatchOptions = {}): this {
    this.sources.push({ type, map, opts });
    return this;
  }

  /**
   * Enqueues `request` when the controller starts and every `intervalMs` after,
   * as kopf's timers: for work due whether or not anything changed. The request
   * need not name an object; the reconciler decides what it means.
   */
  every(intervalMs: number, request: Request, opts: PeriodicOptions = {}): this {
    this.timers.push(periodicSource(intervalMs, request, opts));
    return this;
  }

  withWorkers(n: number): this {
    this.workers = n;
    return this;
  }

  withRateLimiter(limiter: RateLimiter): this {
    this.rateLimiter = limiter;
    return this;
  }

  /** Builds the controller, hooks its sources to the cache and registers it with the manager. */
  complete(reconcile: Reconcile): Controller {
    if (this.sources.length === 0 && this.timers.length === 0)
      throw new Error(`controller ${this.name}: nothing to reconcile; call for(), watches() or every()`);
    const controller = new Controller({
      name: this.name,
      reconcile,
      workers: this.workers,
      rateLimiter: this.rateLimiter,
      log: this.registry.log,
    });
    for (const source of this.sources) {
      const { predicates = [], ...selector } = source.opts;
      const informer = this.registry.cache.informer(source.type, selector);
      const enqueue = (obj: K8sObject) => {
        for (const req of source.map(obj)) controller.enqueue(req);
      };
      informer.onAdd(enqueue);
      informer.onUpdate((oldObj, newObj) => {
        if (predicates.every((p) => p(oldObj, newObj))) enqueue(newObj);
      });
      informer.onDelete(enqueue);
    }
    for (const timer of this.timers) controller.addRunningSource(timer);
    this.registry.add(controller);
    return controller;
  }
}

const selfRequest: MapFn = (obj) =>
  obj.metadata?.name ? [{ name: obj.metadata.name, namespace: obj.metadata.namespace }] : [];
