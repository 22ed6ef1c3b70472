// What each upgrade controller may do, as `make manifests` merges it into the
// manager's ClusterRole. Declarations only, apart from the controllers' code:
// the capability lists them without loading a controller (src/capability.ts).
import type { PolicyRule } from '../runtime/policy-rule.ts';
import { Upgrade } from './names.ts';

export const scalingGroupRbac: PolicyRule[] = [
  { apiGroups: [Upgrade.group], resources: ['scalinggroups'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [Upgrade.group], resources: ['scalinggroups/status'], verbs: ['get', 'update', 'patch'] },
  { apiGroups: [Upgrade.group], resources: ['nodeversions'], verbs: ['get', 'list', 'watch'] },
];

export const pendingNodeRbac: PolicyRule[] = [
  {
    apiGroups: [Upgrade.group],
    resources: ['pendingnodes'],
    verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
  },
  { apiGroups: [Upgrade.group], resources: ['pendingnodes/status'], verbs: ['get', 'update', 'patch'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'delete'] },
];

export const autoscalingRbac: PolicyRule[] = [
  { apiGroups: [Upgrade.group], resources: ['autoscalingstrategies'], verbs: ['get', 'list', 'watch'] },
  {
    apiGroups: [Upgrade.group],
    resources: ['autoscalingstrategies/status'],
    verbs: ['get', 'update', 'patch'],
  },
  { apiGroups: [Upgrade.group], resources: ['scalinggroups'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch', 'update'] },
];

export const discoveryRbac: PolicyRule[] = [
  {
    apiGroups: [Upgrade.group],
    resources: ['scalinggroups'],
    verbs: ['get', 'list', 'watch', 'create', 'delete'],
  },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
];
