// Which node's Deployment to update next, one VM at a time: a pure planner
// (planVmRollout). Masters first, and only while the cluster is steady —
// every Deployment settled on its one replica and every VM a Ready node of
// the workload cluster, every wanted node with its Deployment — so the next
// node starts only when the previous one is back. A node is out of date when its Deployment's node-spec hash differs
// from the desired one (or is missing): the hash covers the release and also
// CPUs, memory and disks, which the anchor's "release annotation only" rule
// silently ignored (kvm-operator deployment/update.go). Workers wait while a
// workload master is unschedulable (anchor #976).
import type { NodeRole } from '../../api/kvm.ts';

export interface DeploymentView {
  /** The Deployment's name (role-nodeid). */
  name: string;
  role: NodeRole;
  /** The node id its labels name (every node Deployment we make carries one). */
  nodeId?: string;
  /** The node-spec hash its pod template carries; undefined or "" counts as out of date. */
  specHash: string | undefined;
  /** Being deleted: its ReplicaSets and VM pods go first (foreground), then it. */
  deleting: boolean;
  replicas: { desired: number; current: number; updated: number; ready: number; available: number };
}

export interface VmRolloutInput {
  /** Desired hash per Deployment name, in upgrade order (masters first). */
  desired: ReadonlyArray<{ name: string; role: NodeRole; specHash: string }>;
  current: ReadonlyArray<DeploymentView>;
  /** Deployment names whose VM is not yet a Ready node of the workload cluster. */
  notReadyInWorkload: ReadonlySet<string>;
  /** Any master of the workload cluster cordoned or tainted unschedulable. */
  masterUnschedulable: boolean;
  /** The workload cluster answers (no upgrade steps blind). */
  workloadReachable: boolean;
}

export type VmRolloutWait =
  | { cause: 'unreachable' }
  | { cause: 'settling'; deployment: string }
  | { cause: 'notReady'; deployment: string }
  | { cause: 'masterUnschedulable' };

export type VmRolloutDecision =
  | { kind: 'update'; name: string; role: NodeRole }
  | { kind: 'wait'; outdated: string[]; wait: VmRolloutWait }
  | { kind: 'upToDate' };

export function isSettled(d: DeploymentView): boolean {
  const r = d.replicas;
  return (
    r.current === r.desired && r.updated === r.desired && r.ready === r.desired && r.available === r.desired
  );
}

export function planVmRollout(input: VmRolloutInput): VmRolloutDecision {
  const byName = new Map(input.current.map((d) => [d.name, d]));
  const outdated = input.desired.filter((d) => {
    const cur = byName.get(d.name);
    return cur !== undefined && (cur.specHash ?? '') !== d.specHash;
  });
  if (outdated.length === 0) return { kind: 'upToDate' };
  const names = outdated.map((d) => d.name);
  const wait = (w: VmRolloutWait): VmRolloutDecision => ({ kind: 'wait', outdated: names, wait: w });
  if (!input.workloadReachable) return wait({ cause: 'unreachable' });
  // A wanted node with no Deployment (being made, or made again after a delete) is not back yet.
  const absent = input.desired.find((d) => !byName.has(d.name));
  if (absent) return wait({ cause: 'settling', deployment: absent.name });
  const unsettled = input.current.find((d) => !isSettled(d));
  if (unsettled) return wait({ cause: 'settling', deployment: unsettled.name });
  const notReady = input.current.find((d) => input.notReadyInWorkload.has(d.name));
  if (notReady) return wait({ cause: 'notReady', deployment: notReady.name });
  const next = outdated[0];
  if (!next) return { kind: 'upToDate' };
  if (next.role === 'worker' && input.masterUnschedulable) return wait({ cause: 'masterUnschedulable' });
  return { kind: 'update', name: next.name, role: next.role };
}
