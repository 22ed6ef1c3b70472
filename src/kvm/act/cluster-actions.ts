// Carrying out a KVMCluster's plan (plan/cluster.ts), one step per method,
// each with its Event and metric: the shared objects applied, new nodes
// created, removed nodes' objects deleted, the next node updated, workload
// Nodes no VM accounts for removed, unhealthy VMs replaced. Nothing here
// decides; every choice was made by the plan.
import { KVM_ANNOTATIONS, KVM_LABELS } from '../../api/kvm.ts';
import { VM_CLUSTER_LABEL } from '../../api/vm-image.ts';
import { evictPod } from '../../drain/evict.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { isBeingDeleted } from '../../runtime/finalizers.ts';
import type { ReconcilerDeps } from '../../runtime/host.ts';
import { Nodes, Pods } from '../../runtime/resources.ts';
import { nodeUpdates, unhealthyReplacements } from '../metrics.ts';
import type { DesiredCluster } from '../plan/desired.ts';
import type { DesiredNode } from '../plan/desired-node.ts';
import type { NodeRemoval } from '../plan/node-changes.ts';
import type { ServingChange } from '../plan/serving.ts';
import type { UnhealthyPlan } from '../plan/unhealthy.ts';
import type { KVMClusterObject, PodObject } from '../plan/views.ts';
import type { ObjectApplier } from './apply.ts';

export class ClusterActions {
  private readonly deps: ReconcilerDeps;
  private readonly applier: ObjectApplier;

  constructor(deps: ReconcilerDeps, applier: ObjectApplier) {
    this.deps = deps;
    this.applier = applier;
  }

  async applyShared(d: DesiredCluster): Promise<void> {
    await this.applier.apply(d.namespace);
    await this.applier.apply(d.serviceAccount);
    await this.applier.apply(d.role);
    await this.applier.apply(d.roleBinding);
    for (const s of d.services) await this.applier.apply(s);
    await this.applier.apply(d.mastersBudget);
  }

  async createNode(kc: KVMClusterObject, n: DesiredNode): Promise<void> {
    if (n.pvc) await this.applier.apply(n.pvc);
    await this.applier.apply(n.configMap);
    await this.applier.applyFresh(n.deployment);
    this.deps.events.normal(
      kc,
      'NodeCreated',
      'Create',
      `${n.node.role} ${n.node.id} (index ${n.index}) created`,
    );
  }

  async removeNode(kc: KVMClusterObject, r: NodeRemoval): Promise<void> {
    // The VM pod's finalizer drains the workload node before the VM goes (controllers/vm-drain.ts).
    for (const o of r.objects) await this.applier.delete(o.kind, o.name, kc.metadata.name, o.propagation);
    this.deps.events.normal(
      kc,
      'NodeRemoved',
      'Delete',
      `${r.name} removed from the spec; its node is drained first`,
    );
  }

  /**
   * Takes a node out for its update; whether it may be updated now. A worker always may. A master's
   * VM pod is evicted through the masters' disruption budget, as a drain's eviction is, so the API
   * server grants one of the two (a look at the budget before the update was overtaken by a drain's
   * eviction 470 ms later: seed 424242, busy cores). The budget counts only the masters that serve
   * (plan/serving.ts), so a replacement pod that reads Ready before its VM serves frees no second one.
   */
  async takeOut(kc: KVMClusterObject, n: DesiredNode): Promise<boolean> {
    if (n.node.role !== 'master') return true;
    const cluster = kc.metadata.name ?? '';
    const own = await this.deps.client.list<PodObject>(Pods, {
      namespace: cluster,
      labelSelector: `${VM_CLUSTER_LABEL}=${cluster},${KVM_LABELS.nodeId}=${n.node.id}`,
    });
    for (const pod of own.items.filter((p) => !isBeingDeleted(p))) {
      const name = pod.metadata?.name ?? '';
      await this.patchPodMeta(name, cluster, {
        annotations: { [KVM_ANNOTATIONS.rolloutEviction]: new Date().toISOString() },
      });
      const outcome = await evictPod(this.deps.client, pod);
      if (outcome.result === 'evicted' || outcome.result === 'gone') continue;
      await this.patchPodMeta(name, cluster, { annotations: { [KVM_ANNOTATIONS.rolloutEviction]: null } });
      this.deps.log.info(
        { node: n.name, outcome },
        'master update waits: its disruption budget allows none now',
      );
      return false;
    }
    return true;
  }

  /** Puts on or takes off the serving label the masters' disruption budget counts (plan/serving.ts). */
  async markServing(kc: KVMClusterObject, changes: readonly ServingChange[]): Promise<void> {
    for (const c of changes)
      await this.patchPodMeta(c.pod, kc.metadata.name ?? '', {
        labels: { [KVM_LABELS.serving]: c.serving ? 'true' : null },
      });
  }

  /** One merge patch of a VM pod's labels or annotations (null takes a key off); a pod gone is fine. */
  private async patchPodMeta(
    pod: string,
    namespace: string,
    meta: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> },
  ): Promise<void> {
    await this.deps.client
      .patch(Pods, pod, namespace, { metadata: meta }, { type: 'merge' })
      .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
  }

  /**
   * A fresh VM on the desired spec: the Deployment's new template replaces its pod. Written whatever
   * digest is held: the rollout read the server's Deployment (live) as not on the desired spec.
   * WHY: a held digest skips the write when someone wrote the Deployment after this replica did
   * (a deposed leader's write still in flight through a slow network lands late); the evicted pod
   * then comes back on the old template and each pass takes that master out again. The likeliest
   * reading of seed 424242 at 200 nodes: one master's pods, all of one template, taken three
   * times in 4 s by a replica just made leader, under a partition that delays the old leader.
   */
  async updateNode(kc: KVMClusterObject, n: DesiredNode): Promise<void> {
    await this.applier.applyFresh(n.configMap);
    await this.applier.applyFresh(n.deployment);
    nodeUpdates.inc({ role: n.node.role });
    this.deps.events.normal(
      kc,
      'NodeUpdating',
      'Update',
      `${n.name}: a fresh VM on release ${kc.spec.release.version}`,
    );
  }

  /** Removes the workload Nodes no VM accounts for, then deletes the pods of the VMs to replace. */
  async replaceUnhealthy(kc: KVMClusterObject, plan: UnhealthyPlan, workload: KubeClient): Promise<void> {
    for (const name of plan.removeNodes) {
      await workload.delete(Nodes, name, undefined, { ignoreNotFound: true });
      this.deps.events.normal(
        kc,
        'NodeRemoved',
        'Cleanup',
        `workload node ${name} has no VM any more; removed`,
      );
    }
    for (const r of plan.replace) {
      await this.deps.client.delete(Pods, r.pod, kc.metadata.name, { ignoreNotFound: true });
      unhealthyReplacements.inc({ cause: r.cause });
      this.deps.events.warning(
        kc,
        'UnhealthyNodeReplaced',
        'Replace',
        `${r.pod} (${r.role}) ${r.cause === 'notReady' ? 'NotReady' : 'never joined'} for ${Math.round(r.forMs / 1000)}s: its VM is replaced`,
      );
    }
  }
}
