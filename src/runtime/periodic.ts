// A timer as a controller source, as kopf's @timer: work that is due every so
// often whether or not anything in the cluster changed (asking a cloud which
// scaling groups exist, say). It runs only while its controller runs, so only
// on the leader, and stops with it.
import type { RunningSource } from './controller.ts';
import type { Request } from './reconcile.ts';

export interface PeriodicOptions {
  /** Wait before the first request; default 0: the first round runs as soon as the controller starts. */
  initialDelayMs?: number;
}

/**
 * Enqueues `request` when the controller starts (after `initialDelayMs`) and
 * every `intervalMs` after that. The queue keeps one entry per key, so a tick
 * while the last round still runs, or is still queued, adds no second round.
 */
export function periodicSource(
  intervalMs: number,
  request: Request,
  opts: PeriodicOptions = {},
): RunningSource {
  if (!(intervalMs > 0)) throw new Error(`periodic source: interval must be positive, got ${intervalMs}`);
  const req = { ...request };
  return (enqueue) => {
    let interval: NodeJS.Timeout | undefined;
    const tick = () => enqueue({ ...req });
    const begin = () => {
      tick();
      interval = setInterval(tick, intervalMs);
    };
    const delay = opts.initialDelayMs ?? 0;
    const first = delay > 0 ? setTimeout(begin, delay) : undefined;
    if (!first) begin();
    return () => {
      clearTimeout(first);
      clearInterval(interval);
    };
  };
}
