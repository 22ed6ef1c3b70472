// The NodeVersion's status from one round's observation: the anchor's node
// lists, counts, progress per group, and the Outdated / Progressing / Degraded
// conditions. Pure, so what users see is tested without a cluster.
import type { NodeVersion, NodeVersionStatusType } from '../../api/upgrade.ts';
import { setCondition } from '../../runtime/conditions.ts';
import { blockReason, type DrainBlock, describeBlocks } from './blocked.ts';
import { degradedReason, type RolloutProblem } from './causes.ts';
import type { Classification, ObservedState } from './classify.ts';
import { launchesComing } from './view.ts';

export interface RoundOutcome {
  /** Problems met this round (failed drains, nodes that never joined, cloud errors). */
  problems: RolloutProblem[];
  /** Replacements finished since the rollout started (counted from the nodes, not remembered). */
  replaced: number;
  /** Why nothing new starts, when something holds the rollout (autoscaler, group image). */
  waitingFor?: string;
  /**
   * Drains held back right now: evictions refused (a PodDisruptionBudget), or the drain's
   * NodeMaintenance refused by admission (the quorum guard). The rollout waits on them.
   */
  blocked?: DrainBlock[];
}

/** Nodes still to be replaced or replacements in flight: the rollout is not over. */
export function rolloutActive(c: Classification, state: ObservedState): boolean {
  const joins = state.pending.filter((p) => p.goal === 'Join').length;
  return (
    c.outdated.length + c.donors.length + c.heirs.length + c.mints.length + c.obsolete.length + joins > 0
  );
}

export function nextStatus(
  nv: NodeVersion,
  c: Classification,
  state: ObservedState,
  outcome: RoundOutcome,
  now: Date,
): NodeVersionStatusType {
  const prev = nv.status ?? {};
  const active = rolloutActive(c, state);
  const status: NodeVersionStatusType = {
    ...nodeLists(c),
    counts: nodeCounts(c, state),
    groups: groupProgress(c, state),
    conditions: prev.conditions ?? [],
    observedGeneration: nv.metadata?.generation,
    ...rolloutTimes(prev, active, outcome, now),
  };
  if (outcome.problems.length)
    status.lastError = outcome.problems
      .map((p) => p.message)
      .join('; ')
      .slice(0, 4000);
  else if (active && prev.lastError) status.lastError = prev.lastError;
  status.conditions = rolloutConditions(nv, c, state, status, outcome, now);
  return status;
}

/** The anchor's node lists. */
function nodeLists(c: Classification) {
  return {
    upToDate: c.upToDate,
    outdated: c.outdated,
    donors: c.donors,
    heirs: c.heirs,
    mints: c.mints,
    pending: c.pending,
    obsolete: c.obsolete,
    invalid: c.invalid,
    awaitingAnnotation: c.awaitingAnnotation,
  };
}

function nodeCounts(c: Classification, state: ObservedState): NonNullable<NodeVersionStatusType['counts']> {
  return {
    total: state.nodes.length,
    upToDate: c.upToDate.length,
    outdated: c.outdated.length + c.donors.length,
    donors: c.donors.length,
    heirs: c.heirs.length,
    mints: c.mints.length,
    pending: c.pending.length,
    obsolete: c.obsolete.length,
    invalid: c.invalid.length,
    awaitingAnnotation: c.awaitingAnnotation.length,
  };
}

/** When the rollout started and finished, and what it has replaced. */
// Seconds, like creationTimestamp: nodes made in the rollout's first second count as its own.
const stampOf = (now: Date): string => now.toISOString().replace(/\.\d+Z$/, 'Z');

/**
 * The startTime of a rollout this round starts (work appears after a finished, or no,
 * rollout; its counters start afresh), else undefined. Recorded before the round acts:
 * a restarted operator knows the nodes made from then on as the rollout's own.
 */
export function rolloutStarting(
  prev: NodeVersion['status'] | undefined,
  active: boolean,
  now: Date,
): string | undefined {
  const starting = active && (!prev?.startTime || prev.finishTime !== undefined);
  return starting ? stampOf(now) : undefined;
}

