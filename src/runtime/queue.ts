// A rate-limited work queue with the semantics of client-go's workqueue as
// controller-runtime drives it. @kubernetes/client-node ships informers but no
// work queue, so this is our own.
//
// Guarantees: a key waits in the queue at most once (adds are de-duplicated),
// and a key is never handed to two workers at once: adding a key that is being
// processed marks it dirty, and done() puts it back in the queue.
import {
  workqueueAdds,
  workqueueDepth,
  workqueueLongestRunning,
  workqueueQueueDuration,
  workqueueRetries,
  workqueueUnfinishedWork,
  workqueueWorkDuration,
} from './metrics.ts';

export interface RateLimiter {
  /** Milliseconds to wait before the key is retried; counts as one more failure for the key. */
  when(key: string): number;
  /** The key succeeded: reset its failure history. */
  forget(key: string): void;
  numRequeues(key: string): number;
}

/** Per-key backoff: baseMs * 2^failures, capped at maxMs. */
export function exponentialFailureRateLimiter(baseMs: number, maxMs: number): RateLimiter {
  // baseMs 0 would give 0 * Infinity = NaN once the exponent overflows.
  if (!(baseMs > 0) || !(maxMs >= baseMs)) throw new RangeError('need 0 < baseMs <= maxMs');
  const failures = new Map<string, number>();
  return {
    when(key) {
      const n = failures.get(key) ?? 0;
      failures.set(key, n + 1);
      return Math.min(baseMs * 2 ** n, maxMs);
    },
    forget(key) {
      failures.delete(key);
    },
    numRequeues(key) {
      return failures.get(key) ?? 0;
    },
  };
}

/**
 * One bucket for all keys: `burst` retries at once, then `qps` per second.
 * Every when() reserves a token, so the tokens may go negative and later
 * callers wait longer, as golang.org/x/time/rate's Reserve() does.
 */
export function tokenBucketRateLimiter(
  qps: number,
  burst: number,
  now: () => number = () => performance.now(),
): RateLimiter {
  if (!(qps > 0) || !(burst >= 1)) throw new RangeError('need qps > 0 and burst >= 1');
  let tokens = burst;
  let last = now();
  return {
    when() {
      const t = now();
      tokens = Math.min(burst, tokens + (Math.max(0, t - last) / 1000) * qps);
      last = t;
      tokens -= 1;
      // The epsilon keeps float noise (100.0000001) from adding a whole millisecond.
      return tokens >= 0 ? 0 : Math.ceil((-tokens / qps) * 1000 - 1e-6);
    },
    forget() {},
    numRequeues() {
      return 0;
    },
  };
}

/** The longest delay any of the limiters asks for; all of them record the failure. */
export function maxOfRateLimiters(...limiters: RateLimiter[]): RateLimiter {
  if (limiters.length === 0) throw new RangeError('maxOfRateLimiters needs at least one limiter');
  return {
    when: (key) => Math.max(...limiters.map((l) => l.when(key))),
    forget: (key) => {
      for (const l of limiters) l.forget(key);
    },
    numRequeues: (key) => Math.max(...limiters.map((l) => l.numRequeues(key))),
  };
}

/** controller-runtime's default: per-key 5ms..1000s backoff, and 10 qps / burst 100 overall. */
export function defaultControllerRateLimiter(now?: () => number): RateLimiter {
  return maxOfRateLimiters(exponentialFailureRateLimiter(5, 1_000_000), tokenBucketRateLimiter(10, 100, now));
}

export interface WorkQueueOptions {
  name: string;
  rateLimiter?: RateLimiter;
  /** Milliseconds clock for delays and metrics; monotonic by default so wall-clock jumps don't skew them. */
  now?: () => number;
}

// client-go refreshes the in-flight gauges on the same period.
const UNFINISHED_WORK_PERIOD_MS = 500;

export class WorkQueue {
  readonly name: string;
  readonly #rateLimiter: RateLimiter;
  readonly #now: () => number;

  // FIFO of keys ready to hand out; #head avoids O(n) Array.shift().
  #queue: string[] = [];
  #head = 0;
  /** Keys that need processing: everything in #queue plus keys re-added while processing. */
  readonly #dirty = new Set<string>();
  /** Keys handed to a worker, with the time get() returned them. */
  readonly #processing = new Map<string, number>();
  readonly #addedAt = new Map<string, number>();
  readonly #delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  #getters: Array<(key: string | undefined) => void> = [];
  #idle: Array<() => void> = [];
  #stopping = false;
  readonly #metricsTimer: NodeJS.Timeout;

  readonly #depth;
  readonly #adds;
  readonly #queueDuration;
  readonly #workDuration;
  readonly #retries;
  readonly #unfinished;
  readonly #longest;

