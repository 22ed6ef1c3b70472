// Which master VM pods carry the serving label, a pure planner. The masters'
// disruption budget (desired.ts) selects only pods with it, so a drain's or
// the rollout's eviction counts the masters that serve as workload nodes, not
// pods that read Ready: a replacement's pod reads Ready at once in the
// simulator, and on a real VM once the guest is up, before its etcd member has
// joined. With the pods, the budget let a second master go 326 ms after a
// drain had evicted the first (the soak's seed 20261124, busy cores).
import { KVM_LABELS } from '../../api/kvm.ts';
import type { PodObject, WorkloadNode } from './views.ts';

export interface ServingChange {
  pod: string;
  serving: boolean;
}

/** The master VM pods (not being deleted) whose label is not what their workload Node says. */
export function planServing(pods: readonly PodObject[], nodes: readonly WorkloadNode[]): ServingChange[] {
  const ready = new Set(nodes.filter((n) => n.ready).map((n) => n.name));
  return pods.flatMap((p) => {
    const labels = p.metadata?.labels ?? {};
    if (labels[KVM_LABELS.role] !== 'master' || p.metadata?.deletionTimestamp) return [];
    const name = p.metadata?.name ?? '';
    const serving = ready.has(name);
    return (labels[KVM_LABELS.serving] === 'true') === serving ? [] : [{ pod: name, serving }];
  });
}
