// Which VMs to replace because their node is unhealthy: a pure planner. A
// workload node NotReady for longer than notReadyFor — measured from its Ready
// condition's lastTransitionTime, absolute time rather than the anchor's
// "6 resync ticks" its reviewers asked to replace (kvm-operator #1106) — or a
// VM pod running that long without ever joining, has its pod deleted (the
// drain applies, then the Deployment starts a fresh VM). At most maxFraction
// of the cluster at once (at least one), counting replacements under way, at
// most one master at a time, and pauseBetween after the last replacement.
// Workload Nodes no VM pod accounts for, and NotReady, are removed.
import type { NodeRole } from '../../api/kvm.ts';
import type { UnhealthyPolicy } from './spec.ts';

export interface VmView {
  pod: string;
  role: NodeRole;
  /** The pod is being deleted (a replacement or drain under way). */
  terminating: boolean;
  /** When the pod started running (ms), for VMs that never join. */
  runningSince?: number;
  /** Its workload Node, when it joined. */
  node?: { ready: boolean; sinceMs: number };
}

export interface UnhealthyInput {
  policy: UnhealthyPolicy;
  now: number;
  vms: readonly VmView[];
  /** Workload Nodes of the cluster with their readiness. */
  workloadNodes: ReadonlyArray<{ name: string; ready: boolean }>;
  lastReplacementMs?: number;
}

export type ReplaceCause = 'notReady' | 'neverJoined';

export interface UnhealthyPlan {
  replace: Array<{ pod: string; role: NodeRole; cause: ReplaceCause; forMs: number }>;
  /** Workload Nodes with no VM pod that are NotReady: the VM is gone for good. */
  removeNodes: string[];
  /** Why nothing is replaced though some VMs are unhealthy. */
  held?: 'disabled' | 'pause' | 'budget';
}

function unhealthyFor(vm: VmView, now: number): { cause: ReplaceCause; forMs: number } | undefined {
  if (vm.node) return vm.node.ready ? undefined : { cause: 'notReady', forMs: now - vm.node.sinceMs };
  if (vm.runningSince === undefined) return undefined;
  return { cause: 'neverJoined', forMs: now - vm.runningSince };
}

export function planUnhealthy(input: UnhealthyInput): UnhealthyPlan {
  const pods = new Set(input.vms.map((v) => v.pod));
  const removeNodes = input.workloadNodes.filter((n) => !n.ready && !pods.has(n.name)).map((n) => n.name);
  const { policy, now } = input;
  const due = input.vms
    .filter((v) => !v.terminating)
    .flatMap((v) => {
      const u = unhealthyFor(v, now);
      return u && u.forMs >= policy.notReadyForMs ? [{ pod: v.pod, role: v.role, ...u }] : [];
    })
    .sort((a, b) => b.forMs - a.forMs || a.pod.localeCompare(b.pod));
  if (due.length === 0) return { replace: [], removeNodes };
  if (!policy.terminate) return { replace: [], removeNodes, held: 'disabled' };
  if (input.lastReplacementMs !== undefined && now - input.lastReplacementMs < policy.pauseBetweenMs) {
    return { replace: [], removeNodes, held: 'pause' };
  }
  const cap = Math.max(1, Math.round(policy.maxFraction * input.vms.length));
  const underWay = input.vms.filter((v) => v.terminating);
  let slots = cap - underWay.length;
  let masterBusy = underWay.some((v) => v.role === 'master');
  const replace: UnhealthyPlan['replace'] = [];
  for (const d of due) {
    if (slots <= 0) break;
    if (d.role === 'master' && masterBusy) continue;
    replace.push(d);
    slots--;
    if (d.role === 'master') masterBusy = true;
  }
  return replace.length > 0 ? { replace, removeNodes } : { replace, removeNodes, held: 'budget' };
}
