// What least-privilege tests share: the RBAC kinds, a service account bound to
// exactly the rules under test, and how many requests the API server refused.
import type { PolicyRule } from '../../src/manifests/rbac.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { registry } from '../../src/runtime/metrics.ts';

const rbac = (kind: string, plural: string, namespaced: boolean) => ({
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  kind,
  plural,
  namespaced,
});
export const ClusterRoles = rbac('ClusterRole', 'clusterroles', false);
export const ClusterRoleBindings = rbac('ClusterRoleBinding', 'clusterrolebindings', false);
export const Roles = rbac('Role', 'roles', true);
export const RoleBindings = rbac('RoleBinding', 'rolebindings', true);
export const ServiceAccounts = {
  group: '',
  version: 'v1',
  kind: 'ServiceAccount',
  plural: 'serviceaccounts',
  namespaced: true,
};

/** Requests this process made that the API server answered 403. */
export async function forbiddenCount(): Promise<number> {
  const m = await registry.getSingleMetric('rest_client_requests_total')?.get();
  return m?.values.filter((v) => v.labels.code === '403').reduce((a, v) => a + v.value, 0) ?? 0;
}

/**
 * Creates service account `sa` in `namespace` bound to a ClusterRole `name` of exactly
 * `rules`; returns the user name to impersonate and the groups it belongs to.
 */
export async function serviceAccountWithClusterRole(
  admin: KubeClient,
  namespace: string,
  sa: string,
  name: string,
  rules: PolicyRule[],
): Promise<{
  user: string;
  groups: string[];
  subjects: { kind: string; name: string; namespace: string }[];
}> {
  await admin.create(ServiceAccounts, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: sa, namespace },
  });
  const subjects = [{ kind: 'ServiceAccount', name: sa, namespace }];
  await admin.create(ClusterRoles, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name },
    rules,
  });
  await admin.create(ClusterRoleBindings, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects,
  });
  return {
    user: `system:serviceaccount:${namespace}:${sa}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
    subjects,
  };
}

/** A binding of cluster-admin to the caller's own group: what no least-privilege operator may create. */
export function selfGrant(name: string): Record<string, unknown> {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccounts' }],
  };
}
