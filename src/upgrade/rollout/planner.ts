// planRollout: observed state → the actions a NodeVersion controller takes this round.
// Pure and deterministic; the controller observes, calls this, and applies the actions in order.
// Anchor: ../shared/reference/upgrades.md §2 (Constellation NodeVersion controller).
//
// The planner is a fold over its phases, in the anchor's order: each phase reads the
// round's view and the actions planned before it, and adds its own.
import type { Action } from './actions.ts';
import type { Classification, ObservedState } from './classify.ts';
import { drainDonors, retireObsolete } from './phases/drains.ts';
import { adoptUnrecordedLaunches, settleJoins } from './phases/joins.ts';
import { clearStalePairings, dissolvePairs, finishReplacements, pairMints } from './phases/pairs.ts';
import { createReplacements } from './phases/surge.ts';
import { type RolloutView, rolloutView } from './view.ts';

/** One step of the plan: more actions, given the round and the actions planned so far. */
export type RolloutPhase = (view: RolloutView, planned: readonly Action[]) => Action[];

export const ROLLOUT_PHASES: readonly RolloutPhase[] = [
  settleJoins,
  adoptUnrecordedLaunches,
  dissolvePairs,
  clearStalePairings,
  finishReplacements,
  pairMints,
  drainDonors,
  createReplacements,
  retireObsolete,
];

/** The round's actions; `c` is the state's classification, when the caller has it already. */
export function planRollout(state: ObservedState, c?: Classification): Action[] {
  const view = rolloutView(state, c);
  return ROLLOUT_PHASES.reduce<Action[]>((planned, phase) => planned.concat(phase(view, planned)), []);
}
