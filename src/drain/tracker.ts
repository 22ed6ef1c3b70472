// What a drain remembers between reconciles, in memory, per NodeMaintenance:
// which pods it evicted and when each refused pod may be tried again. Keyed by
// pod uid, so a fresh tracker (operator restart) just re-evaluates: evicting a
// pod again is harmless, its deletionTimestamp then makes it a pod to wait for.
import type { EvictionOutcome } from './evict.ts';
import type { DrainPlan } from './plan.ts';
import { type BlockedPod, type Pod, type PodRef, podRef, podUid } from './pod.ts';

export interface DrainTrackerOptions {
  /** Pods selected for eviction when the drain began, e.g. from status.evictionPods after a restart. */
  evictionPods?: number;
  /** First retry delay for a refused pod; doubles per refusal up to backoffMaxMs. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** The cap for a PDB refusal while this drain evicted a pod within progressWindowMs: kubectl's 5 s. */
  movingMaxMs?: number;
  progressWindowMs?: number;
  /** 0..1; spreads the retries of a moving drain (default Math.random). */
  random?: () => number;
}

export interface DrainProgress {
  pending: PodRef[];
  blocked: BlockedPod[];
  /** 0..100, the anchor's (evictionPods − pending) × 100 / evictionPods; 100 when nothing was to evict. */
  drainProgress: number;
}

interface Refusal {
  attempts: number;
  retryAt: number;
  outcome: Exclude<EvictionOutcome, { result: 'evicted' | 'gone' }>;
}

/** A PDB refusal as status.blockedPods holds it (the schema caps messages at 1024 characters). */
export function blockedPod(pod: Pod, refusal: Extract<EvictionOutcome, { result: 'blocked' }>): BlockedPod {
  const entry: BlockedPod = { ...podRef(pod), message: refusal.message.slice(0, 1024) };
  if (refusal.pdb) entry.pdb = refusal.pdb;
  return entry;
}

export class DrainTracker {
  /** Size of the eviction set at the start; set by the first drainStep unless given. */
  evictionPods: number | undefined;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly movingMaxMs: number;
  private readonly progressWindowMs: number;
  /** When this drain last evicted a pod. */
  private lastEvictionAt = Number.NEGATIVE_INFINITY;
  private readonly random: () => number;
  private readonly evicted = new Set<string>();
  private readonly refusals = new Map<string, Refusal>();

  constructor(opts: DrainTrackerOptions = {}) {
    this.evictionPods = opts.evictionPods;
    // kubectl retries a refused eviction every 5 s; 1 s first answers a PDB freed by a quick
    // rollout sooner, and the 30 s cap keeps thousands of long-blocked pods from hammering the server.
    this.baseMs = opts.backoffBaseMs ?? 1000;
    this.maxMs = opts.backoffMaxMs ?? 30_000;
    // A PDB that let one of this drain's pods go lately frees the next as soon as the replacement
    // is Ready (real pods take seconds): retry at kubectl's pace while the drain moves, or pods
    // refused together sit out 30 s each (measured: 30 real pods under maxUnavailable 1, 784 s).
    this.movingMaxMs = opts.movingMaxMs ?? 5000;
    this.progressWindowMs = opts.progressWindowMs ?? 60_000;
    this.random = opts.random ?? Math.random;
  }

  /** Whether an eviction should be sent for `pod` now: never twice, and not before its retry time. */
  due(pod: Pod, now = Date.now()): boolean {
    const uid = podUid(pod);
    if (this.evicted.has(uid)) return false;
    return (this.refusals.get(uid)?.retryAt ?? 0) <= now;
  }

  /** Whether this incarnation (uid) of the pod was evicted by us. */
  wasEvicted(pod: Pod): boolean {
    return this.evicted.has(podUid(pod));
  }

  /** When a refused pod may be tried again; undefined if it was never refused. */
  retryAt(pod: Pod): number | undefined {
    return this.refusals.get(podUid(pod))?.retryAt;
  }

  /** Records what an eviction of `pod` returned. */
  record(pod: Pod, outcome: EvictionOutcome, now = Date.now()): void {
    const uid = podUid(pod);
    if (outcome.result === 'evicted' || outcome.result === 'gone') {
      this.evicted.add(uid);
      this.refusals.delete(uid);
      if (outcome.result === 'evicted') this.lastEvictionAt = now;
      return;
    }
    const attempts = (this.refusals.get(uid)?.attempts ?? 0) + 1;
    const moving = outcome.result === 'blocked' && now - this.lastEvictionAt < this.progressWindowMs;
    const backoff = Math.min(this.baseMs * 2 ** (attempts - 1), moving ? this.movingMaxMs : this.maxMs);
    // Pods a PDB refused together would retry together, and one at a time gets through: spread
    // them over the second half of their delay, so the freed disruption is taken within moments
    // (as kubectl's per-pod retry loops, started apart, take it).
    const delay = moving ? Math.round(backoff * (0.5 + 0.5 * this.random())) : backoff;
    this.refusals.set(uid, { attempts, retryAt: now + delay, outcome });
  }

  /** The last refusal recorded for `pod`, if its latest attempt failed. */
  lastRefusal(pod: Pod): Refusal['outcome'] | undefined {
    return this.refusals.get(podUid(pod))?.outcome;
  }

  /**
   * Progress against the eviction set. Pending = every pod the plan still has to see
   * gone (to evict, or terminating); an evicted pod stays pending until it is gone or
   * only a pod with a new uid is left under its name. Blocked = pending pods a PDB refused.
   */
  progress(evictionPods: number, plan: Pick<DrainPlan, 'evict' | 'wait'>): DrainProgress {
    const remaining = [...plan.evict, ...plan.wait];
    const blocked: BlockedPod[] = [];
    for (const pod of plan.evict) {
      const r = this.refusals.get(podUid(pod));
      if (r?.outcome.result === 'blocked') blocked.push(blockedPod(pod, r.outcome));
    }
    const done = evictionPods - remaining.length;
    const drainProgress =
      evictionPods <= 0 ? 100 : Math.max(0, Math.min(100, Math.floor((done * 100) / evictionPods)));
    return { pending: remaining.map(podRef), blocked, drainProgress };
  }

  /** Forgets pods no longer on the node, so memory follows the node, not its history. */
  prune(podsNow: readonly Pod[]): void {
    const live = new Set(podsNow.map(podUid));
    for (const uid of this.evicted) if (!live.has(uid)) this.evicted.delete(uid);
    for (const uid of this.refusals.keys()) if (!live.has(uid)) this.refusals.delete(uid);
  }
}