function rolloutTimes(
  prev: NonNullable<NodeVersion['status']>,
  active: boolean,
  outcome: RoundOutcome,
  now: Date,
): Pick<NodeVersionStatusType, 'startTime' | 'finishTime' | 'replaced'> {
  const out: Pick<NodeVersionStatusType, 'startTime' | 'finishTime' | 'replaced'> = {};
  const starting = rolloutStarting(prev, active, now);
  const stamp = stampOf(now);
  if (starting) out.startTime = starting;
  else if (prev.startTime) out.startTime = prev.startTime;
  // Once finished, the count is the finished rollout's; later rounds have nothing to add.
  out.replaced = active || !prev.finishTime ? outcome.replaced : (prev.replaced ?? 0);
  if (!active && prev.startTime) out.finishTime = prev.finishTime ?? stamp;
  return out;
}

/** The Outdated, Progressing, DrainBlocked and Degraded conditions. */
function rolloutConditions(
  nv: NodeVersion,
  c: Classification,
  state: ObservedState,
  status: NodeVersionStatusType,
  outcome: RoundOutcome,
  now: Date,
): NonNullable<NodeVersionStatusType['conditions']> {
  const active = rolloutActive(c, state);
  const generation = nv.metadata?.generation;
  let conditions = status.conditions;
  const cond = (type: string, ok: boolean, reason: string, message: string) => {
    conditions = setCondition(
      conditions,
      { type, status: ok ? 'True' : 'False', reason, message, observedGeneration: generation },
      now,
    );
  };
  const outdated = status.counts!.outdated! + c.obsolete.length;
  cond(
    'Outdated',
    active,
    active ? 'NodeVersionsOutOfDate' : 'NodeVersionsUpToDate',
    active
      ? `${outdated} of ${state.nodes.length} nodes to replace, ${c.heirs.length + c.mints.length + countJoins(state)} replacements in flight`
      : `all ${state.nodes.length} nodes run ${nv.spec.image}`,
  );
  const paused = state.strategy.paused;
  cond(
    'Progressing',
    active && !paused,
    !active ? 'RolloutComplete' : paused ? 'RolloutPaused' : outcome.waitingFor ? 'Waiting' : 'RollingOut',
    !active
      ? `rollout to ${nv.spec.image} complete`
      : paused
        ? 'paused: replacements in flight finish, no new ones start'
        : (outcome.waitingFor ?? `replacing ${outdated} nodes`),
  );
  // A blocked eviction is not a failure yet (drainTimeout decides that), but it is why the
  // rollout does not move: said from the first refused eviction, not after drainTimeout. A
  // NodeMaintenance refused by admission is the same: a guard says "not now", and Degraded,
  // which says failures, says the rollout waits on DrainBlocked rather than contradicting it.
  const blocked = active ? (outcome.blocked ?? []) : [];
  cond(
    'DrainBlocked',
    blocked.length > 0,
    blocked.length ? blockReason(blocked) : 'NotBlocked',
    blocked.length ? describeBlocks(blocked) : 'no drain is blocked',
  );
  const degraded = active && outcome.problems.length > 0;
  // Degraded stays until the rollout ends or a round passes without problems after a retry.
  cond(
    'Degraded',
    degraded,
    // The first problem names the condition; all of them are in the message.
    degraded ? degradedReason(outcome.problems[0]!) : 'AsExpected',
    degraded
      ? status.lastError!
      : blocked.length
        ? 'no failures; a drain waits (see DrainBlocked)'
        : 'no problems',
  );
  return conditions ?? [];
}

/** Joins recorded, and launches asked for that the cloud lists no instance of yet. */
function countJoins(state: ObservedState): number {
  const launches = [...launchesComing(state).values()].reduce((a, b) => a + b, 0);
  return state.pending.filter((p) => p.goal === 'Join').length + launches;
}

function groupProgress(
  c: Classification,
  state: ObservedState,
): NonNullable<NodeVersionStatusType['groups']> {
  const classOf = new Map<string, keyof Classification>();
  for (const key of Object.keys(c) as (keyof Classification)[]) {
    if (key === 'pending') continue;
    for (const name of c[key]) classOf.set(name, key);
  }
  return [...state.groups]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((g) => {
      const nodes = state.nodes.filter((n) => n.groupId === g.id);
      const has = (k: keyof Classification) => nodes.filter((n) => classOf.get(n.name) === k).length;
      const joins = state.pending.filter((p) => p.groupId === g.id && p.goal === 'Join').length;
      return {
        groupId: g.id,
        role: g.role,
        total: nodes.length,
        upToDate: has('upToDate'),
        outdated: has('outdated') + has('donors'),
        replacing: has('heirs') + has('mints') + joins,
        draining: nodes.filter((n) => n.drain === 'Running' && classOf.get(n.name) === 'donors').length,
        ...(g.image ? { imageReference: g.image } : {}),
      };
    });
}
