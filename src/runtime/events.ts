// Kubernetes Events (events.k8s.io/v1) for `kubectl describe` and `kubectl
// events`. Repeats of the same event on the same object within a few minutes
// become one Event with a growing series (as client-go's event broadcaster
// does), so a retry loop cannot flood etcd. Writes are queued and never make a
// reconcile wait or fail.
import { randomBytes } from 'node:crypto';
import type { KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';
import { microTime } from './leader.ts';
import { type Logger, rootLogger } from './log.ts';
import { Events, type K8sObject } from './resources.ts';

export type EventType = 'Normal' | 'Warning';

/** client-go merges repeats seen within this window into one series. */
const SERIES_WINDOW_MS = 6 * 60 * 1000;
const MAX_PENDING = 1000;

interface SeriesEntry {
  name: string;
  namespace: string;
  count: number;
  lastSeen: number;
}

export interface EventRecorderOptions {
  /** events.k8s.io reportingController, e.g. 'nodewarden.dev/maintenance'. */
  controller: string;
  /** reportingInstance: this process (pod name). */
  instance: string;
  log?: Logger;
}

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly opts: EventRecorderOptions;
  private readonly log: Logger;
  private readonly series = new Map<string, SeriesEntry>();
  private pending: Promise<void> = Promise.resolve();
  private queued = 0;

  constructor(client: KubeClient, opts: EventRecorderOptions) {
    this.client = client;
    this.opts = opts;
    this.log = (opts.log ?? rootLogger).child({ component: 'events', controller: opts.controller });
  }

  /** Records an event about `regarding`. reason is CamelCase (BeginMaintenance); action is what we did (Cordon). */
  event(regarding: K8sObject, type: EventType, reason: string, action: string, note: string): void {
    if (this.queued >= MAX_PENDING) {
      this.log.warn({ reason }, 'event dropped: too many events pending');
      return;
    }
    this.queued++;
    this.pending = this.pending
      .then(() => this.write(regarding, type, reason, action, note))
      .catch((err: unknown) => this.log.warn({ err, reason }, 'could not record event'))
      .finally(() => {
        this.queued--;
      });
  }

  normal(regarding: K8sObject, reason: string, action: string, note: string): void {
    this.event(regarding, 'Normal', reason, action, note);
  }

  warning(regarding: K8sObject, reason: string, action: string, note: string): void {
    this.event(regarding, 'Warning', reason, action, note);
  }

  /** Resolves when every event recorded so far has been written (for shutdown and tests). */
  flush(): Promise<void> {
    return this.pending;
  }

  private async write(regarding: K8sObject, type: EventType, reason: string, action: string, note: string) {
    const meta = regarding.metadata ?? {};
    // Events about cluster-scoped objects live in 'default', as client-go puts them.
    const namespace = meta.namespace ?? 'default';
    const key = [meta.uid ?? meta.name, type, reason, action, note].join('\u0000');
    const now = Date.now();
    this.prune(now);
    const seen = this.series.get(key);
    if (seen && now - seen.lastSeen < SERIES_WINDOW_MS) {
      seen.count++;
      seen.lastSeen = now;
      try {
        await this.client.patch(
          Events,
          seen.name,
          seen.namespace,
          { series: { count: seen.count, lastObservedTime: microTime(new Date(now)) } },
          { type: 'merge' },
        );
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // the Event expired (TTL); start a new one below
      }
    }
    const name = `${meta.name ?? 'unknown'}.${randomBytes(8).toString('hex')}`;
    await this.client.create(Events, {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name, namespace },
      eventTime: microTime(new Date(now)),
      type,
      reason,
      action,
      note: note.length > 1024 ? `${note.slice(0, 1021)}...` : note,
      reportingController: this.opts.controller,
      reportingInstance: this.opts.instance,
      regarding: {
        apiVersion: regarding.apiVersion,
        kind: regarding.kind,
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      },
    });
    this.series.set(key, { name, namespace, count: 1, lastSeen: now });
  }

  private prune(now: number): void {
    if (this.series.size < 4096) return;
    for (const [k, v] of this.series) if (now - v.lastSeen >= SERIES_WINDOW_MS) this.series.delete(k);
  }
}
