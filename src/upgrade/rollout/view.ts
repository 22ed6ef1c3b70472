// What every phase of the rollout planner reads: the observed state with its
// classification, the Joins and pairs read once, and the tallies the phases
// share. Pure; built once per round by planRollout.
import type { Action } from './actions.ts';
import {
  type Classification,
  classifyNodes,
  type GroupView,
  type ObservedNode,
  type ObservedState,
  type PendingView,
} from './classify.ts';

export interface Pair {
  donor: ObservedNode;
  heir: ObservedNode;
}

/**
 * What a Join PendingNode means this round: its node joined as a mint, joined and
 * annotated (done), missed its deadline, is still on its way toward this target, or is
 * on its way for an earlier target (no surge toward this one).
 */
export type JoinOutcome = 'mint' | 'joined' | 'expired' | 'inFlight' | 'earlierTarget';

export interface JoinView {
  pending: PendingView;
  /** The node that registered with the Join's instance, if one did. */
  node?: ObservedNode;
  outcome: JoinOutcome;
}

export interface RolloutView {
  state: ObservedState;
  c: Classification;
  nodes: ReadonlyMap<string, ObservedNode>;
  groups: ReadonlyMap<string, GroupView>;
  /** Join PendingNodes in name order. */
  joins: readonly JoinView[];
  /** Donor/heir pairs that hold: both annotations agree, the heir is on target and not given up. */
  pairs: readonly Pair[];
  /** Names of the nodes in `pairs`. */
  paired: ReadonlySet<string>;
  /** Names of the nodes classified heirs. */
  heirs: ReadonlySet<string>;
}

export const count = (m: ReadonlyMap<string, number>, k: string): number => m.get(k) ?? 0;
export const bump = (m: Map<string, number>, k: string, by = 1): void => {
  m.set(k, count(m, k) + by);
};
export const byName = <T extends { name: string }>(a: T, b: T): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

/** The observed node of that name (the planner only names nodes it observed). */
export function nodeOf(view: RolloutView, name: string): ObservedNode {
  return view.nodes.get(name)!;
}

export function rolloutView(state: ObservedState, c: Classification = classifyNodes(state)): RolloutView {
  const nodes = new Map(state.nodes.map((n) => [n.name, n]));
  const heirs = new Set(c.heirs);
  const pairs = validPairs(state, c.donors, heirs, nodes);
  const paired = new Set(pairs.flatMap((p) => [p.donor.name, p.heir.name]));
  return {
    state,
    c,
    nodes,
    groups: new Map(state.groups.map((g) => [g.id, g])),
    joins: joinViews(state, c),
    pairs,
    paired,
    heirs,
  };
}

function joinViews(state: ObservedState, c: Classification): JoinView[] {
  const byProvider = new Map(state.nodes.filter((n) => n.providerID).map((n) => [n.providerID!, n]));
  const mints = new Set(c.mints);
  const unannotated = new Set([...c.awaitingAnnotation, ...c.invalid]);
  const target = state.target.image.toLowerCase();
  const outcomeOf = (p: PendingView, node: ObservedNode | undefined): JoinOutcome => {
    if (node && mints.has(node.name)) return 'mint';
    if (node && !unannotated.has(node.name)) return 'joined';
    if (p.deadline <= state.now) return 'expired';
    return p.image === undefined || p.image.toLowerCase() === target ? 'inFlight' : 'earlierTarget';
  };
  return [...state.pending]
    .sort(byName)
    .filter((p) => p.goal === 'Join')
    .map((pending) => {
      const node = byProvider.get(pending.providerID);
      return { pending, ...(node ? { node } : {}), outcome: outcomeOf(pending, node) };
    });
}

/** The heir a donor names, when the two annotations agree and the heir is classified an heir. */
export function agreedHeir(
  donor: ObservedNode,
  heirs: ReadonlySet<string>,
  nodes: ReadonlyMap<string, ObservedNode>,
): ObservedNode | undefined {
  const heir = nodes.get(donor.annotations!.heir!);
  return heir && heirs.has(heir.name) && heir.annotations?.donor === donor.name ? heir : undefined;
}

/** Made (or asked for) at `t`, and nodeReadyTimeout not over: what is not Ready yet may still serve. */
export function withinReadyTimeout(t: number, state: ObservedState): boolean {
  const limit = state.nodeReadyTimeoutMs;
  return !limit || t + limit > state.now;
}

/** Per group: launches asked for and not listed yet, those older than nodeReadyTimeout given up. */
export function launchesComing(state: ObservedState): Map<string, number> {
  const out = new Map<string, number>();
  for (const [group, at] of state.requestedLaunches ?? [])
    bump(out, group, at.filter((t) => withinReadyTimeout(t, state)).length);
  return out;
}

/** Whether an heir has had its nodeReadyTimeout since pairing and is still not Ready. */
export function heirGaveUp(donor: ObservedNode, heir: ObservedNode, state: ObservedState): boolean {
  return !heir.ready && donor.pairedAt !== undefined && !withinReadyTimeout(donor.pairedAt, state);
}

function validPairs(
  state: ObservedState,
  donors: readonly string[],
  heirs: ReadonlySet<string>,
  nodes: ReadonlyMap<string, ObservedNode>,
): Pair[] {
  const out: Pair[] = [];
  for (const name of donors) {
    const donor = nodes.get(name)!;
    const heir = agreedHeir(donor, heirs, nodes);
    if (heir && !heirGaveUp(donor, heir, state)) out.push({ donor, heir });
  }
  return out;
}

/** Nodes the actions so far made obsolete: surplus, removed rather than replaced. */
export function surplusIn(planned: readonly Action[]): Set<string> {
  return new Set(planned.flatMap((a) => (a.type === 'markObsolete' ? [a.node] : [])));
}

/** Outdated nodes free to pair, not-Ready first: dissolved donors are back among them. */
export function freeToPair(view: RolloutView, planned: readonly Action[]): ObservedNode[] {
  const surplus = surplusIn(planned);
  const free = [...view.c.outdated, ...view.c.donors.filter((d) => !view.paired.has(d))]
    .filter((n) => !surplus.has(n))
    .map((n) => nodeOf(view, n));
  // WHY (beyond the anchor): replace not-Ready outdated nodes first; they already serve nothing.
  return free.sort((a, b) => Number(b.ready === false) - Number(a.ready === false) || byName(a, b));
}

/**
 * Control-plane nodes out: being drained now (a surplus one too: etcd quorum does not
 * care why) or by a drain planned so far this round.
 */
export function controlPlaneOut(view: RolloutView, planned: readonly Action[]): number {
  const isCP = (name: string) => view.nodes.get(name)?.role === 'ControlPlane';
  const obsolete = view.c.obsolete.filter((n) => isCP(n) && nodeOf(view, n).drain === 'Running').length;
  const donors = view.pairs.filter((p) => p.donor.drain && p.donor.role === 'ControlPlane').length;
  const drains = planned.filter((a) => a.type === 'drain' && isCP(a.node)).length;
  return obsolete + donors + drains;
}
