// KVMClusterReconciler: a thin loop that keeps the cluster's PKI (act/pki.ts),
// writes its kubeconfig once its API server answers through the master Service
// (act/workload-kubeconfig.ts), observes (the cache and the workload
// cluster's Nodes), plans (plan/cluster.ts: the nodes to create and remove,
// the next node to update, the unhealthy VMs to replace, the status), acts
// (act/cluster-actions.ts) and saves the status. Creation makes every node at
// once; removal deletes a node's Deployment and its VM pod's finalizer drains
// it first (vm-drain.ts); updates go one node at a time. Deletion is ordered
// and lives in teardown.ts.
import { KVM_FINALIZER, KVMClusters } from '../../api/kvm.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { setCondition } from '../../runtime/conditions.ts';
import { isBeingDeleted, patchFinalizer } from '../../runtime/finalizers.ts';
import type { ReconcilerDeps } from '../../runtime/host.ts';
import { done, type Request, type Result, requeueAfter } from '../../runtime/reconcile.ts';
import { CONFLICT_REQUEUE_MS, saveStatus, updateStatusIfChanged } from '../../runtime/status.ts';
import { ObjectApplier } from '../act/apply.ts';
import { ClusterActions } from '../act/cluster-actions.ts';
import { PkiKeeper } from '../act/pki.ts';
import type { WorkloadClients } from '../act/workload-clients.ts';
import { KubeconfigWriter, type MasterEndpoints } from '../act/workload-kubeconfig.ts';
import { certificatesIssued, readyNodes } from '../metrics.ts';
import { type ClusterObservation, type ClusterPlan, planCluster } from '../plan/cluster.ts';
import { podRangeProblem } from '../plan/cni.ts';
import type { VmChoice } from '../plan/desired-node.ts';
import { indexesPatch, nodeIndexes, sameIndexes } from '../plan/node-indexes.ts';
import type { ClusterPki } from '../plan/pki.ts';
import { clusterNodes } from '../plan/spec.ts';
import type { KVMClusterObject } from '../plan/views.ts';
import { clusterDeployments, listWorkloadNodes, liveVmObjects, vmPods } from './observe.ts';
import { Teardown } from './teardown.ts';

const KC = KVMClusters.type;
/** After writing the node indexes: the write comes back through the cache; the delay only bounds a lost event. */
const INDEXES_WRITTEN_MS = 1000;

/**
 * The pass's plan, from the cache; one that takes a node out for an update (not taken back) is
 * made again from the VM pods and Deployments read live. WHY: a VM evicted by a drain a second
 * before was still serving in the cache, and the rollout took a second master out with it (the
 * soak's seed 20261124, busy cores: m3's VM evicted, m2 updated one second later).
 */
export async function planConfirmed(
  observed: ClusterObservation,
  readLive: () => Promise<Pick<ClusterObservation, 'pods' | 'deployments'>>,
): Promise<ClusterPlan> {
  const plan = planCluster(observed);
  if (!plan.update) return plan;
  return planCluster({ ...observed, ...(await readLive()) });
}

export class KVMClusterReconciler {
  private readonly deps: ReconcilerDeps;
  private readonly workloads: WorkloadClients;
  private readonly actions: ClusterActions;
  private readonly teardown: Teardown;
  private readonly pki: PkiKeeper;
  private readonly kubeconfigs: KubeconfigWriter;
  /** What the VM pods run and boot (--kvm-vm-image, --kvm-os-image, --kvm-os-mirror). */
  private readonly vm: VmChoice | undefined;

  constructor(
    deps: ReconcilerDeps,
    workloads: WorkloadClients,
    masterEndpoints: MasterEndpoints,
    vm?: VmChoice,
  ) {
    this.deps = deps;
    this.vm = vm;
    this.workloads = workloads;
    this.pki = new PkiKeeper(deps.client);
    this.kubeconfigs = new KubeconfigWriter(deps.client, masterEndpoints);
    const applier = new ObjectApplier(deps.client);
    this.actions = new ClusterActions(deps, applier);
    this.teardown = new Teardown(deps, applier, workloads);
  }

