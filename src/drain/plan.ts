// Decide, then act: which of a node's pods to evict, wait for, leave alone, or
// refuse to drain, from the pods alone. Pure.
import { type DrainOptions, type DrainPolicy, decidePod, drainPolicy } from './filters.ts';
import { type Pod, podName } from './pod.ts';

export interface PodReason {
  pod: Pod;
  reason: string;
}

export interface DrainPlan {
  /** Pods to evict (completed pods included: the API server deletes them without asking PDBs). */
  evict: Pod[];
  /** Pods already terminating: they still have to go before the drain is done. */
  wait: Pod[];
  /** Pods the drain leaves on the node (DaemonSet, mirror, not selected). */
  skip: PodReason[];
  /** Pods the options forbid evicting; any of them stops the drain, as in kubectl. */
  blocked: PodReason[];
}

export function planDrain(pods: readonly Pod[], opts: DrainOptions | DrainPolicy = {}): DrainPlan {
  const policy = 'selector' in opts ? opts : drainPolicy(opts);
  const plan: DrainPlan = { evict: [], wait: [], skip: [], blocked: [] };
  for (const pod of pods) {
    const { decision } = decidePod(pod, policy);
    switch (decision.action) {
      case 'evict':
        plan.evict.push(pod);
        break;
      case 'wait':
        plan.wait.push(pod);
        break;
      case 'skip':
        plan.skip.push({ pod, reason: decision.reason });
        break;
      case 'block':
        plan.blocked.push({ pod, reason: decision.reason });
        break;
    }
  }
  return plan;
}

/** Pods the drain must see gone before it is done: kubectl's GetPodsForDeletion list. */
export function drainablePods(plan: DrainPlan): Pod[] {
  return [...plan.evict, ...plan.wait];
}

/**
 * kubectl's refusal, one line per reason, pods sorted, reasons in the order first met:
 * "cannot delete Pods with local storage (use deleteEmptyDirData): ns/a, ns/b".
 */
export function blockedMessages(blocked: readonly PodReason[]): string[] {
  const groups = new Map<string, string[]>();
  for (const { pod, reason } of blocked) {
    const names = groups.get(reason) ?? [];
    names.push(podName(pod));
    groups.set(reason, names);
  }
  return [...groups].map(([reason, names]) => `${reason}: ${names.sort().join(', ')}`);
}

/** blockedMessages joined with "; "; '' when nothing is blocked. */
export function blockedMessage(blocked: readonly PodReason[]): string {
  return blockedMessages(blocked).join('; ');
}
