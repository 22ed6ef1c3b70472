// KVMClusterReconciler: observe (cache + the workload cluster's Nodes), plan
// (node indexes, desired objects, the next node to update, the unhealthy VMs
// to replace), act, write status. Creation makes every node at once; removal
// deletes a node's Deployment and its VM pod's finalizer drains it first
// (vm-pods.ts); updates go one node at a time (rollout.ts). Deletion is
// ordered and lives in teardown.ts.
import { KVM_FINALIZER, KVMClusters } from '../api/kvm.ts';
import type { KubeClient } from '../runtime/client.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { isBeingDeleted, patchFinalizer } from '../runtime/finalizers.ts';
import type { CacheReader } from '../runtime/host.ts';
import { done, type Request, type Result, requeueAfter } from '../runtime/reconcile.ts';
import { type K8sObject, Nodes, Pods } from '../runtime/resources.ts';
import { CONFLICT_REQUEUE_MS, updateStatusIfChanged } from '../runtime/status.ts';
import { ObjectApplier } from './apply.ts';
import { type DesiredCluster, desiredCluster, kubeconfigSecretName } from './desired.ts';
import { nodeUpdates, readyNodes, unhealthyReplacements } from './metrics.ts';
import { nodeIndexes } from './node-indexes.ts';
import {
  clusterDeployments,
  deploymentView,
  type KVMClusterObject,
  listWorkloadNodes,
  observeVms,
  unhealthyViews,
  vmPods,
  type WorkloadNode,
} from './observe.ts';
import { planRollout, type RolloutDecision } from './rollout.ts';
import { unhealthyPolicy } from './spec.ts';
import { buildStatus, clusterReady } from './status.ts';
import { Teardown } from './teardown.ts';
import { planUnhealthy } from './unhealthy.ts';
import type { WorkloadClients } from './workload.ts';

const KC = KVMClusters.type;
/** While nodes boot, drain or roll: look again this often (workload Nodes are polled, not watched). */
const BUSY_MS = 3000;
/** A steady cluster: still look, to notice nodes turning NotReady. */
const STEADY_MS = 30_000;

