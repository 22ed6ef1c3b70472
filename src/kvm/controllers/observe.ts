// What a KVMCluster's reconcile reads, gathered in one place: its VM pods and
// node Deployments from the management cluster's cache, and its Nodes from
// the workload cluster (one list per pass; a cluster that does not answer is
// "unreachable", and nothing that depends on it is decided).
import { KVM_LABELS } from '../../api/kvm.ts';
import { VM_CLUSTER_LABEL } from '../../api/vm-image.ts';
import type { KubeClient } from '../../runtime/client.ts';
import type { CacheReader } from '../../runtime/host.ts';
import { Deployments, Nodes, Pods } from '../../runtime/resources.ts';
import {
  type DeploymentObject,
  type NodeObject,
  type PodObject,
  type WorkloadNode,
  workloadNodeView,
} from '../plan/views.ts';

export function vmPods(cache: CacheReader, cluster: string): PodObject[] {
  return cache.list<PodObject>(Pods, { namespace: cluster, labelSelector: `${VM_CLUSTER_LABEL}=${cluster}` });
}

export function clusterDeployments(cache: CacheReader, cluster: string): DeploymentObject[] {
  return cache.list<DeploymentObject>(Deployments, {
    namespace: cluster,
    labelSelector: `${KVM_LABELS.cluster}=${cluster}`,
  });
}

/** The cluster's VM pods and node Deployments as the API server holds them now (one LIST each). */
export async function liveVmObjects(
  client: KubeClient,
  cluster: string,
): Promise<{ pods: PodObject[]; deployments: DeploymentObject[] }> {
  const [pods, deployments] = await Promise.all([
    client.list<PodObject>(Pods, { namespace: cluster, labelSelector: `${VM_CLUSTER_LABEL}=${cluster}` }),
    client.list<DeploymentObject>(Deployments, {
      namespace: cluster,
      labelSelector: `${KVM_LABELS.cluster}=${cluster}`,
    }),
  ]);
  return { pods: pods.items, deployments: deployments.items };
}

/** The workload cluster's Nodes of this cluster, or undefined when it does not answer. */
export async function listWorkloadNodes(client: KubeClient | undefined): Promise<WorkloadNode[] | undefined> {
  if (!client) return undefined;
  try {
    const list = await client.list<NodeObject>(Nodes);
    return list.items.map(workloadNodeView);
  } catch {
    return undefined;
  }
}
