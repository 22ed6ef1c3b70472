// Rollout budgets as Kubernetes users write them: a count (3) or a percentage
// ("25%") of the nodes, resolved the way a Deployment resolves its own
// (k8s.io/apimachinery intstr.GetScaledValueFromIntOrPercent, deployment
// util ResolveFenceposts): surge rounds up, unavailability rounds down. Pure.

/** A budget as written in a NodeVersion's strategy or on the command line. */
export type Budget = number | string;

const isZero = (b: Budget | undefined): boolean => b === 0 || b === '0%';

/** Whether a strategy asks for neither surge nor unavailability. */
export function bothZero(s: { maxSurge?: Budget; maxUnavailable?: Budget }): boolean {
  return isZero(s.maxSurge) && isZero(s.maxUnavailable);
}

/** A budget against `nodes`: a count as it is, a percentage rounded up (surge) or down (unavailable). */
export function resolveBudget(budget: Budget, nodes: number, round: 'up' | 'down'): number {
  if (typeof budget === 'number') return budget;
  const percent = Number(budget.replace(/%$/, ''));
  // WHY multiply first: 10% of 30 must be exactly 3 (0.1 * 30 is 3.0000000000000004, which rounds up to 4).
  const scaled = percent * nodes;
  return round === 'up' ? Math.ceil(scaled / 100) : Math.floor(scaled / 100);
}

/** Where the scaling groups stop: spec.rollout.maxSize where given, else spec.max; undefined: no bound. */
export interface GroupBound {
  groupId: string;
  maxSize?: number;
  max?: number;
}

/** How many nodes the groups can hold together; Infinity when one of them has no bound. */
export function surgeCapacity(groups: readonly GroupBound[]): number {
  let total = 0;
  for (const g of groups) {
    const bound = g.maxSize ?? g.max;
    if (bound === undefined) return Number.POSITIVE_INFINITY;
    total += bound;
  }
  return groups.length ? total : Number.POSITIVE_INFINITY;
}

/** One line naming each group's bound, for messages: "group-a max 10, group-b maxSize 4". */
export function describeBounds(groups: readonly GroupBound[]): string {
  return groups
    .map((g) => (g.maxSize !== undefined ? `${g.groupId} maxSize ${g.maxSize}` : `${g.groupId} max ${g.max}`))
    .join(', ');
}

/** A surge larger than the groups can hold, cut down to what they can. */
export interface SurgeClamp {
  /** The surge as written ("100000", "400%"). */
  asked: Budget;
  /** What it resolved to against the nodes. */
  resolved: number;
  /** What the groups can hold, and so the surge used. */
  capacity: number;
}

export interface ResolvedBudgets {
  maxSurge: number;
  maxUnavailable: number;
  /** Present when the surge was clamped to what the groups can hold. */
  clamp?: SurgeClamp;
}

/**
 * The strategy's budgets in nodes. `nodes` is what percentages are of (the
 * nodes the cluster is meant to have); `capacity` what the groups can hold.
 * A surge beyond the groups is clamped, never refused: the object keeps what
 * was asked (groups may grow), the controller says so in a Warning Event and
 * the CLI in a warning when it writes it.
 */
export function resolveBudgets(
  strategy: { maxSurge: Budget; maxUnavailable: Budget },
  nodes: number,
  capacity = Number.POSITIVE_INFINITY,
): ResolvedBudgets {
  let maxSurge = resolveBudget(strategy.maxSurge, nodes, 'up');
  let maxUnavailable = resolveBudget(strategy.maxUnavailable, nodes, 'down');
  let clamp: SurgeClamp | undefined;
  // Never below one: groups whose bounds add up to 0 must not stall the rollout for good.
  const room = Math.max(1, capacity);
  if (maxSurge > room) {
    clamp = { asked: strategy.maxSurge, resolved: maxSurge, capacity: room };
    maxSurge = room;
  }
  // As a Deployment: percentages that both come to 0 would replace nothing; allow one drain.
  if (maxSurge === 0 && maxUnavailable === 0 && !bothZero(strategy)) maxUnavailable = 1;
  return { maxSurge, maxUnavailable, ...(clamp ? { clamp } : {}) };
}

/** The one-line account of a clamp, for the Event and the CLI. */
export function clampMessage(clamp: SurgeClamp, groups: readonly GroupBound[]): string {
  const asked =
    typeof clamp.asked === 'string' ? `${clamp.asked} (${clamp.resolved} nodes)` : String(clamp.asked);
  return (
    `maxSurge ${asked} is more than the scaling groups can hold (${clamp.capacity}: ${describeBounds(groups)}); ` +
    `surging at most ${clamp.capacity} nodes at once`
  );
}
