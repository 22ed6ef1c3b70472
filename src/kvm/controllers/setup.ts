// Wiring of the KVM controllers: the cluster reconciler (its KVMCluster, the
// node Deployments and VM pods of its namespace) and the VM pod drain
// reconciler, sharing one set of workload-cluster clients. Their RBAC is
// declared with the capability (../rbac.ts).
import { KVM_LABELS, type KVMCluster, KVMClusters } from '../../api/kvm.ts';
import { VM_CLUSTER_LABEL } from '../../api/vm-image.ts';
import { type ControllerHost, reconcilerDeps } from '../../runtime/host.ts';
import type { Request } from '../../runtime/reconcile.ts';
import { Deployments, type K8sObject, Pods } from '../../runtime/resources.ts';
import { WorkloadClients } from '../act/workload-clients.ts';
import type { KvmOptions } from '../options.ts';
import { KVMClusterReconciler } from './cluster.ts';
import { VmPodReconciler } from './vm-drain.ts';

const KC = KVMClusters.type;
const EVENTS = 'nodewarden.dev/kvm';

/** The cluster a VM pod or node Deployment belongs to, as a request for its KVMCluster. */
function clusterOf(host: ControllerHost) {
  return (obj: K8sObject): Request[] => {
    const id = obj.metadata?.labels?.[VM_CLUSTER_LABEL] ?? obj.metadata?.labels?.[KVM_LABELS.cluster];
    if (!id) return [];
    return host.cache
      .list<KVMCluster & K8sObject>(KC)
      .filter((c) => c.metadata.name === id)
      .map((c) => ({ name: id, namespace: c.metadata.namespace }));
  };
}

// One set of workload clients per operator (both controllers of a manager share its client).
const clientsByManager = new WeakMap<object, WorkloadClients>();
function workloadClients(host: ControllerHost): WorkloadClients {
  let c = clientsByManager.get(host.client);
  if (!c) {
    c = new WorkloadClients(host.client);
    clientsByManager.set(host.client, c);
  }
  return c;
}

export function setupKVMClusters(host: ControllerHost, options: KvmOptions): void {
  const r = new KVMClusterReconciler(
    reconcilerDeps(host, EVENTS),
    workloadClients(host),
    options.masterEndpoints,
    options.vm,
  );
  host
    .controller('kvmcluster')
    .for(KC)
    .watches(Deployments, clusterOf(host), { labelSelector: KVM_LABELS.cluster })
    .watches(Pods, clusterOf(host), { labelSelector: VM_CLUSTER_LABEL })
    .withWorkers(4)
    .complete((req) => r.reconcile(req));
}

export function setupVmDrains(host: ControllerHost): void {
  host.cache.informer(KC);
  const r = new VmPodReconciler(reconcilerDeps(host, EVENTS), workloadClients(host));
  host
    .controller('kvm-vm-drain')
    .for(Pods, { labelSelector: VM_CLUSTER_LABEL })
    .withWorkers(8)
    .complete((req) => r.reconcile(req));
}
