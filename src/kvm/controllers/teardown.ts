// Deleting a KVMCluster, in the anchor's order, one recorded step per pass so
// a restart resumes: Deleting condition; the node Deployments (their VM pods
// go without a drain: the whole cluster is going, anchor 3.15.0); once no VM
// pod is left, PVCs, Services and ConfigMaps, then the namespace; once the
// namespace is gone, the workload control plane goes with it (the hypervisor
// stops it, removes its state and deletes the kubeconfig Secret); the
// finalizer last. A hypervisor that never removes the Secret (none runs) is
// waited for CONTROL_PLANE_WAIT_MS, then the Secret is deleted here.
import { KVM_FINALIZER, KVM_LABELS, KVMClusters } from '../../api/kvm.ts';
import { setCondition } from '../../runtime/conditions.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { hasFinalizer, patchFinalizer } from '../../runtime/finalizers.ts';
import type { ReconcilerDeps } from '../../runtime/host.ts';
import { done, type Result, requeueAfter } from '../../runtime/reconcile.ts';
import { type K8sObject, Namespaces, Secrets } from '../../runtime/resources.ts';
import { CONFLICT_REQUEUE_MS, updateStatusIfChanged } from '../../runtime/status.ts';
import { KINDS, type ObjectApplier } from '../act/apply.ts';
import type { WorkloadClients } from '../act/workload-clients.ts';
import { caSecretName, certificatesSecretName, kubeconfigSecretName, MANAGER } from '../plan/names.ts';
import { NODE_DEPLOYMENT_PROPAGATION } from '../plan/node-changes.ts';
import type { KVMClusterObject } from '../plan/views.ts';
import { clusterDeployments, vmPods } from './observe.ts';

const KC = KVMClusters.type;
const POLL_MS = 1000;
export const CONTROL_PLANE_WAIT_MS = 120_000;

export class Teardown {
  private readonly deps: ReconcilerDeps;
  private readonly applier: ObjectApplier;
  private readonly workloads: WorkloadClients;

  constructor(deps: ReconcilerDeps, applier: ObjectApplier, workloads: WorkloadClients) {
    this.deps = deps;
    this.applier = applier;
    this.workloads = workloads;
  }

  async run(kc: KVMClusterObject): Promise<Result> {
    if (!hasFinalizer(kc, KVM_FINALIZER)) return done();
    const cluster = kc.metadata.name ?? '';
    const ns = kc.metadata.namespace ?? 'default';
    if (!kc.status?.conditions?.some((c) => c.type === 'Deleting' && c.status === 'True')) {
      const conditions = setCondition(kc.status?.conditions, {
        type: 'Deleting',
        status: 'True',
        reason: 'Deleting',
        message: 'removing the VMs, then the namespace and the control plane',
        observedGeneration: kc.metadata.generation ?? 0,
      });
      if (
        (await updateStatusIfChanged(this.deps.client, KC, kc, { ...kc.status, conditions })) === 'conflict'
      )
        return requeueAfter(CONFLICT_REQUEUE_MS);
      this.deps.events.normal(
        kc,
        'Deleting',
        'Delete',
        'deleting the workload cluster: VMs first, no drains',
      );
    }
    for (const d of clusterDeployments(this.deps.cache, cluster)) {
      await this.applier.delete('Deployment', d.metadata?.name ?? '', cluster, NODE_DEPLOYMENT_PROPAGATION);
    }
    if (vmPods(this.deps.cache, cluster).length > 0) return requeueAfter(POLL_MS);

    const namespace = await this.getOrUndefined(Namespaces, cluster);
    if (namespace && namespace.metadata?.labels?.[KVM_LABELS.cluster] === cluster) {
      if (!namespace.metadata.deletionTimestamp) {
        const gone = await this.deleteLabelled(cluster);
        await this.applier.delete('Namespace', cluster);
        this.applier.forgetNamespace(cluster);
        this.deps.events.normal(
          kc,
          'NamespaceDeleted',
          'Delete',
          `deleted ${gone} objects, then namespace ${cluster}`,
        );
      }
      return requeueAfter(POLL_MS);
    }

    const secretName = kubeconfigSecretName(cluster);
    const secret = await this.getOrUndefined(Secrets, secretName, ns);
    // The operator's own kubeconfig goes at once; one a VM runtime wrote is its to remove, waited for first.
    if (secret && secret.metadata?.labels?.[KVM_LABELS.managedBy] === MANAGER) {
      await this.deps.client.delete(Secrets, secretName, ns, { ignoreNotFound: true });
    } else if (secret) {
      const since = Date.parse(
        kc.status?.conditions?.find((c) => c.type === 'Deleting')?.lastTransitionTime ??
          new Date().toISOString(),
      );
      if (Date.now() - since < CONTROL_PLANE_WAIT_MS) return requeueAfter(POLL_MS);
      await this.deps.client.delete(Secrets, secretName, ns, { ignoreNotFound: true });
      this.deps.events.warning(
        kc,
        'ControlPlaneNotRemoved',
        'Delete',
        'no hypervisor removed the control plane; deleted its kubeconfig Secret',
      );
    }
    // The PKI last (its owner reference to the KVMCluster would take it too, once the cluster is gone).
    for (const name of [caSecretName(cluster), certificatesSecretName(cluster)]) {
      await this.deps.client.delete(Secrets, name, ns, { ignoreNotFound: true });
    }
    this.workloads.forget({ namespace: ns, cluster });
    await patchFinalizer(this.deps.client, KC, kc, KVM_FINALIZER, 'remove');
    return done();
  }

  /** PVCs, Services and ConfigMaps of the cluster (the namespace would take them; the anchor's order is kept). */
  private async deleteLabelled(cluster: string): Promise<number> {
    let n = 0;
    for (const kind of ['PersistentVolumeClaim', 'Service', 'ConfigMap']) {
      const type = KINDS[kind];
      if (!type) continue;
      const list = await this.deps.client.list(type, {
        namespace: cluster,
        labelSelector: `${KVM_LABELS.cluster}=${cluster}`,
      });
      for (const o of list.items) {
        await this.applier.delete(kind, o.metadata?.name ?? '', cluster);
        n++;
      }
    }
    return n;
  }

  private async getOrUndefined(
    type: typeof Namespaces,
    name: string,
    namespace?: string,
  ): Promise<K8sObject | undefined> {
    try {
      return await this.deps.client.get(type, name, namespace);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
