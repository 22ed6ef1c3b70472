// What the bare-metal controllers may do, as `make manifests` merges it into the
// manager's ClusterRole: declarations the capability lists without loading the
// controllers (src/capability.ts).
import { METAL3_GROUP } from '../api/baremetal.ts';
import { VIRTUAL_HOSTS_GROUP } from '../api/virtualhosts.ts';
import type { PolicyRule } from '../runtime/policy-rule.ts';

export const hostControllerRbac: PolicyRule[] = [
  { apiGroups: ['metal3.io'], resources: ['baremetalhosts'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['metal3.io'], resources: ['baremetalhosts/status'], verbs: ['get', 'update', 'patch'] },
  { apiGroups: ['metal3.io'], resources: ['baremetalhosts/finalizers'], verbs: ['update'] },
  // BMC passwords: read by name, labelled environment.metal3.io=baremetal as metal3 does, and
  // only those so labelled listed and watched (a fixed Secret wakes its hosts).
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'patch'] },
];

export const virtualHostPoolRbac: PolicyRule[] = [
  {
    apiGroups: [VIRTUAL_HOSTS_GROUP],
    resources: ['virtualhostpools'],
    verbs: ['get', 'list', 'watch', 'patch', 'update'],
  },
  {
    apiGroups: [VIRTUAL_HOSTS_GROUP],
    resources: ['virtualhostpools/status'],
    verbs: ['get', 'patch', 'update'],
  },
  { apiGroups: [VIRTUAL_HOSTS_GROUP], resources: ['virtualhostpools/finalizers'], verbs: ['update'] },
  {
    apiGroups: [VIRTUAL_HOSTS_GROUP],
    resources: ['ippools'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
  },
  {
    apiGroups: [METAL3_GROUP],
    resources: ['baremetalhosts'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  },
  // get: a flavor's networkDataTemplate may live in any namespace.
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  {
    apiGroups: ['apps'],
    resources: ['daemonsets'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  // patch: the network-values annotation.
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] },
  // The BMC fleet's endpoint, published in kube-system/nodewarden-simulated-bmc.
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
  // The libvirt VM host agents' access: a ServiceAccount per pool, bound in kube-system to one
  // Role that lets them get and patch the Secret they publish in (rights the controller holds).
  { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['get', 'create', 'patch'] },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: ['get', 'create', 'patch', 'delete'],
  },
];
