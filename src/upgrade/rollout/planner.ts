// planRollout: observed state → the actions a NodeVersion controller takes this round.
// Pure and deterministic; the controller observes, calls this, and applies the actions in order.
// Anchor: ../shared/reference/upgrades.md §2 (Constellation NodeVersion controller).

import type { ActionCauses, ActionType } from './causes.ts';
import {
  type Classification,
  classifyNodes,
  type GroupView,
  inheritedLabels,
  type ObservedNode,
  type ObservedState,
  onTarget,
  type PendingView,
} from './classify.ts';

/**
 * Every action says why in `cause` (switched on by the applier); `reason` is for people.
 * `requires` names an earlier action of the round (its actionKey) that must have succeeded:
 * the applier skips this one otherwise, and the next round plans afresh.
 */
type Because<T extends ActionType> = { type: T; cause: ActionCauses[T]; reason: string; requires?: string };

export type Action =
  | (Because<'createNode'> & { group: string })
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
  | (Because<'markObsolete'> & { node: string });

/** What a later action's `requires` names: for now, the deletion of an instance. */
export function actionKey(a: Action): string | undefined {
  return a.type === 'deleteNode' ? `deleteNode:${a.providerID}` : undefined;
}

interface Pair {
  donor: ObservedNode;
  heir: ObservedNode;
}

const count = (m: Map<string, number>, k: string): number => m.get(k) ?? 0;
const bump = (m: Map<string, number>, k: string, by = 1): void => {
  m.set(k, count(m, k) + by);
};
const byName = <T extends { name: string }>(a: T, b: T): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

