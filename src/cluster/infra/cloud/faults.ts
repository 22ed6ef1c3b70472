// Fault injection for the simulated cloud: what the next instances and API
// calls should suffer. Pure functions over a Faults record; the randomness
// comes from the cloud's seeded generator so a run repeats exactly.

export interface Faults {
  /** Chance (0..1) that a new instance never becomes Ready. */
  neverJoinProbability: number;
  /** Per group id: how many of its next instances never become Ready. */
  neverJoinNext: Record<string, number>;
  /** Extra boot delay added to every new instance. */
  slowBootMs: number;
  /** The next N API calls fail with a retryable server error (503). */
  failNextCalls: number;
  /** The next N API calls are throttled (429). */
  throttleNextCalls: number;
  /** Chance (0..1) that any API call is throttled. */
  throttleProbability: number;
}

export type FaultsPatch = Partial<Faults>;

export type ApiFault = { status: 429 | 503; message: string };

export function noFaults(): Faults {
  return {
    neverJoinProbability: 0,
    neverJoinNext: {},
    slowBootMs: 0,
    failNextCalls: 0,
    throttleNextCalls: 0,
    throttleProbability: 0,
  };
}

export function copyFaults(f: Faults): Faults {
  return { ...f, neverJoinNext: { ...f.neverJoinNext } };
}

/** `f` with `patch` merged in; `neverJoinNext` counts add up per group. Throws RangeError on bad values. */
export function mergeFaults(f: Faults, patch: FaultsPatch): Faults {
  const prob = (v: unknown, what: string) => {
    if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new RangeError(`${what} must be 0..1`);
    return v;
  };
  const count = (v: unknown, what: string) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      throw new RangeError(`${what} must be a whole number >= 0`);
    }
    return v;
  };
  const next = copyFaults(f);
  if (patch.neverJoinProbability !== undefined) {
    next.neverJoinProbability = prob(patch.neverJoinProbability, 'neverJoinProbability');
  }
  if (patch.throttleProbability !== undefined) {
    next.throttleProbability = prob(patch.throttleProbability, 'throttleProbability');
  }
  if (patch.slowBootMs !== undefined) next.slowBootMs = count(patch.slowBootMs, 'slowBootMs');
  if (patch.failNextCalls !== undefined) next.failNextCalls = count(patch.failNextCalls, 'failNextCalls');
  if (patch.throttleNextCalls !== undefined) {
    next.throttleNextCalls = count(patch.throttleNextCalls, 'throttleNextCalls');
  }
  if (patch.neverJoinNext !== undefined) {
    if (typeof patch.neverJoinNext !== 'object' || patch.neverJoinNext === null) {
      throw new RangeError('neverJoinNext must map group ids to counts');
    }
    for (const [groupId, n] of Object.entries(patch.neverJoinNext)) {
      const total = (next.neverJoinNext[groupId] ?? 0) + count(n, `neverJoinNext.${groupId}`);
      if (total > 0) next.neverJoinNext[groupId] = total;
    }
  }
  return next;
}

/** Whether the group's next instance never joins; consumes one of its neverJoinNext. */
export function takeNeverJoin(f: Faults, groupId: string, random: () => number): boolean {
  const pending = f.neverJoinNext[groupId] ?? 0;
  if (pending > 0) {
    if (pending === 1) delete f.neverJoinNext[groupId];
    else f.neverJoinNext[groupId] = pending - 1;
    return true;
  }
  return f.neverJoinProbability > 0 && random() < f.neverJoinProbability;
}

/** The error the next API call should fail with, if any; consumes the counted faults in order. */
export function takeApiFault(f: Faults, random: () => number): ApiFault | undefined {
  if (f.throttleNextCalls > 0) {
    f.throttleNextCalls--;
    return { status: 429, message: 'rate exceeded (injected)' };
  }
  if (f.failNextCalls > 0) {
    f.failNextCalls--;
    return { status: 503, message: 'service unavailable (injected)' };
  }
  if (f.throttleProbability > 0 && random() < f.throttleProbability) {
    return { status: 429, message: 'rate exceeded (injected)' };
  }
  return undefined;
}
