// Client-side request limiter, the same model as client-go's QPS/Burst: a
// token bucket refilled at `qps` tokens per second holding at most `burst`.
import { setTimeout as sleep } from 'node:timers/promises';

export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  // May go negative: each waiter reserves its token up front, so concurrent
  // callers are spaced 1/qps apart in arrival order instead of racing.
  private tokens: number;
  private last: number;

  constructor(qps: number, burst: number) {
    this.qps = qps;
    this.burst = Math.max(1, Math.floor(burst));
    this.tokens = this.burst;
    this.last = performance.now();
  }

  /** Resolves when the caller may send one request; rejects if `signal` aborts first. */
  async take(signal?: AbortSignal): Promise<void> {
    if (this.qps <= 0) return;
    signal?.throwIfAborted();
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    if (this.tokens >= 0) return;
    const waitMs = (-this.tokens / this.qps) * 1000;
    try {
      await sleep(waitMs, undefined, { signal });
    } catch (err) {
      // Give the reservation back so an aborted caller does not delay others.
      this.tokens += 1;
      throw err;
    }
  }
}

/** Exponential backoff with equal jitter: a delay in [cap/2, cap), cap = min(maxMs, baseMs * 2^attempt). */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number): number {
  const cap = Math.min(maxMs, baseMs * 2 ** attempt);
  return cap / 2 + (Math.random() * cap) / 2;
}
