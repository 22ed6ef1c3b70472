// Phase 1 of a rollout round: the nodes on their way in. A Join whose node is
// annotated and no longer a mint is done; one past its deadline is torn down and
// stops counting as surge, so exactly one replacement follows (anchor #2545/#2596
// over-provisioned here). A launch never recorded is recorded now.
import { type Action, deletionKey } from '../actions.ts';
import { onTarget, type UnrecordedLaunch } from '../classify.ts';
import type { JoinView, RolloutView } from '../view.ts';

export function settleJoins(view: RolloutView): Action[] {
  return view.joins.flatMap((j) => settleJoin(view, j));
}

function settleJoin(view: RolloutView, { pending: p, node, outcome }: JoinView): Action[] {
  if (outcome === 'joined' && node) {
    const done: Action = {
      type: 'deletePending',
      cause: 'joined',
      name: p.name,
      reason: `node ${node.name} has joined`,
    };
    // Created for a target that changed mid-rollout: surplus, not one more node to replace.
    const a = node.annotations;
    if (onTarget(node, view.state.target) || a?.heir || a?.donor || a?.obsolete) return [done];
    // WHY the mark first: the applier skips a mark whose node it finds changed since the cache
    // (this round annotated it, so it usually is) and ends the round. With the Join deleted
    // first, the next round saw a node made by no Join, off target: one more node to replace,
    // and the group grew by one for good (through Cluster API, 5 Machines of 4 after a retarget).
    return [
      {
        type: 'markObsolete',
        cause: 'joinedOffTarget',
        node: node.name,
        reason: 'joined on an image no longer targeted',
      },
      done,
    ];
  }
  if (outcome !== 'expired') return [];
  const nodeName = node?.name ?? p.nodeName;
  // Instance first: if deleting it fails, the PendingNode stays to try again.
  return [
    {
      type: 'deleteNode',
      cause: 'neverJoined',
      ...(nodeName ? { node: nodeName } : {}),
      providerID: p.providerID,
      reason: `instance never joined (pending node ${p.name} expired)`,
    },
    {
      type: 'deletePending',
      cause: 'joinExpired',
      name: p.name,
      reason: 'node did not join before its deadline',
      // WHY: with the instance still there, the PendingNode is all that counts it.
      requires: deletionKey(p.providerID),
    },
  ];
}

/**
 * Launched but never recorded (the operator stopped between the cloud call and the
 * PendingNode write): recorded now and counted as surge, or a second node would be made.
 */
export function adoptUnrecordedLaunches(view: RolloutView): Action[] {
  return unrecordedOfOurGroups(view).map((u) => ({
    type: 'adoptInstance',
    cause: 'unrecordedLaunch',
    group: u.groupId,
    providerID: u.providerID,
    nodeName: u.nodeName,
    createdAt: u.createdAt,
    reason: `instance ${u.nodeName} was launched but never recorded`,
  }));
}

/** Unrecorded launches into groups this NodeVersion governs, by node name. */
export function unrecordedOfOurGroups(view: RolloutView): UnrecordedLaunch[] {
  return [...(view.state.unrecorded ?? [])]
    .sort((a, b) => (a.nodeName < b.nodeName ? -1 : 1))
    .filter((u) => view.groups.has(u.groupId));
}
