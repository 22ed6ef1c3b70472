// What the planners see of the objects a KVMCluster's reconcile observed
// (controllers/observe.ts reads them): its VM pods, its node Deployments and
// the workload cluster's Nodes, each turned into the small view a planner
// takes. Pure functions.
import {
  KVM_ANNOTATIONS,
  KVM_LABELS,
  type KVMCluster,
  type KVMNodeStatusType,
  type NodeRole,
} from '../../api/kvm.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import { nodeObjectName } from './names.ts';
import type { DeploymentView } from './rollout.ts';
import type { ObservedVm } from './status.ts';
import type { VmView } from './unhealthy.ts';

export type KVMClusterObject = KVMCluster & K8sObject;

export interface WorkloadNode {
  name: string;
  ready: boolean;
  /** Ready's lastTransitionTime (ms): since when it is (not) Ready. */
  sinceMs: number;
  lastTransitionTime?: string;
  version: string;
  unschedulable: boolean;
  master: boolean;
}

export interface NodeObject extends K8sObject {
  spec?: { unschedulable?: boolean; taints?: Array<{ key: string; effect: string }> };
  status?: {
    conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }>;
    nodeInfo?: { kubeletVersion?: string };
  };
}

export function workloadNodeView(n: NodeObject): WorkloadNode {
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  const labels = n.metadata?.labels ?? {};
  return {
    name: n.metadata?.name ?? '',
    ready: ready?.status === 'True',
    // No Ready condition yet (just registered): not ready since it was created, not since 1970.
    sinceMs: Date.parse(ready?.lastTransitionTime ?? n.metadata?.creationTimestamp ?? '') || Date.now(),
    ...(ready?.lastTransitionTime ? { lastTransitionTime: ready.lastTransitionTime } : {}),
    version: n.status?.nodeInfo?.kubeletVersion ?? '',
    unschedulable:
      n.spec?.unschedulable === true ||
      (n.spec?.taints ?? []).some((t) => t.key === 'node.kubernetes.io/unschedulable'),
    master: labels[KVM_LABELS.role] === 'master',
  };
}

export interface PodObject extends K8sObject {
  spec?: { nodeName?: string };
  status?: {
    phase?: string;
    startTime?: string;
    conditions?: Array<{ type: string; status: string; lastTransitionTime?: string }>;
  };
}

export interface DeploymentObject extends K8sObject {
  spec?: { replicas?: number; template?: { metadata?: { annotations?: Record<string, string> } } };
  status?: {
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    observedGeneration?: number;
  };
}

export function deploymentView(d: DeploymentObject): DeploymentView {
  const labels = d.metadata?.labels ?? {};
  const s = d.status ?? {};
  // A spec the Deployment controller has not seen yet is not settled, whatever its counters say.
  const seen = (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
  const nodeId = labels[KVM_LABELS.nodeId];
  return {
    name: d.metadata?.name ?? '',
    role: labels[KVM_LABELS.role] === 'master' ? 'master' : 'worker',
    ...(nodeId ? { nodeId } : {}),
    specHash: d.spec?.template?.metadata?.annotations?.[KVM_ANNOTATIONS.nodeSpec],
    deleting: Boolean(d.metadata?.deletionTimestamp),
    replicas: {
      desired: d.spec?.replicas ?? 1,
      current: seen ? (s.replicas ?? 0) : -1,
      updated: s.updatedReplicas ?? 0,
      ready: s.readyReplicas ?? 0,
      available: s.availableReplicas ?? 0,
    },
  };
}

function drainOf(pod: PodObject): KVMNodeStatusType['drain'] | undefined {
  const a = pod.metadata?.annotations ?? {};
  const started = a[KVM_ANNOTATIONS.drainStarted];
  if (!started) return undefined;
  const drained = a[KVM_ANNOTATIONS.drained];
  const phase = drained === 'TimedOut' ? 'TimedOut' : drained ? 'Drained' : 'Draining';
  const left = Number(a[DRAIN_PODS_LEFT]);
  return { phase, startedAt: started, ...(Number.isInteger(left) ? { podsLeft: left } : {}) };
}

/** Pods still to leave a draining node, as the drain last counted them. */
export const DRAIN_PODS_LEFT = 'kvm.nodewarden.dev/drain-pods-left';

/** One entry per VM pod, joined with its workload Node by name. */
export function observeVms(
  pods: readonly PodObject[],
  nodes: readonly WorkloadNode[] | undefined,
): ObservedVm[] {
  const byName = new Map((nodes ?? []).map((n) => [n.name, n]));
  return pods
    .map((p) => {
      const labels = p.metadata?.labels ?? {};
      const role: NodeRole = labels[KVM_LABELS.role] === 'master' ? 'master' : 'worker';
      const id = labels[KVM_LABELS.nodeId] ?? '';
      const name = p.metadata?.name ?? '';
      const node = byName.get(name);
      const drain = drainOf(p);
      return {
        pod: name,
        deployment: nodeObjectName(role, id),
        id,
        role,
        release: p.metadata?.annotations?.[KVM_ANNOTATIONS.release],
        specHash: p.metadata?.annotations?.[KVM_ANNOTATIONS.nodeSpec],
        terminating: Boolean(p.metadata?.deletionTimestamp),
        ...(drain ? { drain } : {}),
        ...(node
          ? {
              node: {
                ready: node.ready,
                version: node.version,
                ...(node.lastTransitionTime ? { lastTransitionTime: node.lastTransitionTime } : {}),
              },
            }
          : {}),
      };
    })
    .sort((a, b) => (a.role === b.role ? a.pod.localeCompare(b.pod) : a.role === 'master' ? -1 : 1));
}

/** The unhealthy-node planner's view of the VMs. */
export function unhealthyViews(pods: readonly PodObject[], nodes: readonly WorkloadNode[]): VmView[] {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  return pods.map((p) => {
    const name = p.metadata?.name ?? '';
    const node = byName.get(name);
    const running =
      p.status?.phase === 'Running' && p.status.startTime ? Date.parse(p.status.startTime) : undefined;
    return {
      pod: name,
      role: p.metadata?.labels?.[KVM_LABELS.role] === 'master' ? 'master' : 'worker',
      terminating: Boolean(p.metadata?.deletionTimestamp),
      ...(running !== undefined ? { runningSince: running } : {}),
      ...(node ? { node: { ready: node.ready, sinceMs: node.sinceMs } } : {}),
    };
  });
}
