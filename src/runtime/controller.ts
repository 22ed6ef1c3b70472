// A controller: a work queue of keys and a pool of workers that hand each key
// to the reconciler. The queue guarantees one reconcile per key at a time; the
// controller turns the reconciler's answer into the next step (forget,
// requeue after, backoff) and keeps the controller-runtime metrics.
import { TerminalError } from './errors.ts';
import { type Logger, rootLogger } from './log.ts';
import {
  activeWorkers,
  maxConcurrentReconciles,
  reconcileErrors,
  reconcileTime,
  reconcileTotal,
  terminalReconcileErrors,
  workqueueRetries,
} from './metrics.ts';
import { defaultControllerRateLimiter, type RateLimiter, WorkQueue } from './queue.ts';
import { parseRequestKey, type Reconcile, type Request, requestKey } from './reconcile.ts';

/**
 * A source that feeds the queue only while the controller runs (a timer, as
 * opposed to an informer, whose events wait in the queue): started by start(),
 * stopped by the function it returns when the controller stops.
 */
export type RunningSource = (enqueue: (req: Request) => void) => () => void;

export interface ControllerOptions {
  name: string;
  reconcile: Reconcile;
  /** Concurrent reconciles (different keys); default 1. */
  workers?: number;
  rateLimiter?: RateLimiter;
  log?: Logger;
}

export class Controller {
  readonly name: string;
  readonly workers: number;
  private readonly reconcile: Reconcile;
  private readonly queue: WorkQueue;
  private readonly log: Logger;
  private readonly stopCtl = new AbortController();
  private running: Promise<void>[] = [];
  private readonly runningSources: RunningSource[] = [];
  private stopSources: (() => void)[] = [];
  private inFlight = 0;

  constructor(opts: ControllerOptions) {
    this.name = opts.name;
    this.reconcile = opts.reconcile;
    this.workers = Math.max(1, opts.workers ?? 1);
    this.queue = new WorkQueue({
      name: opts.name,
      rateLimiter: opts.rateLimiter ?? defaultControllerRateLimiter(),
    });
    this.log = (opts.log ?? rootLogger).child({ controller: opts.name });
  }

  /** Enqueues a key; safe to call before start (keys wait in the queue). */
  enqueue(req: Request): void {
    this.queue.add(requestKey(req));
  }

  enqueueAfter(req: Request, ms: number): void {
    this.queue.addAfter(requestKey(req), ms);
  }

  /** Adds a source that runs while the controller does (started now if it already runs). */
  addRunningSource(source: RunningSource): void {
    this.runningSources.push(source);
    if (this.running.length > 0) this.stopSources.push(source((req) => this.enqueue(req)));
  }

  queueLength(): number {
    return this.queue.len();
  }

  /** Reconciles currently running. */
  active(): number {
    return this.inFlight;
  }

  start(): void {
    if (this.running.length > 0) return;
    maxConcurrentReconciles.set({ controller: this.name }, this.workers);
    // Zero-valued series from the start, as controller-runtime does, so rate() and alerts work
    // before the first error.
    reconcileErrors.inc({ controller: this.name }, 0);
    terminalReconcileErrors.inc({ controller: this.name }, 0);
    for (const result of ['success', 'error', 'requeue', 'requeue_after']) {
      reconcileTotal.inc({ controller: this.name, result }, 0);
    }
    workqueueRetries.inc({ name: this.name, controller: this.name }, 0);
    activeWorkers.set({ controller: this.name }, 0);
    this.log.info({ workers: this.workers }, 'starting workers');
    for (let i = 0; i < this.workers; i++) this.running.push(this.work());
    this.stopSources = this.runningSources.map((source) => source((req) => this.enqueue(req)));
  }

  /**
   * Stops taking keys, lets in-flight reconciles finish for up to graceMs, then
   * aborts their signal. Keys not processed are dropped: the next leader lists
   * everything again, which is what makes that safe.
   */
  async stop(graceMs = 30_000): Promise<void> {
    for (const stop of this.stopSources) stop();
    this.stopSources = [];
    this.queue.shutDown();
    const all = Promise.all(this.running);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(true), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.log.warn(
        { inFlight: this.inFlight, graceMs },
        'reconciles still running at shutdown; aborting them',
      );
      this.stopCtl.abort();
      await all;
    }
    this.running = [];
    this.log.info('workers stopped');
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      this.inFlight++;
      activeWorkers.inc({ controller: this.name });
      try {
        await this.process(key);
      } finally {
        this.inFlight--;
        activeWorkers.dec({ controller: this.name });
        this.queue.done(key);
      }
    }
  }

  private async process(key: string): Promise<void> {
    const req = parseRequestKey(key);
    const log = this.log.child(
      req.namespace ? { namespace: req.namespace, name: req.name } : { name: req.name },
    );
    const end = reconcileTime.startTimer({ controller: this.name });
    log.debug('reconciling');
    let result: 'success' | 'error' | 'requeue' | 'requeue_after' = 'success';
    try {
      const res = await this.reconcile(req, { controller: this.name, log, signal: this.stopCtl.signal });
      if (res?.requeueAfterMs !== undefined && res.requeueAfterMs > 0) {
        this.queue.forget(key);
        this.queue.addAfter(key, res.requeueAfterMs);
        result = 'requeue_after';
      } else if (res?.requeue) {
        this.queue.addRateLimited(key);
        result = 'requeue';
      } else {
        this.queue.forget(key);
      }
    } catch (err) {
      result = 'error';
      reconcileErrors.inc({ controller: this.name });
      if (err instanceof TerminalError) {
        terminalReconcileErrors.inc({ controller: this.name });
        this.queue.forget(key);
        log.error({ err }, 'reconcile failed for good; not retrying');
      } else {
        this.queue.addRateLimited(key);
        log.error({ err, retries: this.queue.numRequeues(key) }, 'reconcile failed; retrying with backoff');
      }
    } finally {
      const seconds = end();
      reconcileTotal.inc({ controller: this.name, result });
      log.debug({ result, ms: Math.round(seconds * 1000) }, 'reconciled');
    }
  }
}
