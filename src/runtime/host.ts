// The two narrow views of the manager a capability gets, as controller-runtime
// hands a reconciler a client and a recorder, never the manager that runs it:
// - ControllerHost, for setup functions: wire controllers, ask the cache for
//   informers and indexes, make event recorders. The Manager implements it.
// - ReconcilerDeps, for reconcilers: a client, a cache to read, an event
//   recorder and a logger. Nothing to wire, start or stop.
import type { ControllerBuilder } from './builder.ts';
import type { SharedCache } from './cache.ts';
import type { KubeClient } from './client.ts';
import type { EventRecorder } from './events.ts';
import type { Logger } from './log.ts';

/** Reads from the shared informers (never the API server). */
export type CacheReader = Pick<SharedCache, 'get' | 'list' | 'byIndex' | 'podsByNode'>;

/** A cache reader that may also ask for informers and register indexes: what setup uses. */
export type CacheRegistrar = CacheReader & Pick<SharedCache, 'informer' | 'addIndex'>;

/** What a controller's setup function receives. */
export interface ControllerHost {
  readonly client: KubeClient;
  readonly cache: CacheRegistrar;
  readonly log: Logger;
  /** Starts wiring a controller: host.controller('name').for(Kind).owns(...).complete(reconcile). */
  controller(name: string): ControllerBuilder;
  /** Events from `component` (e.g. nodewarden.dev/maintenance), flushed when the manager stops. */
  eventRecorder(component: string): EventRecorder;
}

/**
 * What a reconciler is constructed with (its dependencies). Not to be confused with the
 * ReconcileContext each reconcile gets (the object's logger, the stop signal).
 */
export interface ReconcilerDeps {
  readonly client: KubeClient;
  readonly cache: CacheReader;
  readonly events: EventRecorder;
  readonly log: Logger;
}

/** A reconciler's context from the host, its events reported as `component`. */
export function reconcilerDeps(host: ControllerHost, component: string): ReconcilerDeps {
  return { client: host.client, cache: host.cache, events: host.eventRecorder(component), log: host.log };
}
