// The actions a rollout round plans: what the applier carries out, in order.
import type { ActionCauses, ActionType } from './causes.ts';

/**
 * Every action says why in `cause` (switched on by the applier); `reason` is for people.
 * `requires` names an earlier action of the round (its actionKey) that must have succeeded:
 * the applier skips this one otherwise, and the next round plans afresh.
 */
type Because<T extends ActionType> = { type: T; cause: ActionCauses[T]; reason: string; requires?: string };

export type Action =
  /**
   * Launch an instance into `group`. `outdated`: the group's outdated nodes this round's launches
   * and those already coming replace (as many as they need, not the whole group), which the
   * applier confirms with the API server first (a cache behind would over-launch).
   */
  | (Because<'createNode'> & { group: string; outdated: string[] })
  /** Write the Join PendingNode a lost createNode answer never got; its deadline runs from `createdAt`. */
  | (Because<'adoptInstance'> & { group: string; providerID: string; nodeName: string; createdAt: number })
  /** Annotate donor `heir=` and heir `donor=`, and copy `labels` onto the heir. */
  | (Because<'pair'> & { donor: string; heir: string; labels: Record<string, string> })
  /** Remove the donor/heir annotations from a node. */
  | (Because<'clearPairing'> & { node: string })
  /** Create a NodeMaintenance for the node. */
  | (Because<'drain'> & { node: string })
  /** Our NodeMaintenance for the node failed: record it, delete it, retry after a backoff. */
  | (Because<'drainFailed'> & { node: string })
  /** Delete our NodeMaintenance for the node (uncordons it). */
  | (Because<'cancelDrain'> & { node: string })
  /** Delete the Node object (when `node` is set) and the cloud instance. */
  | (Because<'deleteNode'> & { node?: string; providerID: string })
  | (Because<'deletePending'> & { name: string })
  /** Mark the node surplus; for an heir given up, `donor` is the node it was to replace. */
  | (Because<'markObsolete'> & { node: string; donor?: string });

/** What a later action's `requires` names: for now, the deletion of an instance. */
export function actionKey(a: Action): string | undefined {
  return a.type === 'deleteNode' ? deletionKey(a.providerID) : undefined;
}

/** The key of the deleteNode action for an instance. */
export function deletionKey(providerID: string): string {
  return `deleteNode:${providerID}`;
}
