// Phase 6 of a rollout round: new nodes, within the surge budgets (anchor step
// 12, budget from the strategy). Not while paused, nor while something outside
// (the cluster autoscaler, an unlisted cloud) may still resize the groups.
import type { Action } from '../actions.ts';
import type { GroupView } from '../classify.ts';
import {
  bump,
  count,
  freeToPair,
  launchesComing,
  type RolloutView,
  surplusIn,
  withinReadyTimeout,
} from '../view.ts';
import { unrecordedOfOurGroups } from './joins.ts';

/** Extra nodes per group, and what the per-group room is computed from. */
interface Surge {
  /** Being created (Joins toward this target, launches adopted this round, launches asked for and not listed yet). */
  creating: Map<string, number>;
  mints: Map<string, number>;
  /** Extra nodes that exist or are coming, per group. */
  perGroup: Map<string, number>;
  /** Over all groups, with unannotated strangers. */
  total: number;
  controlPlane: number;
}

export function createReplacements(view: RolloutView, planned: readonly Action[]): Action[] {
  const { state } = view;
  if (state.strategy.paused || state.mayCreate === false) return [];
  const surge = surgeOf(view, planned);
  const free = freeToPair(view, planned);
  const size = new Map<string, number>();
  for (const n of state.nodes) if (n.groupId) bump(size, n.groupId);
  const out: Action[] = [];
  for (const g of groupsToGrow(view)) {
    const outdated = free.filter((n) => n.groupId === g.id).map((n) => n.name);
    const required = outdated.length - count(surge.creating, g.id) - count(surge.mints, g.id);
    const room = Math.min(
      required,
      (g.maxSurge ?? state.strategy.maxSurge) - count(surge.perGroup, g.id),
      state.strategy.maxSurge - surge.total,
      g.max - count(size, g.id) - count(surge.creating, g.id),
      // One control-plane replacement at a time: each one changes etcd membership.
      g.role === 'ControlPlane' ? 1 - surge.controlPlane : Number.POSITIVE_INFINITY,
    );
    // The nodes these launches and those already coming replace: the applier asks the API
    // server for each, so they are as many as the launches need, not the whole group.
    const replaced = outdated.slice(0, outdated.length - required + Math.max(room, 0));
    for (let i = 0; i < room; i++) {
      out.push({
        type: 'createNode',
        cause: 'outdated',
        group: g.id,
        outdated: replaced,
        reason: `${outdated.length} outdated node(s) in ${g.id}`,
      });
      bump(surge.perGroup, g.id);
      surge.total++;
      if (g.role === 'ControlPlane') surge.controlPlane++;
    }
  }
  return out;
}

/**
 * Surge = extra nodes that exist or are coming: being created + mints + heirs whose donor
 * still exists + surplus nodes not yet gone + nodes still coming for an earlier target.
 * WHY heirs too: like the anchor's budget, or pairs waiting on the drain budget would let
 * creation run ahead without bound. WHY surplus and earlier-target ones: after a retarget
 * they are Machines alive beside the group's size; left out, a retarget at surge 1 had 6
 * and 7 Machines of 4 alive at once through Cluster API.
 */
function surgeOf(view: RolloutView, planned: readonly Action[]): Surge {
  const { state, c } = view;
  const creating = new Map<string, number>();
  for (const j of view.joins) if (j.outcome === 'inFlight') bump(creating, j.pending.groupId);
  for (const u of unrecordedOfOurGroups(view)) bump(creating, u.groupId);
  for (const [group, n] of launchesComing(state)) bump(creating, group, n);
  const mints = new Map<string, number>();
  for (const m of c.mints) bump(mints, view.nodes.get(m)!.groupId!);
  const heirs = new Map<string, number>();
  for (const { heir } of view.pairs) bump(heirs, heir.groupId!);
  const leaving = surplusAndEarlier(view, planned);
  const perGroup = new Map<string, number>();
  for (const g of state.groups)
    perGroup.set(
      g.id,
      count(creating, g.id) + count(mints, g.id) + count(heirs, g.id) + count(leaving, g.id),
    );
  // Unannotated strangers may belong to any group; like the anchor, they use overall budget.
  const claimed = new Set(view.joins.flatMap((j) => (j.node ? [j.node.name] : [])));
  const strangers = c.awaitingAnnotation.filter((n) => !claimed.has(n)).length;
  return {
    creating,
    mints,
    perGroup,
    total: strangers + [...perGroup.values()].reduce((x, y) => x + y, 0),
    controlPlane: state.groups
      .filter((g) => g.role === 'ControlPlane')
      .reduce((x, g) => x + count(perGroup, g.id), 0),
  };
}

/**
 * Per group: surplus nodes still standing (obsolete, or marked so this round) that no
 * other tally counts, and Joins still on their way for an earlier target (their nodes
 * join surplus, or as mints if the group launched the new image meanwhile). A surplus
 * node not Ready and older than nodeReadyTimeout (an heir given up) is not counted: it
 * serves nothing, and waiting for its drain would hold the rollout on the very failure
 * its replacement is for. WHY a young one is: a node made for an earlier target joins
 * before its kubelet says Ready; left out, a retarget at surge 1 had 6 Machines of 4.
 */
function surplusAndEarlier(view: RolloutView, planned: readonly Action[]): Map<string, number> {
  const { c, state } = view;
  const counted = new Set([...c.mints, ...view.pairs.map((p) => p.heir.name)]);
  const out = new Map<string, number>();
  for (const name of new Set([...c.obsolete, ...surplusIn(planned)])) {
    const n = view.nodes.get(name);
    const young = withinReadyTimeout(n?.createdAt ?? Number.NEGATIVE_INFINITY, state);
    if (n?.groupId && (n.ready || young) && !counted.has(name)) bump(out, n.groupId);
  }
  for (const j of view.joins) if (j.outcome === 'earlierTarget') bump(out, j.pending.groupId);
  return out;
}

/**
 * Groups that may grow this round, control plane first when the strategy says so. Kubelets
 * must not be newer than the API server (anchor PR #3663): workers wait while any
 * control-plane node is outdated or still being replaced. A group not yet launching the
 * target image grows later.
 */
function groupsToGrow(view: RolloutView): GroupView[] {
  const { state, c } = view;
  const { strategy } = state;
  const cpFirst = (g: GroupView): number => (strategy.controlPlaneFirst && g.role === 'ControlPlane' ? 0 : 1);
  const cpPending = state.nodes.some(
    (n) => n.role === 'ControlPlane' && (c.outdated.includes(n.name) || c.donors.includes(n.name)),
  );
  const target = state.target.image.toLowerCase();
  return [...state.groups]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .sort((a, b) => cpFirst(a) - cpFirst(b))
    .filter((g) => !(strategy.controlPlaneFirst && g.role !== 'ControlPlane' && cpPending))
    .filter((g) => g.image === undefined || g.image.toLowerCase() === target);
}