export function planRollout(state: ObservedState): Action[] {
  const { strategy, now } = state;
  const c = classifyNodes(state);
  const nodes = new Map(state.nodes.map((n) => [n.name, n]));
  const get = (name: string): ObservedNode => nodes.get(name)!;
  const groups = new Map(state.groups.map((g) => [g.id, g]));
  const isCP = (groupId: string | undefined): boolean =>
    groupId !== undefined && groups.get(groupId)?.role === 'ControlPlane';
  const actions: Action[] = [];

  // 1. Joins. A Join whose node is annotated and no longer a mint is done; one past its
  //    deadline is torn down and stops counting as surge, so exactly one replacement
  //    follows (anchor #2545/#2596 over-provisioned here).
  const byProvider = new Map(state.nodes.filter((n) => n.providerID).map((n) => [n.providerID!, n]));
  const mintSet = new Set(c.mints);
  const unannotated = new Set([...c.awaitingAnnotation, ...c.invalid]);
  const creating = new Map<string, number>();
  const mintPending = new Map<string, PendingView>();
  const claimed = new Set<string>();
  /** New nodes of an earlier target: removed, not replaced (a re-target must not grow groups). */
  const surplus = new Set<string>();
  for (const p of [...state.pending].sort(byName)) {
    if (p.goal !== 'Join') continue;
    const node = byProvider.get(p.providerID);
    if (node) claimed.add(node.name);
    if (node && mintSet.has(node.name)) {
      mintPending.set(node.name, p);
    } else if (node && !unannotated.has(node.name)) {
      actions.push({
        type: 'deletePending',
        cause: 'joined',
        name: p.name,
        reason: `node ${node.name} has joined`,
      });
      // Created for a target that changed mid-rollout: surplus, not one more node to replace.
      const a = node.annotations;
      if (!onTarget(node, state.target) && !a?.heir && !a?.donor && !a?.obsolete) {
        surplus.add(node.name);
        actions.push({
          type: 'markObsolete',
          cause: 'joinedOffTarget',
          node: node.name,
          reason: 'joined on an image no longer targeted',
        });
      }
    } else if (p.deadline <= now) {
      const nodeName = node?.name ?? p.nodeName;
      // Instance first: if deleting it fails, the PendingNode stays to try again.
      actions.push({
        type: 'deleteNode',
        cause: 'neverJoined',
        ...(nodeName ? { node: nodeName } : {}),
        providerID: p.providerID,
        reason: `instance never joined (pending node ${p.name} expired)`,
      });
      actions.push({
        type: 'deletePending',
        cause: 'joinExpired',
        name: p.name,
        reason: 'node did not join before its deadline',
        // WHY: with the instance still there, the PendingNode is all that counts it.
        requires: `deleteNode:${p.providerID}`,
      });
    } else if (p.image === undefined || p.image.toLowerCase() === state.target.image.toLowerCase()) {
      bump(creating, p.groupId);
    }
  }

  // Launched but never recorded (the operator stopped between the cloud call and the
  // PendingNode write): recorded now and counted as surge, or a second node would be made.
  for (const u of [...(state.unrecorded ?? [])].sort((a, b) => (a.nodeName < b.nodeName ? -1 : 1))) {
    if (!groups.has(u.groupId)) continue;
    actions.push({
      type: 'adoptInstance',
      cause: 'unrecordedLaunch',
      group: u.groupId,
      providerID: u.providerID,
      nodeName: u.nodeName,
      createdAt: u.createdAt,
      reason: `instance ${u.nodeName} was launched but never recorded`,
    });
    bump(creating, u.groupId);
  }

  // 2. Pairs. A pair is valid only if both annotations agree and the heir runs the current
  //    target; otherwise it is dissolved (a changed image re-targets: the old heir is outdated now).
  const pairs: Pair[] = [];
  const paired = new Set<string>();
  const heirSet = new Set(c.heirs);
  for (const name of c.donors) {
    const donor = get(name);
    const heir = nodes.get(donor.annotations!.heir!);
    if (heir && heirSet.has(heir.name) && heir.annotations?.donor === name) {
      if (heirGaveUp(donor, heir, state)) {
        // Removed as surplus; the donor is free again and gets a new heir.
        surplus.add(heir.name);
        actions.push({
          type: 'markObsolete',
          cause: 'heirNotReady',
          node: heir.name,
          reason: `not Ready in time to replace ${name}`,
        });
        if (donor.drain)
          actions.push({
            type: 'cancelDrain',
            cause: 'heirGaveUp',
            node: name,
            reason: `heir ${heir.name} given up`,
          });
        continue;
      }
      pairs.push({ donor, heir });
      paired.add(donor.name).add(heir.name);
    } else {
      // WHY: deleting a donor without an up-to-date heir would shrink its group.
      if (donor.drain) {
        actions.push({
          type: 'cancelDrain',
          cause: 'heirLost',
          node: name,
          reason: 'its heir is gone or not on the target',
        });
      }
      // An heir made for an earlier target: the donor stays and is replaced afresh.
      if (
        heir &&
        heir.annotations?.donor === name &&
        !heir.annotations.obsolete &&
        !onTarget(heir, state.target)
      ) {
        surplus.add(heir.name);
        actions.push({
          type: 'markObsolete',
          cause: 'heirOffTarget',
          node: heir.name,
          reason: `made for an earlier target than ${state.target.image}`,
        });
      }
    }
  }
  for (const n of [...state.nodes].sort(byName)) {
    const a = n.annotations;
    if ((a?.donor || a?.heir) && !paired.has(n.name) && !a.obsolete && !surplus.has(n.name)) {
      actions.push({
        type: 'clearPairing',
        cause: 'partnerGone',
        node: n.name,
        reason: 'partner gone or not on the target',
      });
    }
  }

  // 3. Finish replacements whose drain succeeded (also while paused: they are in flight).
  //    A failed drain is recorded and retried later, never left to wedge the rollout.
  for (const { donor, heir } of pairs) {
    if (donor.drain === 'Failed') {
      actions.push({
        type: 'drainFailed',
        cause: 'drainFailed',
        node: donor.name,
        reason: `drain for heir ${heir.name} failed`,
      });
    }
    if (donor.drain !== 'Succeeded') continue;
    actions.push({
      type: 'deleteNode',
      cause: 'replaced',
      node: donor.name,
      providerID: donor.providerID!,
      reason: `replaced by ${heir.name}`,
    });
    actions.push({
      type: 'clearPairing',
      cause: 'donorDeleted',
      node: heir.name,
      reason: `donor ${donor.name} deleted`,
      // WHY: a donor left standing without its pair would be replaced a second time.
      requires: `deleteNode:${donor.providerID}`,
    });
  }

  // Outdated nodes free to pair: dissolved donors are back among them.
  const free = [...c.outdated, ...c.donors.filter((d) => !paired.has(d))]
    .filter((n) => !surplus.has(n))
    .map(get);
  // WHY (beyond the anchor): replace not-Ready outdated nodes first; they already serve nothing.
  free.sort((a, b) => Number(b.ready === false) - Number(a.ready === false) || byName(a, b));

  // 4. Pair each mint with an outdated node of its group (anchor step 9).
  const heirsByGroup = new Map<string, number>();
  for (const { heir } of pairs) bump(heirsByGroup, heir.groupId!);
  const mintsByGroup = new Map<string, number>();
  for (const m of c.mints) bump(mintsByGroup, get(m).groupId!);
  const taken = new Set<string>();
  for (const m of c.mints) {
    const mint = get(m);
    const donor = free.find((d) => d.groupId === mint.groupId && !taken.has(d.name));
    if (!donor) {
      actions.push({
        type: 'markObsolete',
        cause: 'noDonor',
        node: m,
        reason: `no outdated node in group ${mint.groupId}`,
      });
      continue;
    }
    // Paused still pairs: a mint is a replacement in flight, to be finished.
    taken.add(donor.name);
    actions.push({
      type: 'pair',
      cause: 'mintJoined',
      donor: donor.name,
      heir: m,
      labels: inheritedLabels(donor.labels),
      reason: `${m} replaces ${donor.name}`,
    });
    const p = mintPending.get(m);
    if (p) actions.push({ type: 'deletePending', cause: 'paired', name: p.name, reason: `node ${m} paired` });
  }

  // 5. Drain donors whose heir is Ready, within the unavailability budgets.
  const draining = new Map<string, number>();
  let drainingTotal = 0;
  let cpOut = 0;
  // A surplus control-plane node being drained is out too (etcd quorum does not care why).
  for (const name of c.obsolete)
    if (get(name).role === 'ControlPlane' && get(name).drain === 'Running') cpOut++;
  for (const { donor } of pairs) {
    if (!donor.drain) continue;
    bump(draining, donor.groupId!);
    drainingTotal++;
    if (donor.role === 'ControlPlane') cpOut++;
  }
  const order = (g: string | undefined): number => (strategy.controlPlaneFirst && isCP(g) ? 0 : 1);
  const toDrain = pairs
    .filter((p) => !p.donor.drain && p.heir.ready && !((p.donor.drainRetryAt ?? 0) > now))
    .sort((a, b) => order(a.donor.groupId) - order(b.donor.groupId) || cmpGroup(a.donor, b.donor));
  // Surge-only (maxUnavailable 0): a donor is drained only once its heir is Ready, so its
  // drain takes no capacity away; heirs count toward the surge, which bounds the drains.
  const drainBudget = strategy.maxUnavailable > 0 ? strategy.maxUnavailable : strategy.maxSurge;
  for (const { donor, heir } of toDrain) {
    const g = donor.groupId!;
    const groupCap = groups.get(g)?.maxUnavailable ?? drainBudget;
    if (drainingTotal >= drainBudget || count(draining, g) >= groupCap) continue;
    // Never more than one control-plane node out at once, whatever the budget says (etcd quorum).
    if (donor.role === 'ControlPlane' && cpOut >= 1) continue;
    actions.push({
      type: 'drain',
      cause: 'heirReady',
      node: donor.name,
      reason: `heir ${heir.name} is Ready`,
    });
    bump(draining, g);
    drainingTotal++;
    if (donor.role === 'ControlPlane') cpOut++;
  }

  // 6. Create nodes within the surge budgets (anchor step 12, budget from the strategy).
  if (!strategy.paused && state.mayCreate !== false)
    actions.push(...createNodes(state, c, { free, creating, mintsByGroup, heirsByGroup, claimed }));

  // 7. Obsolete nodes: drain, then delete (anchor step 13). They are extra, so the surge and
  //    unavailability budgets do not apply; the one-control-plane-node-out rule does.
  for (const name of c.obsolete) {
    const n = get(name);
    if (!n.drain) {
      const waiting = (n.drainRetryAt ?? 0) > now || (n.role === 'ControlPlane' && cpOut >= 1);
      if (!waiting) {
        actions.push({ type: 'drain', cause: 'obsolete', node: name, reason: 'obsolete' });
        if (n.role === 'ControlPlane') cpOut++;
      }
    } else if (n.drain === 'Failed')
      actions.push({ type: 'drainFailed', cause: 'drainFailed', node: name, reason: 'obsolete' });
    else if (n.drain === 'Succeeded' && n.providerID) {
      actions.push({
        type: 'deleteNode',
        cause: 'obsolete',
        node: name,
        providerID: n.providerID,
        reason: 'obsolete',
      });
    }
  }
  return actions;
}

