// Phases 5 and 7 of a rollout round: drains. Donors whose heir is Ready are
// drained within the unavailability budgets; obsolete nodes are drained, then
// deleted (anchor step 13). Never more than one control-plane node out at once,
// whatever the budgets say (etcd quorum).
import type { Action } from '../actions.ts';
import type { ObservedNode } from '../classify.ts';
import { bump, byName, controlPlaneOut, count, nodeOf, type Pair, type RolloutView } from '../view.ts';

/** Phase 5: drain donors whose heir is Ready, within the unavailability budgets. */
export function drainDonors(view: RolloutView, planned: readonly Action[]): Action[] {
  const { pairs } = view;
  const { strategy } = view.state;
  const draining = new Map<string, number>();
  for (const { donor } of pairs) if (donor.drain) bump(draining, donor.groupId!);
  let drainingTotal = pairs.filter((p) => p.donor.drain).length;
  let cpOut = controlPlaneOut(view, planned);
  // Surge-only (maxUnavailable 0): a donor is drained only once its heir is Ready, so its
  // drain takes no capacity away; heirs count toward the surge, which bounds the drains.
  const drainBudget = strategy.maxUnavailable > 0 ? strategy.maxUnavailable : strategy.maxSurge;
  const out: Action[] = [];
  for (const { donor, heir } of drainOrder(view)) {
    const g = donor.groupId!;
    const groupCap = view.groups.get(g)?.maxUnavailable ?? drainBudget;
    if (drainingTotal >= drainBudget || count(draining, g) >= groupCap) continue;
    if (donor.role === 'ControlPlane' && cpOut >= 1) continue;
    out.push({ type: 'drain', cause: 'heirReady', node: donor.name, reason: `heir ${heir.name} is Ready` });
    bump(draining, g);
    drainingTotal++;
    if (donor.role === 'ControlPlane') cpOut++;
  }
  return out;
}

/** Pairs ready to drain (heir Ready, no backoff), control plane first when the strategy says so. */
function drainOrder(view: RolloutView): Pair[] {
  const { strategy, now } = view.state;
  const isCP = (g: string | undefined) => g !== undefined && view.groups.get(g)?.role === 'ControlPlane';
  const order = (g: string | undefined): number => (strategy.controlPlaneFirst && isCP(g) ? 0 : 1);
  return view.pairs
    .filter((p) => !p.donor.drain && p.heir.ready && !((p.donor.drainRetryAt ?? 0) > now))
    .sort((a, b) => order(a.donor.groupId) - order(b.donor.groupId) || byGroup(a.donor, b.donor));
}

function byGroup(a: ObservedNode, b: ObservedNode): number {
  const ga = a.groupId ?? '';
  const gb = b.groupId ?? '';
  return ga < gb ? -1 : ga > gb ? 1 : byName(a, b);
}

/**
 * Phase 7: obsolete nodes are drained, then deleted. They are extra, so the surge and
 * unavailability budgets do not apply; the one-control-plane-node-out rule does.
 */
export function retireObsolete(view: RolloutView, planned: readonly Action[]): Action[] {
  let cpOut = controlPlaneOut(view, planned);
  const out: Action[] = [];
  for (const name of view.c.obsolete) {
    const n = nodeOf(view, name);
    if (!n.drain) {
      const waiting = (n.drainRetryAt ?? 0) > view.state.now || (n.role === 'ControlPlane' && cpOut >= 1);
      if (waiting) continue;
      out.push({ type: 'drain', cause: 'obsolete', node: name, reason: 'obsolete' });
      if (n.role === 'ControlPlane') cpOut++;
    } else if (n.drain === 'Failed') {
      out.push({ type: 'drainFailed', cause: 'drainFailed', node: name, reason: 'obsolete' });
    } else if (n.drain === 'Succeeded' && n.providerID) {
      out.push({
        type: 'deleteNode',
        cause: 'obsolete',
        node: name,
        providerID: n.providerID,
        reason: 'obsolete',
      });
    }
  }
  return out;
}