  constructor(opts: WorkQueueOptions) {
    this.name = opts.name;
    this.#rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter(opts.now);
    this.#now = opts.now ?? (() => performance.now());
    const labels = { name: opts.name, controller: opts.name };
    this.#depth = workqueueDepth.labels(labels);
    this.#adds = workqueueAdds.labels(labels);
    this.#queueDuration = workqueueQueueDuration.labels(labels);
    this.#workDuration = workqueueWorkDuration.labels(labels);
    this.#retries = workqueueRetries.labels(labels);
    this.#unfinished = workqueueUnfinishedWork.labels(labels);
    this.#longest = workqueueLongestRunning.labels(labels);
    this.#depth.set(0);
    this.#metricsTimer = setInterval(() => this.#updateInFlight(), UNFINISHED_WORK_PERIOD_MS);
    this.#metricsTimer.unref();
  }

  add(key: string): void {
    if (this.#stopping || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    this.#adds.inc();
    if (!this.#addedAt.has(key)) this.#addedAt.set(key, this.#now());
    this.#depth.set(this.#dirty.size);
    // A worker holds it: done() will queue it again.
    if (this.#processing.has(key)) return;
    this.#enqueue(key);
  }

  /** Adds key after delayMs. Of several pending delays for one key, only the earliest is kept. */
  addAfter(key: string, delayMs: number): void {
    if (this.#stopping) return;
    // client-go counts every delayed add (RequeueAfter too) as a retry.
    this.#retries.inc();
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const at = this.#now() + delayMs;
    const pending = this.#delayed.get(key);
    if (pending !== undefined) {
      if (pending.at <= at) return;
      clearTimeout(pending.timer);
    }
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.#delayed.set(key, { at, timer });
  }

  addRateLimited(key: string): void {
    if (this.#stopping) return;
    this.addAfter(key, this.#rateLimiter.when(key));
  }

  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.#rateLimiter.numRequeues(key);
  }

  /**
   * The next key to process; waits if none is ready. Resolves undefined once
   * the queue is shutting down. Every key returned must be passed to done().
   */
  get(): Promise<string | undefined> {
    if (this.#stopping) return Promise.resolve(undefined);
    const key = this.#shift();
    if (key === undefined) return new Promise((resolve) => this.#getters.push(resolve));
    this.#start(key);
    return Promise.resolve(key);
  }

  /** The worker finished key; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    const started = this.#processing.get(key);
    if (started === undefined) return;
    this.#processing.delete(key);
    this.#workDuration.observe((this.#now() - started) / 1000);
    if (this.#dirty.has(key) && !this.#stopping) this.#enqueue(key);
    if (this.#processing.size === 0) {
      const idle = this.#idle;
      this.#idle = [];
      for (const resolve of idle) resolve();
    }
    this.#updateInFlight();
  }

  /** Keys waiting to be handed out (not counting ones in progress). */
  len(): number {
    return this.#queue.length - this.#head;
  }

  /** Resolves when no key is being processed. */
  drain(): Promise<void> {
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /**
   * Stops the queue: adds are ignored, queued and delayed keys are dropped, and
   * get() resolves undefined, waiting callers included. Unlike client-go, keys
   * still queued are not handed out: a stopping controller re-lists on its next
   * start, so they are not lost, and workers stop promptly.
   */
  shutDown(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    clearInterval(this.#metricsTimer);
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    this.#queue = [];
    this.#head = 0;
    this.#dirty.clear();
    this.#addedAt.clear();
    this.#depth.set(0);
    const getters = this.#getters;
    this.#getters = [];
    for (const resolve of getters) resolve(undefined);
  }

  /** shutDown(), then wait for keys in progress to be done(). */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    await this.drain();
  }

  shuttingDown(): boolean {
    return this.#stopping;
  }

  #enqueue(key: string): void {
    const getter = this.#getters.shift();
    if (getter === undefined) {
      this.#queue.push(key);
      return;
    }
    this.#start(key);
    getter(key);
  }

  #shift(): string | undefined {
    if (this.#head >= this.#queue.length) return undefined;
    const key = this.#queue[this.#head++];
    // Compact once the consumed prefix dominates, keeping shift amortised O(1).
    if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return key;
  }

  #start(key: string): void {
    const t = this.#now();
    this.#dirty.delete(key);
    this.#processing.set(key, t);
    const added = this.#addedAt.get(key);
    if (added !== undefined) this.#queueDuration.observe((t - added) / 1000);
    this.#addedAt.delete(key);
    this.#depth.set(this.#dirty.size);
    this.#updateInFlight();
  }

  #updateInFlight(): void {
    const t = this.#now();
    let total = 0;
    let longest = 0;
    for (const started of this.#processing.values()) {
      const secs = (t - started) / 1000;
      total += secs;
      if (secs > longest) longest = secs;
    }
    this.#unfinished.set(total);
    this.#longest.set(longest);
  }
}
