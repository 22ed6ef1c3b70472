// Optimistic-concurrency retries: re-read and re-apply when the API server
// answers 409 Conflict because the object changed since we read it.
import { setTimeout as sleep } from 'node:timers/promises';
import { isConflict } from './errors.ts';

export interface RetryOptions {
  /** Total tries, the first included. */
  attempts?: number;
  /** Wait before the second try. */
  backoffMs?: number;
  /** Multiplier for each further wait. */
  factor?: number;
  /** Each wait grows by up to this fraction, at random, so racing writers spread out. */
  jitter?: number;
}

// client-go's retry.DefaultRetry: 5 steps from 10ms, factor 1, jitter 0.1.
const DEFAULT_RETRY: Required<RetryOptions> = { attempts: 5, backoffMs: 10, factor: 1, jitter: 0.1 };

/**
 * Runs fn, and again after a short wait each time it throws a conflict, up to
 * `attempts` times in all. fn must re-read the object itself. Any other error,
 * or the last conflict, is thrown as is.
 */
export async function retryOnConflict<T>(fn: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const { attempts, backoffMs, factor, jitter } = { ...DEFAULT_RETRY, ...opts };
  if (!(attempts >= 1)) throw new RangeError('attempts must be at least 1');
  let wait = backoffMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isConflict(err) || attempt >= attempts) throw err;
    }
    await sleep(wait + Math.random() * jitter * wait);
    wait *= factor;
  }
}
