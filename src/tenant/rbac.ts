// What the TenantCluster controller may do, as `make manifests` merges it into
// the manager's ClusterRole: a declaration the capability lists without loading
// the controller (src/capability.ts).
import type { PolicyRule } from '../runtime/policy-rule.ts';

export const tenantControllerRbac: PolicyRule[] = [
  {
    apiGroups: ['baremetal.nodewarden.dev'],
    resources: ['tenantclusters'],
    verbs: ['get', 'list', 'watch', 'patch'],
  },
  {
    apiGroups: ['baremetal.nodewarden.dev'],
    resources: ['tenantclusters/status'],
    verbs: ['get', 'update', 'patch'],
  },
  // Owner references that block deletion need this where OwnerReferencesPermissionEnforcement runs.
  { apiGroups: ['baremetal.nodewarden.dev'], resources: ['tenantclusters/finalizers'], verbs: ['update'] },
  // Claims are label patches; hosts are never created, deleted or given a status by us.
  { apiGroups: ['metal3.io'], resources: ['baremetalhosts'], verbs: ['get', 'list', 'watch', 'patch'] },
  // Network data, BMC logins, node SSH keys: read one by name, never listed or watched.
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'patch', 'delete'] },
  // The support services, server-side applied (patch creates), removed by owner references with
  // the cluster, and by name when the spec drops one.
  { apiGroups: [''], resources: ['configmaps', 'services'], verbs: ['get', 'patch', 'delete'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'patch', 'delete'] },
  // The services' pods, watched (by label) to say in status why one is not running.
  { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
];