/** Whether an heir has had its nodeReadyTimeout since pairing and is still not Ready. */
function heirGaveUp(donor: ObservedNode, heir: ObservedNode, state: ObservedState): boolean {
  const limit = state.heirReadyTimeoutMs;
  return !heir.ready && !!limit && donor.pairedAt !== undefined && donor.pairedAt + limit <= state.now;
}

function cmpGroup(a: ObservedNode, b: ObservedNode): number {
  const ga = a.groupId ?? '';
  const gb = b.groupId ?? '';
  return ga < gb ? -1 : ga > gb ? 1 : byName(a, b);
}

interface SurgeInputs {
  free: ObservedNode[];
  creating: Map<string, number>;
  mintsByGroup: Map<string, number>;
  heirsByGroup: Map<string, number>;
  /** Nodes matched to a Join PendingNode (already counted through it). */
  claimed: Set<string>;
}

function createNodes(state: ObservedState, c: Classification, s: SurgeInputs): Action[] {
  const { strategy } = state;
  const sorted = [...state.groups].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const cpFirst = (g: GroupView): number => (strategy.controlPlaneFirst && g.role === 'ControlPlane' ? 0 : 1);
  sorted.sort((a, b) => cpFirst(a) - cpFirst(b));

  // Surge = extra nodes that exist or are coming: being created + mints + heirs whose donor
  // still exists. WHY heirs too: like the anchor's budget, or pairs waiting on the drain
  // budget would let creation run ahead without bound.
  const surge = new Map<string, number>();
  for (const g of state.groups) {
    surge.set(g.id, count(s.creating, g.id) + count(s.mintsByGroup, g.id) + count(s.heirsByGroup, g.id));
  }
  // Unannotated strangers may belong to any group; like the anchor, they use overall budget.
  const strangers = c.awaitingAnnotation.filter((n) => !s.claimed.has(n)).length;
  let total = strangers + [...surge.values()].reduce((x, y) => x + y, 0);
  let cpSurge = state.groups
    .filter((g) => g.role === 'ControlPlane')
    .reduce((x, g) => x + count(surge, g.id), 0);

  // Kubelets must not be newer than the API server (anchor PR #3663): workers wait while
  // any control-plane node is outdated or still being replaced.
  const cpPending = state.nodes.some(
    (n) => n.role === 'ControlPlane' && (c.outdated.includes(n.name) || c.donors.includes(n.name)),
  );

  const size = new Map<string, number>();
  for (const n of state.nodes) if (n.groupId) bump(size, n.groupId);

  const out: Action[] = [];
  for (const g of sorted) {
    if (strategy.controlPlaneFirst && g.role !== 'ControlPlane' && cpPending) continue;
    if (g.image !== undefined && g.image.toLowerCase() !== state.target.image.toLowerCase()) continue;
    const outdated = s.free.filter((n) => n.groupId === g.id).length;
    const required = outdated - count(s.creating, g.id) - count(s.mintsByGroup, g.id);
    const room = Math.min(
      required,
      (g.maxSurge ?? strategy.maxSurge) - count(surge, g.id),
      strategy.maxSurge - total,
      g.max - count(size, g.id) - count(s.creating, g.id),
      // One control-plane replacement at a time: each one changes etcd membership.
      g.role === 'ControlPlane' ? 1 - cpSurge : Number.POSITIVE_INFINITY,
    );
    for (let i = 0; i < room; i++) {
      out.push({
        type: 'createNode',
        cause: 'outdated',
        group: g.id,
        reason: `${outdated} outdated node(s) in ${g.id}`,
      });
      bump(surge, g.id);
      total++;
      if (g.role === 'ControlPlane') cpSurge++;
    }
  }
  return out;
}
