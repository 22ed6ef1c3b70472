// Whether another NodeVersion's rollout keeps the cluster autoscaler paused,
// judged from what its status says. Outdated alone is not enough: a rollout
// that can never finish (its remaining nodes are ones nobody may replace, say
// control-plane Machines through Cluster API, or its groups are gone) stays
// Outdated for good, and counting it kept every autoscaler paused for good.
// Pure, so each case is a row of a table test.
import type { NodeVersion } from '../../api/upgrade.ts';
import { findCondition } from '../../runtime/conditions.ts';

/** Why a NodeVersion does or does not hold the autoscalers paused. */
export type AutoscalerHold =
  | 'finished'
  | 'deleting'
  | 'specNotYetSeen'
  | 'nodesToReplace'
  | 'replacementsInFlight'
  | 'nothingItCanDo';

/** What the NodeVersion's status says about the autoscaler; `holds` is the decision. */
export function autoscalerHold(nv: NodeVersion): { holds: boolean; why: AutoscalerHold } {
  // Its finalizer gives the autoscalers back; it starts no new node.
  if (nv.metadata?.deletionTimestamp) return { holds: false, why: 'deleting' };
  const s = nv.status;
  // A spec no round has looked at yet: its first round decides, so it holds until then.
  const generation = nv.metadata?.generation;
  if (generation !== undefined && s?.observedGeneration !== generation)
    return { holds: true, why: 'specNotYetSeen' };
  if (findCondition(s?.conditions, 'Outdated')?.status !== 'True') return { holds: false, why: 'finished' };
  const c = s?.counts;
  const inFlight =
    (c?.heirs ?? 0) + (c?.mints ?? 0) + (s?.groups ?? []).reduce((n, g) => n + g.replacing + g.draining, 0);
  if (inFlight > 0) return { holds: true, why: 'replacementsInFlight' };
  // Outdated nodes are only ever counted in a group the NodeVersion governs; invalid ones never are.
  if ((c?.outdated ?? 0) + (c?.obsolete ?? 0) > 0) return { holds: true, why: 'nodesToReplace' };
  return { holds: false, why: 'nothingItCanDo' };
}

/** Whether any NodeVersion but `self` holds the autoscalers paused. */
export function otherRolloutHoldsAutoscalers(nodeVersions: readonly NodeVersion[], self: string): boolean {
  return nodeVersions.some((nv) => nv.metadata?.name !== self && autoscalerHold(nv).holds);
}
