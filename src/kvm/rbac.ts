// What the KVM controllers may do, declared with the capability (make
// manifests merges it into the manager's ClusterRole) apart from their code.
import type { PolicyRule } from '../runtime/policy-rule.ts';

export const kvmClusterRbac: PolicyRule[] = [
  { apiGroups: ['kvm.nodewarden.dev'], resources: ['kvmclusters'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['kvm.nodewarden.dev'], resources: ['kvmclusters/status'], verbs: ['get', 'update', 'patch'] },
  { apiGroups: ['kvm.nodewarden.dev'], resources: ['kvmclusters/finalizers'], verbs: ['update'] },
  // The cluster's namespace: applied, read back, deleted last.
  { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'patch', 'delete'] },
  // What lives in it, server-side applied; listed by label only while the cluster is deleted.
  {
    apiGroups: [''],
    resources: ['configmaps', 'services', 'serviceaccounts', 'persistentvolumeclaims'],
    verbs: ['get', 'list', 'patch', 'delete'],
  },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: ['get', 'patch', 'delete'],
  },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  // The masters' disruption budget: server-side applied (the namespace takes it when the cluster goes).
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['patch'] },
  // VM pods: watched, replaced when unhealthy, their drain finalizer and progress annotations written.
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  // A master is taken out for an update by evicting its VM pod through the masters' budget.
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  // Next to each KVMCluster, read by name (never listed or watched): its PKI (<id>-ca, <id>-certificates)
  // and its kubeconfig, written by server-side apply (patch), deleted with the cluster.
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'patch', 'delete'] },
];

export const vmDrainRbac: PolicyRule[] = [
  { apiGroups: ['kvm.nodewarden.dev'], resources: ['kvmclusters'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
];
