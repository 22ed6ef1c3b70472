// A command that waits on an object only the operator moves would otherwise
// wait in silence when no operator runs, which looks like a slow drain. When no
// status.observedGeneration shows up within a few seconds, say so once and say
// how to start one; the waiting goes on (an operator may be starting). An
// object changed by the command (a re-targeted NodeVersion) carries the
// status of an earlier generation: only its current generation counts.

/** How a new user starts the operator, in every message that misses it. */
export const START_OPERATOR =
  'start one with "make run" in a clone of nodewarden, "nodewarden operator", or "helm install nodewarden charts/nodewarden"';

/** Long enough for a running operator to pick a new object up, short enough that nobody wonders. */
export const OPERATOR_GRACE_MS = 5000;

export interface OperatorWatch {
  /** Each version of the object seen while waiting. */
  seen(
    obj: { metadata?: { generation?: number }; status?: { observedGeneration?: number } } | undefined,
  ): void;
  stop(): void;
}

/** Calls `say` once if nothing observes `what` within `afterMs`. */
export function expectOperator(
  what: string,
  say: (line: string) => void,
  afterMs = OPERATOR_GRACE_MS,
): OperatorWatch {
  const timer = setTimeout(
    () =>
      say(
        `no operator seems to be running: ${what} has no status after ${afterMs / 1000}s; ${START_OPERATOR} (still waiting)`,
      ),
    afterMs,
  );
  timer.unref(); // a command that fails while waiting exits without it
  return {
    seen(obj) {
      const observed = obj?.status?.observedGeneration;
      if (observed !== undefined && observed >= (obj?.metadata?.generation ?? 0)) clearTimeout(timer);
    },
    stop: () => clearTimeout(timer),
  };
}
