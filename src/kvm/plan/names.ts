// The names and labels of what a KVMCluster is made of, each from the one
// function that makes it: whoever creates an object and whoever deletes it
// later asks here, and never rebuilds a name from another.
import { KVM_LABELS, type NodeRole } from '../../api/kvm.ts';

/** The Deployment (and ConfigMap) name of a node, as the anchor names them. */
export function nodeObjectName(role: NodeRole, id: string): string {
  return `${role}-${id}`;
}

/** The PersistentVolumeClaim of a master's etcd data, when the spec asks for persistent volumes. */
export function etcdClaimName(id: string): string {
  return `etcd-${id}`;
}

/** The Secret, next to the KVMCluster, the first master VM writes the workload kubeconfig into. */
export function kubeconfigSecretName(cluster: string): string {
  return `${cluster}-kubeconfig`;
}

/** The manager named on everything made for a cluster. */
export const MANAGER = 'nodewarden';

/** Labels on everything made for a cluster. */
export function clusterLabels(cluster: string): Record<string, string> {
  return { [KVM_LABELS.cluster]: cluster, [KVM_LABELS.managedBy]: MANAGER };
}

/** An object's metadata in the cluster's namespace, with the cluster's labels and `extra`. */
export function objectMeta(cluster: string, name: string, extra: Record<string, string> = {}) {
  return { name, namespace: cluster, labels: { ...clusterLabels(cluster), ...extra } };
}

/** The Secret, next to the KVMCluster, holding the cluster's CA, service-account keys and bootstrap token. */
export function caSecretName(cluster: string): string {
  return `${cluster}-ca`;
}

/** The Secret, next to the KVMCluster, holding the cluster's certificates and their keys (<name>.crt, <name>.key). */
export function certificatesSecretName(cluster: string): string {
  return `${cluster}-certificates`;
}
