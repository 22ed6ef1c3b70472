// The drain library, and the one step a maintenance controller runs per
// reconcile. A step never waits for pods to disappear: it plans from the pods
// it is given (the cache), fires the evictions that are due, records what the
// API server said, and tells the caller when to look again.
import { type EvictClient, evictPods } from './evict.ts';
import { type DrainOptions, drainPolicy } from './filters.ts';
import { blockedMessages, type DrainPlan, drainablePods, planDrain } from './plan.ts';
import { type BlockedPod, type Pod, type PodRef, podRef } from './pod.ts';
import { blockedPod, type DrainTracker } from './tracker.ts';

export * from './cordon.ts';
export * from './evict.ts';
export * from './filters.ts';
export { evictionsTotal } from './metrics.ts';
export * from './plan.ts';
export * from './pod.ts';
export * from './selector.ts';
export * from './tracker.ts';

export interface DrainStepOptions extends DrainOptions {
  /** Evictions in flight at once (default 32). */
  concurrency?: number;
  /**
   * Eviction-set size recorded when the drain began (status.evictionPods). Seeds a fresh
   * tracker after a restart, so progress keeps counting against the original set.
   */
  evictionPods?: number;
}

export interface EvictionError extends PodRef {
  message: string;
}

export interface DrainStepResult {
  /** Nothing left to evict or wait for, and nothing blocked by policy. */
  done: boolean;
  plan: DrainPlan;
  /** Pods that still have to leave the node (to evict, evicted but not gone, terminating). */
  pending: PodRef[];
  /** Pods a PodDisruptionBudget refused to let go, with its name when the server gave it. */
  blocked: BlockedPod[];
  /** Pods of `blocked` refused for the first time in a row during this step (one event each). */
  newlyBlocked: BlockedPod[];
  /**
   * Why the options forbid the drain (e.g. DaemonSet pods with ignoreDaemonSets=false), one
   * kubectl-style line per reason: "cannot delete DaemonSet-managed Pods (use ignoreDaemonSets): ns/a".
   * While any is present nothing is evicted.
   */
  policyBlocked: string[];
  /** The same pods one by one, shaped for status.blockedPods (message = the reason). */
  policyBlockedPods: BlockedPod[];
  /** Pods whose last eviction failed outright (e.g. 500: several PDBs match the pod). */
  errors: EvictionError[];
  /** Evictions the API server accepted during this step. */
  evictedNow: number;
  /** Size of the eviction set at the start (the tracker remembers it from the first step). */
  evictionPods: number;
  drainProgress: number;
  /** When to reconcile again: the soonest retry, 1000 while pods terminate; 0 when done. */
  nextCheckMs: number;
}

// While pods terminate, look every second (kubectl's waitForDelete polls at 1 s).
const TERMINATING_POLL_MS = 1000;
// A policy block lifts only when someone changes the spec or removes the pod; the
// anchor retries a failed drain every 5 s.
const POLICY_BLOCKED_POLL_MS = 5000;

export async function drainStep(
  client: EvictClient,
  tracker: DrainTracker,
  podsOnNode: readonly Pod[],
  opts: DrainStepOptions = {},
  now = Date.now(),
): Promise<DrainStepResult> {
  const policy = drainPolicy(opts);
  const plan = planDrain(podsOnNode, policy);
  tracker.prune(podsOnNode);
  tracker.evictionPods ??= opts.evictionPods ?? drainablePods(plan).length;

  // As kubectl, a pod the options forbid evicting stops the whole drain before it starts:
  // no half-drained node the user did not ask for. Evictions already sent still complete.
  const due = plan.blocked.length > 0 ? [] : plan.evict.filter((p) => tracker.due(p, now));
  const outcomes = await evictPods(
    client,
    due,
    { gracePeriodSeconds: policy.gracePeriodSeconds },
    opts.concurrency,
  );
  let evictedNow = 0;
  const refusedBefore = new Set<Pod>();
  for (const [pod, outcome] of outcomes) {
    if (tracker.lastRefusal(pod)?.result === 'blocked') refusedBefore.add(pod);
    tracker.record(pod, outcome, now);
    if (outcome.result === 'evicted') evictedNow++;
  }

  const { pending, blocked, drainProgress } = tracker.progress(tracker.evictionPods, plan);
  // Errors stay reported until the pod's next attempt, like PDB refusals, so status does not flicker.
  const errors: EvictionError[] = [];
  for (const pod of plan.evict) {
    const last = tracker.lastRefusal(pod);
    if (last?.result === 'error') errors.push({ ...podRef(pod), message: last.message });
  }
  const newlyBlocked: BlockedPod[] = [];
  for (const [pod, outcome] of outcomes)
    if (outcome.result === 'blocked' && !refusedBefore.has(pod)) newlyBlocked.push(blockedPod(pod, outcome));
  const done = pending.length === 0 && plan.blocked.length === 0;
  return {
    done,
    plan,
    pending,
    blocked,
    newlyBlocked,
    policyBlocked: blockedMessages(plan.blocked),
    policyBlockedPods: plan.blocked.map(({ pod, reason }) => ({ ...podRef(pod), message: reason })),
    errors,
    evictedNow,
    evictionPods: tracker.evictionPods,
    drainProgress,
    nextCheckMs: done ? 0 : nextCheck(plan, tracker, now),
  };
}

function nextCheck(plan: DrainPlan, tracker: DrainTracker, now: number): number {
  let next = plan.blocked.length > 0 ? POLICY_BLOCKED_POLL_MS : Number.POSITIVE_INFINITY;
  if (plan.wait.length > 0) next = Math.min(next, TERMINATING_POLL_MS);
  for (const pod of plan.evict) {
    // Evicted but still listed: the cache has not caught up with the deletion yet.
    if (tracker.wasEvicted(pod)) next = Math.min(next, TERMINATING_POLL_MS);
    else if (plan.blocked.length === 0) next = Math.min(next, (tracker.retryAt(pod) ?? now) - now);
  }
  return Number.isFinite(next) ? Math.max(1, next) : TERMINATING_POLL_MS;
}
