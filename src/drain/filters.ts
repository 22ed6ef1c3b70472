// Which pods a drain evicts, as kubectl drain decides it: a list of small named
// filters applied in order; the first with an opinion decides, and a pod no
// filter stops is evicted. Pure: no API calls.
import { matchesSelector, type Requirement } from '../runtime/label-selector.ts';
import { isCompleted, type Pod } from './pod.ts';
import { parsePodSelector } from './selector.ts';

export type PodDecision =
  | { action: 'evict' }
  | { action: 'skip'; reason: string }
  | { action: 'wait'; reason: string }
  | { action: 'block'; reason: string };

/** The drain settings of a NodeMaintenance spec; a spec object can be passed as it is. */
export interface DrainOptions {
  /** Grace period for each eviction; negative (default -1) uses the pod's own. */
  gracePeriodSeconds?: number;
  /** Label selector: pods that do not match are left alone. */
  podSelector?: string;
  /** Evict pods with emptyDir volumes (default true, as medik8s). */
  deleteEmptyDirData?: boolean;
  /** Evict pods no controller manages (default true: medik8s runs kubectl's --force). */
  evictUnmanagedPods?: boolean;
  /** Leave DaemonSet pods in place (default true); false makes them block the drain. */
  ignoreDaemonSets?: boolean;
}

/** DrainOptions with the defaults filled in and the selector parsed once. */
export interface DrainPolicy {
  gracePeriodSeconds: number;
  deleteEmptyDirData: boolean;
  evictUnmanagedPods: boolean;
  ignoreDaemonSets: boolean;
  selector: Requirement[] | undefined;
}

/** Applies the defaults; throws on an unparsable podSelector (the caller's spec is wrong). */
export function drainPolicy(opts: DrainOptions = {}): DrainPolicy {
  const parsed = parsePodSelector(opts.podSelector);
  if (!parsed.ok) throw new Error(`invalid ${parsed.message}`);
  return {
    gracePeriodSeconds: opts.gracePeriodSeconds ?? -1,
    deleteEmptyDirData: opts.deleteEmptyDirData ?? true,
    evictUnmanagedPods: opts.evictUnmanagedPods ?? true,
    ignoreDaemonSets: opts.ignoreDaemonSets ?? true,
    selector: parsed.selector,
  };
}

export interface DrainFilter {
  name: string;
  /** A decision stops the chain; undefined lets the pod through to the next filter. */
  decide(pod: Pod, policy: DrainPolicy): PodDecision | undefined;
}

// Reasons double as the grouped message kubectl prints ("cannot delete X: ns/a, ns/b"),
// naming our spec field instead of kubectl's flag.
export const REASONS = {
  notSelected: 'does not match podSelector',
  terminating: 'already terminating',
  daemonSetSkipped: 'DaemonSet-managed',
  daemonSetBlocked: 'cannot delete DaemonSet-managed Pods (use ignoreDaemonSets)',
  mirror: 'mirror (static) pod',
  localStorageBlocked: 'cannot delete Pods with local storage (use deleteEmptyDirData)',
  unmanagedBlocked: 'cannot delete Pods that declare no controller (use evictUnmanagedPods)',
} as const;

const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

const controllerOf = (pod: Pod) => pod.metadata?.ownerReferences?.find((r) => r.controller === true);
const isDaemonSetPod = (pod: Pod) => controllerOf(pod)?.kind === 'DaemonSet';
const isMirror = (pod: Pod) => Object.hasOwn(pod.metadata?.annotations ?? {}, MIRROR_ANNOTATION);

/** kubectl applies --pod-selector when listing, before any filter sees the pod. */
export const podSelectorFilter: DrainFilter = {
  name: 'podSelector',
  decide: (pod, p) =>
    p.selector && !matchesSelector(pod.metadata?.labels, p.selector)
      ? { action: 'skip', reason: REASONS.notSelected }
      : undefined,
};

/**
 * A pod already being deleted is waited for, never evicted again. Exception: a
 * pod we would skip anyway (ignored DaemonSet pod, mirror pod) stays skipped,
 * as in kubectl, so a DaemonSet pod stuck terminating cannot hold the drain.
 */
export const skipDeletedFilter: DrainFilter = {
  name: 'skipDeleted',
  decide: (pod, p) => {
    if (!pod.metadata?.deletionTimestamp) return undefined;
    if (isMirror(pod)) return { action: 'skip', reason: REASONS.mirror };
    if (p.ignoreDaemonSets && isDaemonSetPod(pod))
      return { action: 'skip', reason: REASONS.daemonSetSkipped };
    return { action: 'wait', reason: REASONS.terminating };
  },
};

/** The DaemonSet controller ignores cordons and would recreate the pod at once. */
export const daemonSetFilter: DrainFilter = {
  name: 'daemonSet',
  decide: (pod, p) => {
    if (!isDaemonSetPod(pod) || isCompleted(pod)) return undefined;
    return p.ignoreDaemonSets
      ? { action: 'skip', reason: REASONS.daemonSetSkipped }
      : { action: 'block', reason: REASONS.daemonSetBlocked };
  },
};

/** Mirror pods belong to the kubelet's static manifests; the API cannot remove them. Always skipped. */
export const mirrorFilter: DrainFilter = {
  name: 'mirror',
  decide: (pod) => (isMirror(pod) ? { action: 'skip', reason: REASONS.mirror } : undefined),
};

/** emptyDir data is lost with the pod. */
export const localStorageFilter: DrainFilter = {
  name: 'localStorage',
  decide: (pod, p) => {
    const hasEmptyDir = (pod.spec?.volumes ?? []).some((v) => v.emptyDir != null);
    if (!hasEmptyDir || isCompleted(pod) || p.deleteEmptyDirData) return undefined;
    return { action: 'block', reason: REASONS.localStorageBlocked };
  },
};

/** Nothing recreates a pod without a controller: evicting it ends the workload. */
export const unreplicatedFilter: DrainFilter = {
  name: 'unreplicated',
  decide: (pod, p) => {
    if (controllerOf(pod) || isCompleted(pod) || p.evictUnmanagedPods) return undefined;
    return { action: 'block', reason: REASONS.unmanagedBlocked };
  },
};

/** kubectl drain's order (skipDeleted → daemonSet → mirror → localStorage → unreplicated), selector first. */
export const drainFilters: readonly DrainFilter[] = Object.freeze([
  podSelectorFilter,
  skipDeletedFilter,
  daemonSetFilter,
  mirrorFilter,
  localStorageFilter,
  unreplicatedFilter,
]);

/** The decision for one pod, and the filter that made it (undefined: no filter objected). */
export function decidePod(pod: Pod, policy: DrainPolicy): { decision: PodDecision; filter?: string } {
  for (const f of drainFilters) {
    const decision = f.decide(pod, policy);
    if (decision) return { decision, filter: f.name };
  }
  return { decision: { action: 'evict' } };
}