  async reconcile(req: Request): Promise<Result> {
    const kc = this.deps.cache.get<KVMClusterObject>(KC, req.name, req.namespace);
    if (!kc) return done();
    if (isBeingDeleted(kc)) return this.teardown.run(kc);
    if (await patchFinalizer(this.deps.client, KC, kc, KVM_FINALIZER, 'add')) return done();

    // Indexes first, and written before anything uses them: they name volumes that must not move.
    const current = kc.status?.nodeIndexes ?? {};
    const indexes = nodeIndexes(
      current,
      clusterNodes(kc.spec).map((n) => n.id),
    );
    if (!sameIndexes(indexes, current)) {
      const patch = indexesPatch(current, indexes) as unknown as NonNullable<typeof kc.status>;
      await updateStatusIfChanged(this.deps.client, KC, kc, patch, { write: 'merge' });
      return requeueAfter(INDEXES_WRITTEN_MS);
    }

    const problem = podRangeProblem(kc.spec, indexes);
    if (problem) return this.refuse(kc, problem);

    const now = new Date();
    const pki = await this.keepPki(kc, now);
    const ref = { namespace: kc.metadata.namespace ?? 'default', cluster: kc.metadata.name ?? '' };
    const written = await this.kubeconfigs.ensure(kc, pki);
    if (written === 'written') {
      this.workloads.stale(ref);
      this.deps.events.normal(
        kc,
        'KubeconfigWritten',
        'Write',
        'the workload API server answers through the master Service',
      );
    }
    const workload = await this.workloads.client(ref);
    const nodes = await listWorkloadNodes(workload);
    if (workload && !nodes) this.workloads.stale(ref);
    const observed: ClusterObservation = {
      kc,
      indexes,
      deployments: clusterDeployments(this.deps.cache, ref.cluster),
      pods: vmPods(this.deps.cache, ref.cluster),
      nodes,
      pki,
      now,
      ...(this.vm ? { vm: this.vm } : {}),
    };
    const plan = await planConfirmed(observed, () => liveVmObjects(this.deps.client, ref.cluster));
    await this.act(kc, plan, workload);
    readyNodes.set(ref, plan.status.readyNodes ?? 0);
    return saveStatus(this.deps.client, KC, kc, plan.status, requeueAfter(plan.requeueMs));
  }

  /** A spec no node can be made from: said in Updated and an Event; the next pass is the spec's next change. */
  private async refuse(kc: KVMClusterObject, problem: string): Promise<Result> {
    const condition = {
      type: 'Updated',
      status: 'False' as const,
      reason: 'InvalidSpec',
      message: problem,
      observedGeneration: kc.metadata.generation ?? 0,
    };
    const conditions = setCondition(kc.status?.conditions, condition);
    const status = { ...kc.status, observedGeneration: condition.observedGeneration, conditions };
    const written = await updateStatusIfChanged(this.deps.client, KC, kc, status);
    // Said once: a pass from a cache behind the write meets a conflict, not a second Event.
    if (written === 'written') this.deps.events.warning(kc, 'InvalidSpec', 'Plan', problem);
    return written === 'conflict' ? requeueAfter(CONFLICT_REQUEUE_MS) : done();
  }

  /** The cluster's PKI, with whatever was due issued (and said in an Event and a metric). */
  private async keepPki(kc: KVMClusterObject, now: Date): Promise<ClusterPki> {
    const { pki, plan } = await this.pki.ensure(kc, now.getTime());
    const issued = [...plan.issueCas, ...plan.issue];
    for (const c of issued) certificatesIssued.inc({ cause: c.cause });
    if (issued.length > 0) {
      const causes = [...new Set(issued.map((c) => c.cause))].join(', ');
      this.deps.events.normal(
        kc,
        'CertificatesIssued',
        'Issue',
        `${issued.length} issued (${causes}): ${issued.map((c) => c.name).join(', ')}`,
      );
    }
    return pki;
  }

  /** The plan's steps, in order. */
  private async act(
    kc: KVMClusterObject,
    plan: ClusterPlan,
    workload: KubeClient | undefined,
  ): Promise<void> {
    // The budget first: the evictions below, and drains, count the masters it says serve.
    if (plan.serving?.length) await this.actions.markServing(kc, plan.serving);
    await this.actions.applyShared(plan.desired);
    for (const n of plan.nodes.create) await this.actions.createNode(kc, n);
    for (const r of plan.nodes.remove) await this.actions.removeNode(kc, r);
    if (plan.update && (await this.actions.takeOut(kc, plan.update)))
      await this.actions.updateNode(kc, plan.update);
    if (plan.unhealthy && workload) await this.actions.replaceUnhealthy(kc, plan.unhealthy, workload);
  }
}
