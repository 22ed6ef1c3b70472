// A KVMCluster's status from what was observed, as a pure function: its
// nodes (VM pods and their workload Nodes, with drain progress), the
// anchor's conditions at observedGeneration — Creating until every node is a
// Ready workload node on the desired versions, then Created for good;
// Updating while a node runs an older release or spec, then Updated with the
// release appended to the version history (at most 5, anchor ClusterVersionLimit).
import type { KVMCluster, KVMClusterStatusType, KVMNodeStatusType, NodeRole } from '../../api/kvm.ts';
import { isConditionTrue, setCondition } from '../../runtime/conditions.ts';

export const VERSION_LIMIT = 5;

export interface ObservedVm {
  pod: string;
  deployment: string;
  id: string;
  role: NodeRole;
  release: string | undefined;
  specHash: string | undefined;
  terminating: boolean;
  drain?: KVMNodeStatusType['drain'];
  node?: { ready: boolean; version: string; lastTransitionTime?: string };
}

export interface StatusInput {
  kc: KVMCluster;
  indexes: Record<string, number>;
  /** Desired node-spec hash per Deployment name. */
  desired: ReadonlyMap<string, string>;
  vms: readonly ObservedVm[];
  /** Node Deployments not yet given the desired spec (their VMs still run the old one). */
  outdatedDeployments?: number;
  /** Why the next node waits, for the Updating condition's message. */
  rolloutWait?: string;
  kubeconfigSecret?: string;
  lastUnhealthyReplacement?: string;
  now: Date;
}

/** Every desired node has a live VM on the desired spec that is a Ready node on the desired Kubernetes version. */
export function clusterReady(input: Pick<StatusInput, 'kc' | 'desired' | 'vms'>): boolean {
  const want = input.kc.spec.release.kubernetesVersion.replace(/^v?/, 'v');
  for (const [deployment, hash] of input.desired) {
    const vm = input.vms.find((v) => v.deployment === deployment && !v.terminating);
    if (!vm || vm.specHash !== hash || !vm.node?.ready || vm.node.version !== want) return false;
  }
  return true;
}

/** What the conditions are decided from. */
interface Progress {
  release: string;
  generation: number;
  created: boolean;
  updating: boolean;
  /** Nodes on an older spec, each counted once. */
  outdated: number;
  readyCount: number;
  desiredCount: number;
}

export function buildStatus(input: StatusInput): KVMClusterStatusType {
  const { kc, now } = input;
  const prev = kc.status ?? {};
  const release = kc.spec.release.version;
  const ready = clusterReady(input);
  const wasCreated = isConditionTrue(prev.conditions, 'Created');
  // The same node counts once, whether its Deployment or only its VM is behind. A VM of a node
  // removed from the spec is on no spec: a scale-down is not an update (a user read "2 nodes on an
  // older spec" for the two workers they had just removed).
  const outdated = Math.max(
    input.vms.filter((v) => input.desired.has(v.deployment) && v.specHash !== input.desired.get(v.deployment))
      .length,
    input.outdatedDeployments ?? 0,
  );
  const reached = prev.versions?.at(-1)?.release === release;
  const progress: Progress = {
    release,
    generation: kc.metadata.generation ?? 0,
    created: wasCreated || ready,
    // A node that is merely sick is not an update; a release not reached yet is, until every node is Ready on it.
    updating: wasCreated && (outdated > 0 || (!reached && !ready)),
    outdated,
    readyCount: input.vms.filter((v) => !v.terminating && v.node?.ready).length,
    desiredCount: input.desired.size,
  };
  let versions = prev.versions ?? [];
  if (ready && !progress.updating && versions.at(-1)?.release !== release) {
    versions = [...versions, { release, lastTransitionTime: now.toISOString() }].slice(-VERSION_LIMIT);
  }
  return {
    ...prev,
    observedGeneration: progress.generation,
    conditions: clusterConditions(prev.conditions ?? [], progress, input.rolloutWait, now),
    nodeIndexes: input.indexes,
    nodes: input.vms.map(nodeStatus),
    versions,
    readyNodes: progress.readyCount,
    desiredNodes: progress.desiredCount,
    ...(input.kubeconfigSecret ? { kubeconfigSecret: input.kubeconfigSecret } : {}),
    ...(input.lastUnhealthyReplacement ? { lastUnhealthyReplacement: input.lastUnhealthyReplacement } : {}),
  };
}

/** Creating, Created, Updating and Updated, at the observed generation. */
function clusterConditions(
  previous: NonNullable<KVMClusterStatusType['conditions']>,
  p: Progress,
  rolloutWait: string | undefined,
  now: Date,
): NonNullable<KVMClusterStatusType['conditions']> {
  let conditions = previous;
  const set = (type: string, on: boolean, reason: string, message: string) => {
    conditions = setCondition(
      conditions,
      { type, status: on ? 'True' : 'False', reason, message, observedGeneration: p.generation },
      now,
    );
  };
  const { created, updating } = p;
  const readyOfDesired = `${p.readyCount} of ${p.desiredCount} nodes Ready`;
  const upToDate = `every node runs release ${p.release}`;
  set(
    'Creating',
    !created,
    created ? 'Created' : 'NodesStarting',
    created ? 'every node joined the workload cluster' : readyOfDesired,
  );
  set('Created', created, created ? 'NodesReady' : 'NodesStarting', readyOfDesired);
  set(
    'Updating',
    updating,
    updating ? 'RollingNodes' : 'UpToDate',
    updating ? `${p.outdated} nodes on an older spec${rolloutWait ? `; ${rolloutWait}` : ''}` : upToDate,
  );
  set(
    'Updated',
    created && !updating,
    created && !updating ? 'UpToDate' : 'RollingNodes',
    created && !updating ? upToDate : 'nodes are being replaced',
  );
  return conditions;
}

function nodeStatus(v: ObservedVm): KVMNodeStatusType {
  return {
    name: v.pod,
    id: v.id,
    role: v.role,
    ...(v.node ? { version: v.node.version } : {}),
    ...(v.release ? { release: v.release } : {}),
    ready: !v.terminating && (v.node?.ready ?? false),
    ...(v.node?.lastTransitionTime ? { lastTransitionTime: v.node.lastTransitionTime } : {}),
    ...(v.drain ? { drain: v.drain } : {}),
  };
}
