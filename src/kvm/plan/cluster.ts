// One pass over a KVMCluster, decided before anything is done: from what was
// observed (the cluster, its node indexes, its Deployments and VM pods, the
// workload cluster's Nodes), the objects it wants, the nodes to create and to
// remove, the next node to update, the unhealthy VMs to replace, the status
// to write and when to look again. A pure function; the reconciler carries
// the plan out in this order.
import type { KVMClusterStatusType } from '../../api/kvm.ts';
import { type DesiredCluster, desiredCluster } from './desired.ts';
import type { DesiredNode, VmChoice } from './desired-node.ts';
import { kubeconfigSecretName } from './names.ts';
import { type NodeChanges, planNodeChanges } from './node-changes.ts';
import type { ClusterPki } from './pki.ts';
import { type DeploymentView, planVmRollout, type VmRolloutDecision } from './rollout.ts';
import { planServing, type ServingChange } from './serving.ts';
import { unhealthyPolicy } from './spec.ts';
import { buildStatus, clusterReady, type ObservedVm } from './status.ts';
import { planUnhealthy, type UnhealthyPlan } from './unhealthy.ts';
import {
  type DeploymentObject,
  deploymentView,
  type KVMClusterObject,
  observeVms,
  type PodObject,
  unhealthyViews,
  type WorkloadNode,
} from './views.ts';

/** While nodes boot, drain or roll: look again this often (workload Nodes are polled, not watched). */
export const BUSY_MS = 3000;
/** A steady cluster: still look, to notice nodes turning NotReady. */
export const STEADY_MS = 30_000;

export interface ClusterObservation {
  kc: KVMClusterObject;
  /** The node indexes, as already written to status. */
  indexes: Record<string, number>;
  /** The cluster's node Deployments. */
  deployments: readonly DeploymentObject[];
  pods: readonly PodObject[];
  /** The workload cluster's Nodes; undefined when it does not answer (nothing that depends on it is decided). */
  nodes: WorkloadNode[] | undefined;
  /** The cluster's PKI as held (act/pki.ts issued what was due): it goes into every node's config. */
  pki: ClusterPki;
  now: Date;
  /** What the VM pods run and boot; the contract's image and Debian when not given. */
  vm?: VmChoice;
}

export interface ClusterPlan {
  desired: DesiredCluster;
  nodes: NodeChanges;
  rollout: VmRolloutDecision;
  /** The node whose Deployment gets the desired spec now (the rollout's update). */
  update?: DesiredNode;
  /** Only when the workload cluster answered. */
  unhealthy?: UnhealthyPlan;
  /** The master VM pods whose serving label changes (only when the workload cluster answered). */
  serving?: ServingChange[];
  status: KVMClusterStatusType;
  requeueMs: number;
}

export function planCluster(o: ClusterObservation): ClusterPlan {
  const { kc, nodes } = o;
  const desired = desiredCluster(kc, o.indexes, o.pki, o.vm);
  const wanted = new Set(desired.nodes.map((n) => n.name));
  const all = o.deployments.map(deploymentView);
  // One being deleted is nobody's to update: its node comes back as a new Deployment once it is gone.
  const views = all.filter((d) => wanted.has(d.name) && !d.deleting);
  const vms = observeVms(o.pods, nodes);
  const rollout = planVmRollout({
    desired: desired.nodes.map((n) => ({ name: n.name, role: n.node.role, specHash: n.specHash })),
    current: views,
    notReadyInWorkload: notServing(views, vms),
    masterUnschedulable: (nodes ?? []).some((n) => n.master && n.unschedulable),
    workloadReachable: nodes !== undefined,
  });
  const update = rollout.kind === 'update' ? desired.nodes.find((n) => n.name === rollout.name) : undefined;
  const last = kc.status?.lastUnhealthyReplacement;
  const unhealthy = nodes
    ? planUnhealthy({
        policy: unhealthyPolicy(kc.spec),
        now: o.now.getTime(),
        vms: unhealthyViews(o.pods, nodes),
        workloadNodes: nodes,
        ...(last ? { lastReplacementMs: Date.parse(last) } : {}),
      })
    : undefined;
  const lastReplacement = unhealthy?.replace.length ? o.now.toISOString() : last;
  const hashes = new Map(desired.nodes.map((n) => [n.name, n.specHash]));
  const namespace = kc.metadata.namespace ?? 'default';
  const status = buildStatus({
    kc,
    indexes: o.indexes,
    desired: hashes,
    vms,
    outdatedDeployments: views.filter((d) => d.specHash !== hashes.get(d.name)).length,
    ...(rollout.kind === 'wait' ? { rolloutWait: waitMessage(rollout) } : {}),
    kubeconfigSecret: `${namespace}/${kubeconfigSecretName(kc.metadata.name ?? '')}`,
    ...(lastReplacement ? { lastUnhealthyReplacement: lastReplacement } : {}),
    now: o.now,
  });
  const steady =
    rollout.kind === 'upToDate' &&
    clusterReady({ kc, desired: hashes, vms }) &&
    vms.every((v) => !v.terminating);
  return {
    desired,
    nodes: planNodeChanges(desired.nodes, all),
    rollout,
    ...(update ? { update } : {}),
    ...(unhealthy ? { unhealthy } : {}),
    ...(nodes ? { serving: planServing(o.pods, nodes) } : {}),
    status,
    requeueMs: steady ? STEADY_MS : BUSY_MS,
  };
}

/** Why the next node waits, for the Updating condition's message. */
/**
 * The node Deployments whose VM is not back: one of its VMs is going or not a Ready workload node,
 * or none runs its current spec yet. WHY the last: the Deployment and its pods come from two
 * informers; with the pods' behind (an API server restart), the Deployment had already counted its
 * new VM ready while the cache still showed the old one, whose node was still Ready, and the next
 * master was taken before the first was back (the soak's seed 20261124: two masters out).
 */
export function notServing(
  deployments: ReadonlyArray<Pick<DeploymentView, 'name' | 'specHash'>>,
  vms: ReadonlyArray<Pick<ObservedVm, 'deployment' | 'specHash' | 'terminating' | 'node'>>,
): Set<string> {
  const out = new Set<string>();
  for (const d of deployments) {
    const own = vms.filter((v) => v.deployment === d.name);
    const back = own.some((v) => v.specHash === d.specHash);
    if (!back || own.some((v) => v.terminating || !v.node?.ready)) out.add(d.name);
  }
  return out;
}

export function waitMessage(d: Extract<VmRolloutDecision, { kind: 'wait' }>): string {
  const w = d.wait;
  switch (w.cause) {
    case 'unreachable':
      return 'waiting for the workload cluster to answer';
    case 'settling':
      return `waiting for ${w.deployment} to settle`;
    case 'notReady':
      return `waiting for ${w.deployment} to be a Ready node`;
    case 'masterUnschedulable':
      return 'workers wait: a master is unschedulable';
  }
}
