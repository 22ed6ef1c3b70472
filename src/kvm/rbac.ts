// What the KVM controllers may do, declared with the capability (make
// manifests merges it into the manager's ClusterRole) apart from their code.
import type { PolicyRule } from '../runtime/policy-rule.ts';

export const kvmClusterRbac: PolicyRule[] = [
  { apiGroups: ['kvm.nodewarden.dev'], resources: ['kvmclusters'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['kvm.nodewarden.dev'], resources: ['kvmclusters/status'], verbs: ['get', 'update', 'patch'] },
  { apiGroups: ['kvm.nodewarden.dev'], resources: ['kvmclusters/finalizers'], verbs: ['update'] },
  // The cluster's namespace: applied, read back, deleted last. A server-side apply that makes an
  // object needs create as well as patch (the API server checks both): without it the operator
  // installed by Helm could make no cluster at all (found by running it in a pod, 2026-11-27).
  { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'create', 'patch', 'delete'] },
  // What lives in it, server-side applied; listed by label only while the cluster is deleted.
  {
    apiGroups: [''],
    resources: ['configmaps', 'services', 'serviceaccounts', 'persistentvolumeclaims'],
    verbs: ['get', 'list', 'create', 'patch', 'delete'],
  },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: ['get', 'create', 'patch', 'delete'],
  },
  {
    apiGroups: ['apps'],
    resources: ['deployments'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  },
  // The masters' disruption budget: server-side applied (the namespace takes it when the cluster goes).
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['create', 'patch'] },
  // VM pods: watched, replaced when unhealthy, their drain finalizer and progress annotations written.
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  // A master is taken out for an update by evicting its VM pod through the masters' budget.
  { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
  // Next to each KVMCluster, read by name (never listed or watched): its PKI (<id>-ca, <id>-certificates)
  // and its kubeconfig, written by server-side apply (create, then patch), deleted with the cluster.
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'patch', 'delete'] },
];

export const vmDrainRbac: PolicyRule[] = [
  { apiGroups: ['kvm.nodewarden.dev'], resources: ['kvmclusters'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
];
