// Why a rollout does something, and what went wrong, as values the code switches
// on. Events, metrics and the Degraded condition are chosen from these fields;
// the human-readable text beside them is for people only and may change freely.

/** Why the planner asks for an action; each action type has its own set. */
export interface ActionCauses {
  /** More outdated nodes in the group than replacements under way. */
  createNode: 'outdated';
  /** A booting instance of the target no PendingNode records (its createNode answer was lost). */
  adoptInstance: 'unrecordedLaunch';
  /** A new node joined and takes over from an outdated one of its group. */
  pair: 'mintJoined';
  /** The partner is gone or off target (`partnerGone`), or the donor was deleted (`donorDeleted`). */
  clearPairing: 'partnerGone' | 'donorDeleted';
  /** The donor's heir is Ready (`heirReady`), or the node is surplus (`obsolete`). */
  drain: 'heirReady' | 'obsolete';
  /** Our NodeMaintenance of the node failed. */
  drainFailed: 'drainFailed';
  /** The heir is gone or off target, it was given up, or the node itself is gone. */
  cancelDrain: 'heirLost' | 'heirGaveUp' | 'nodeGone';
  /** Its instance never joined, it was replaced by its heir, or it was surplus. */
  deleteNode: 'neverJoined' | 'replaced' | 'obsolete';
  /** The node joined, its join expired, or it was paired. */
  deletePending: 'joined' | 'joinExpired' | 'paired';
  /**
   * A surplus node: it joined on an image no longer targeted, it is an heir not Ready in
   * time or made for an earlier target, or a mint with no outdated node left to replace.
   */
  markObsolete: 'joinedOffTarget' | 'heirNotReady' | 'heirOffTarget' | 'noDonor';
}

export type ActionType = keyof ActionCauses;
export type ActionCause = ActionCauses[ActionType];

/** What went wrong in a round. */
export type ProblemCause =
  /** A NodeMaintenance we made failed (a PDB past drainTimeout, say). */
  | 'drainFailed'
  /** A node whose drain failed waits out its backoff before the next try. */
  | 'drainBackoff'
  /** A node the rollout made never joined before its deadline; we deleted its instance. */
  | 'neverJoined'
  /** The PendingNode controller gave up on a join (the same failure, noticed there first). */
  | 'joinAbandoned'
  /** The cloud could not tell a node's group or image. */
  | 'cloudError'
  /** Carrying out one of the planner's actions failed; `action` says which. */
  | 'actionFailed';

export interface RolloutProblem {
  cause: ProblemCause;
  /** For `actionFailed`: the action that failed. */
  action?: ActionType;
  /** For people (status.lastError, the Degraded message). */
  message: string;
}

/** The Degraded condition's reason for a problem. */
export function degradedReason(p: RolloutProblem): string {
  switch (p.cause) {
    case 'drainFailed':
    case 'drainBackoff':
      return 'DrainFailed';
    case 'neverJoined':
    case 'joinAbandoned':
      return 'NodeNeverJoined';
    case 'cloudError':
      return 'CloudError';
    case 'actionFailed':
      // Creating or removing a NodeMaintenance is part of draining.
      return p.action === 'drain' || p.action === 'drainFailed' ? 'DrainFailed' : 'RolloutProblem';
  }
}
