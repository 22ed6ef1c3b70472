// One round of a rollout, decided before anything is done: what the NodeVersion
// controller read from its cache and the cloud, turned into every action of the
// round, whether the cluster autoscaler is paused or given back, what the rollout
// waits for, and the problems the cluster shows. Pure; the reconcile applies it.

import { Upgrade } from '../names.ts';
import type { Action } from './actions.ts';
import type { RolloutProblem } from './causes.ts';
import type { Classification, ObservedState } from './classify.ts';
import { type ClusterSnapshot, observeRollout } from './observe.ts';
import { planRollout } from './planner.ts';
import { rolloutActive } from './status.ts';

const A = Upgrade.annotations;

export interface RoundSnapshot extends ClusterSnapshot {
  /** Whether a cluster autoscaler still runs (its status says so): no new nodes while it may resize groups. */
  autoscalerRunning: boolean;
}

export interface RolloutRound {
  state: ObservedState;
  classification: Classification;
  /** Nodes still to be replaced or replacements in flight. */
  active: boolean;
  /** The planner's actions, then the cancelling of drains whose node is gone. */
  actions: Action[];
  /** How many of `actions` the planner made (tidying up after a stopped operator keeps no round going). */
  planned: number;
  /** The cluster autoscaler is paused while a rollout runs and given back once none does. */
  autoscalers: 'pause' | 'restore';
  /** Why nothing new starts, when something holds the rollout. */
  waitingFor: string[];
  /** Problems the cluster shows: drains waiting out a backoff, Joins given up. */
  problems: RolloutProblem[];
  /** Replacements finished since the rollout started (counted from the nodes, not remembered). */
  replaced: number;
}

export function planRound(snapshot: RoundSnapshot): RolloutRound {
  const { state: observed, classification } = observeRollout(snapshot);
  const active = rolloutActive(classification, observed);
  // WHY: the autoscaler would fight the rollout over group sizes; nothing is created until it stops.
  const state = active && snapshot.autoscalerRunning ? { ...observed, mayCreate: false } : observed;
  const planned = planRollout(state, classification);
  return {
    state,
    classification,
    active,
    actions: [...planned, ...cancelDrainsOfGoneNodes(snapshot)],
    planned: planned.length,
    autoscalers: active ? 'pause' : 'restore',
    waitingFor: active ? waitingFor(snapshot) : [],
    problems: [...backoffProblems(snapshot, state, classification), ...abandonedJoins(snapshot)],
    replaced: countReplaced(snapshot, state),
  };
}

/** What holds an active rollout: the cloud's instance list, the autoscaler, a group's launch image. */
function waitingFor(snapshot: RoundSnapshot): string[] {
  const image = snapshot.nodeVersion.spec.image;
  const out: string[] = [];
  if (!snapshot.instances) out.push("waiting for the cloud to list the groups' instances");
  if (snapshot.autoscalerRunning) out.push('waiting for the cluster autoscaler to stop');
  for (const g of snapshot.groups) {
    if (g.status?.imageReference?.toLowerCase() !== image.toLowerCase()) {
      out.push(`waiting for group ${g.spec.groupId} to launch ${image}`);
    }
  }
  return out;
}

/** Our maintenances of nodes that are gone (the operator stopped between the two deletes). */
function cancelDrainsOfGoneNodes(snapshot: ClusterSnapshot): Action[] {
  const names = new Set(snapshot.nodes.map((n) => n.metadata.name));
  return snapshot.maintenances
    .filter((m) => !names.has(m.spec.nodeName))
    .map((m) => ({
      type: 'cancelDrain',
      cause: 'nodeGone',
      node: m.spec.nodeName,
      reason: 'its node is gone',
    }));
}

/** Donors waiting out a drain backoff keep the rollout Degraded until they drain. */
function backoffProblems(
  snapshot: ClusterSnapshot,
  state: ObservedState,
  c: Classification,
): RolloutProblem[] {
  const observed = new Map(state.nodes.map((n) => [n.name, n]));
  const nodes = new Map(snapshot.nodes.map((n) => [n.metadata.name, n]));
  const out: RolloutProblem[] = [];
  for (const name of [...c.donors, ...c.obsolete]) {
    const retryAt = observed.get(name)?.drainRetryAt;
    if (retryAt === undefined || retryAt <= state.now) continue;
    const why = nodes.get(name)?.metadata.annotations?.[A.drainLastError];
    out.push({
      cause: 'drainBackoff',
      message: `drain of node ${name} failed${why ? `: ${why}` : ''}; retrying at ${new Date(retryAt).toISOString()}`,
    });
  }
  return out;
}

/** A Join the PendingNode controller gave up on is a Leave that still carries its target image. */
function abandonedJoins(snapshot: ClusterSnapshot): RolloutProblem[] {
  return snapshot.pending
    .filter((p) => p.spec.goal === 'Leave' && p.metadata?.annotations?.[A.targetImage])
    .map((p) => ({
      cause: 'joinAbandoned',
      message: `node ${p.spec.nodeName} never joined before its deadline; its instance is deleted and replaced`,
    }));
}

/**
 * Replacements finished since the rollout started: heirs made since then whose donor is
 * gone. Counted from the nodes each round, so a lost status write or a restart loses nothing.
 */
function countReplaced(snapshot: ClusterSnapshot, state: ObservedState): number {
  const s = snapshot.nodeVersion.status;
  const since = s?.startTime && !s.finishTime ? Date.parse(s.startTime) : snapshot.now;
  const ours = new Set(state.nodes.map((n) => n.name));
  return snapshot.nodes.filter((n) => {
    const ann = n.metadata.annotations ?? {};
    const created = Date.parse(n.metadata.creationTimestamp ?? '');
    return ours.has(n.metadata.name ?? '') && ann[A.replaces] && !ann[A.donor] && created >= since;
  }).length;
}
