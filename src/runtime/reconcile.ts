// What a reconciler sees: a key and a context, never a watch, a queue or a lock.
import type { Logger } from './log.ts';

/** The object to reconcile: its name, and its namespace when it is namespaced. */
export interface Request {
  name: string;
  namespace?: string;
}

/**
 * What a reconcile asks for next. Nothing (or {}) means done until something
 * changes; requeueAfterMs re-checks later (long work in short steps); throwing
 * retries with per-key exponential backoff; throwing TerminalError gives up.
 */
export interface Result {
  requeueAfterMs?: number;
  /** Requeue with backoff without counting an error (rarely needed). */
  requeue?: boolean;
}

export interface ReconcileContext {
  controller: string;
  /** A child logger carrying the controller and the object's keys. */
  log: Logger;
  /** Aborted when the controller must stop; long steps should give up and be retried. */
  signal: AbortSignal;
}

// biome-ignore lint/suspicious/noConfusingVoidType: a reconciler that returns nothing is done.
export type Reconcile = (req: Request, ctx: ReconcileContext) => Promise<Result | undefined | void>;

export const done = (): Result => ({});
export const requeueAfter = (ms: number): Result => ({ requeueAfterMs: ms });

export function requestKey(req: Request): string {
  return req.namespace ? `${req.namespace}/${req.name}` : req.name;
}

export function parseRequestKey(key: string): Request {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