export class KVMClusterReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly events: EventRecorder;
  private readonly workloads: WorkloadClients;
  private readonly applier: ObjectApplier;
  private readonly teardown: Teardown;

  constructor(client: KubeClient, cache: CacheReader, events: EventRecorder, workloads: WorkloadClients) {
    this.client = client;
    this.cache = cache;
    this.events = events;
    this.workloads = workloads;
    this.applier = new ObjectApplier(client);
    this.teardown = new Teardown(client, cache, events, this.applier, workloads);
  }

  async reconcile(req: Request): Promise<Result> {
    const kc = this.cache.get<KVMClusterObject>(KC, req.name, req.namespace);
    if (!kc) return done();
    if (isBeingDeleted(kc)) return this.teardown.run(kc);
    if (await patchFinalizer(this.client, KC, kc, KVM_FINALIZER, 'add')) return done();
    const cluster = kc.metadata.name ?? '';
    const ref = { namespace: kc.metadata.namespace ?? 'default', cluster };

    // Indexes first, and written before anything uses them: they name volumes that must not move.
    const ids = [...kc.spec.masters, ...(kc.spec.workers ?? [])].map((n) => n.id);
    const indexes = nodeIndexes(kc.status?.nodeIndexes ?? {}, ids);
    if (!sameIndexes(indexes, kc.status?.nodeIndexes ?? {})) {
      await this.persistIndexes(kc, indexes);
      // The write comes back through the cache and reconciles again; the delay only bounds a lost event.
      return requeueAfter(1000);
    }
    const desired = desiredCluster(kc, indexes);
    await this.applyShared(desired);
    const deployments = clusterDeployments(this.cache, cluster);
    const wanted = new Set(desired.nodes.map((n) => n.name));
    await this.syncNodes(kc, desired, deployments);

    const workloadClient = await this.workloads.client(ref);
    const nodes = await listWorkloadNodes(workloadClient);
    if (workloadClient && !nodes) this.workloads.stale(ref);
    const pods = vmPods(this.cache, cluster);

    const vms = observeVms(pods, nodes);
    const views = deployments.filter((d) => wanted.has(d.metadata?.name ?? '')).map(deploymentView);
    const decision = planRollout({
      desired: desired.nodes.map((n) => ({ name: n.name, role: n.node.role, specHash: n.specHash })),
      current: views,
      notReadyInWorkload: new Set(
        vms.filter((v) => v.terminating || !v.node?.ready).map((v) => v.deployment),
      ),
      masterUnschedulable: (nodes ?? []).some((n) => n.master && n.unschedulable),
      workloadReachable: nodes !== undefined,
    });
    if (decision.kind === 'update') {
      const n = desired.nodes.find((x) => x.name === decision.name);
      if (n) {
        await this.applier.apply(n.configMap);
        await this.applier.apply(n.deployment);
        nodeUpdates.inc({ role: n.node.role });
        this.events.normal(
          kc,
          'NodeUpdating',
          'Update',
          `${n.name}: a fresh VM on release ${kc.spec.release.version}`,
        );
      }
    }
    const lastReplacement = await this.replaceUnhealthy(kc, pods, nodes, workloadClient);

    const hashes = new Map(desired.nodes.map((n) => [n.name, n.specHash]));
    const status = buildStatus({
      kc,
      indexes,
      desired: hashes,
      vms,
      outdatedDeployments: views.filter((d) => d.specHash !== hashes.get(d.name)).length,
      ...(decision.kind === 'wait' ? { rolloutWait: waitMessage(decision) } : {}),
      kubeconfigSecret: `${ref.namespace}/${kubeconfigSecretName(cluster)}`,
      ...(lastReplacement ? { lastUnhealthyReplacement: lastReplacement } : {}),
      now: new Date(),
    });
    readyNodes.set({ namespace: ref.namespace, cluster }, status.readyNodes ?? 0);
    if ((await updateStatusIfChanged(this.client, KC, kc, status)) === 'conflict')
      return requeueAfter(CONFLICT_REQUEUE_MS);
    const steady =
      decision.kind === 'upToDate' &&
      clusterReady({ kc, desired: hashes, vms }) &&
      vms.every((v) => !v.terminating);
    return requeueAfter(steady ? STEADY_MS : BUSY_MS);
  }

  /** Written before anything uses them; a merge patch keeps keys it does not name, so gone ids are written as null. */
  private async persistIndexes(kc: KVMClusterObject, indexes: Record<string, number>): Promise<void> {
    const current = kc.status?.nodeIndexes ?? {};
    const dropped = Object.fromEntries(
      Object.keys(current)
        .filter((k) => !(k in indexes))
        .map((k) => [k, null]),
    );
    const patch = { nodeIndexes: { ...dropped, ...indexes } } as unknown as NonNullable<typeof kc.status>;
    await updateStatusIfChanged(this.client, KC, kc, patch, { write: 'merge' });
  }

  /** Every missing node is created at once; a node dropped from the spec loses its Deployment (its pod drains first). */
  private async syncNodes(
    kc: KVMClusterObject,
    desired: DesiredCluster,
    deployments: K8sObject[],
  ): Promise<void> {
    const cluster = kc.metadata.name ?? '';
    const existing = new Set(deployments.map((d) => d.metadata?.name ?? ''));
    const wanted = new Set(desired.nodes.map((n) => n.name));
    for (const n of desired.nodes.filter((n) => !existing.has(n.name))) {
      if (n.pvc) await this.applier.apply(n.pvc);
      await this.applier.apply(n.configMap);
      await this.applier.apply(n.deployment);
      this.events.normal(
        kc,
        'NodeCreated',
        'Create',
        `${n.node.role} ${n.node.id} (index ${n.index}) created`,
      );
    }
    for (const name of [...existing].filter((n) => !wanted.has(n))) {
      // The VM pod's finalizer drains the workload node before the VM goes (vm-pods.ts).
      await this.applier.delete('Deployment', name, cluster);
      await this.applier.delete('ConfigMap', name, cluster);
      if (name.startsWith('master-'))
        await this.applier.delete('PersistentVolumeClaim', `etcd-${name.slice(7)}`, cluster);
      this.events.normal(
        kc,
        'NodeRemoved',
        'Delete',
        `${name} removed from the spec; its node is drained first`,
      );
    }
  }

  private async applyShared(d: DesiredCluster): Promise<void> {
    await this.applier.apply(d.namespace);
    await this.applier.apply(d.serviceAccount);
    await this.applier.apply(d.role);
    await this.applier.apply(d.roleBinding);
    for (const s of d.services) await this.applier.apply(s);
  }

  /** Replaces the VMs of unhealthy nodes; removes workload Nodes no VM accounts for. Returns the last replacement time. */
  private async replaceUnhealthy(
    kc: KVMClusterObject,
    pods: ReturnType<typeof vmPods>,
    nodes: WorkloadNode[] | undefined,
    workload: KubeClient | undefined,
  ): Promise<string | undefined> {
    const last = kc.status?.lastUnhealthyReplacement;
    if (!nodes || !workload) return last;
    const now = Date.now();
    const plan = planUnhealthy({
      policy: unhealthyPolicy(kc.spec),
      now,
      vms: unhealthyViews(pods, nodes),
      workloadNodes: nodes,
      ...(last ? { lastReplacementMs: Date.parse(last) } : {}),
    });
    for (const name of plan.removeNodes) {
      await workload.delete(Nodes, name, undefined, { ignoreNotFound: true });
      this.events.normal(kc, 'NodeRemoved', 'Cleanup', `workload node ${name} has no VM any more; removed`);
    }
    if (plan.replace.length === 0) return last;
    for (const r of plan.replace) {
      await this.client.delete(Pods, r.pod, kc.metadata.name, { ignoreNotFound: true });
      unhealthyReplacements.inc({ cause: r.cause });
      this.events.warning(
        kc,
        'UnhealthyNodeReplaced',
        'Replace',
        `${r.pod} (${r.role}) ${r.cause === 'notReady' ? 'NotReady' : 'never joined'} for ${Math.round(r.forMs / 1000)}s: its VM is replaced`,
      );
    }
    return new Date(now).toISOString();
  }
}

/** Equal maps whatever their key order (the API server's JSON need not keep ours). */
function sameIndexes(a: Record<string, number>, b: Record<string, number>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

function waitMessage(d: Extract<RolloutDecision, { kind: 'wait' }>): string {
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
