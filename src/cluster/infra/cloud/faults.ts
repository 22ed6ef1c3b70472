// Fault injection for the simulated cloud: the kit's API faults (failed,
// throttled and slow calls) plus the cloud's own, on the instances it
// launches (never joining, booting slowly). Pure functions over a Faults
// record; the randomness comes from the cloud's seeded generator.
import {
  API_FAULT_KEYS,
  type ApiFaults,
  type ApiFaultsPatch,
  checkFaultKeys,
  count,
  mergeApiFaults,
  noApiFaults,
  probability,
} from '../kit/faults.ts';

export { type ApiFault, takeApiFault } from '../kit/faults.ts';

export interface Faults extends ApiFaults {
  /** Chance (0..1) that a new instance never becomes Ready. */
  neverJoinProbability: number;
  /** Per group id: how many of its next instances never become Ready. */
  neverJoinNext: Record<string, number>;
  /** Extra boot delay added to every new instance. */
  slowBootMs: number;
}

export type FaultsPatch = Partial<Faults> & ApiFaultsPatch;

export function noFaults(): Faults {
  return { neverJoinProbability: 0, neverJoinNext: {}, slowBootMs: 0, ...noApiFaults() };
}

export function copyFaults(f: Faults): Faults {
  return { ...f, neverJoinNext: { ...f.neverJoinNext } };
}

/** Every fault the cloud knows, as `--set` and POST /faults name them. */
export const FAULT_KEYS: readonly (keyof Faults)[] = [
  'neverJoinNext',
  'neverJoinProbability',
  'slowBootMs',
  ...API_FAULT_KEYS,
];

/**
 * `f` with `patch` merged in; `neverJoinNext` counts add up per group.
 * Throws RangeError on bad values and unknown faults.
 */
export function mergeFaults(f: Faults, patch: FaultsPatch): Faults {
  checkFaultKeys(patch, FAULT_KEYS);
  const next = mergeApiFaults(copyFaults(f), patch);
  if (patch.neverJoinProbability !== undefined) {
    next.neverJoinProbability = probability(patch.neverJoinProbability, 'neverJoinProbability');
  }
  if (patch.slowBootMs !== undefined) next.slowBootMs = count(patch.slowBootMs, 'slowBootMs');
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
