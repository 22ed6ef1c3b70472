// The rolling-upgrade capability as the operator sees it: five controllers,
// each with the RBAC it needs. All of them need a cloud to talk to.
import type { ControllerRegistration } from '../operator/controllers.ts';
import { autoscalingRbac, setupAutoscalingStrategies } from './controllers/autoscaling.ts';
import { discoveryRbac, setupScalingGroupDiscovery } from './controllers/discovery.ts';
import { setupNodeVersions } from './controllers/nodeversion.ts';
import { pendingNodeRbac, setupPendingNodes } from './controllers/pendingnode.ts';
import { scalingGroupRbac, setupScalingGroups } from './controllers/scalinggroup.ts';

const G = 'upgrade.nodewarden.dev';

function cloudOf(name: string, cloud: Parameters<ControllerRegistration['setup']>[1]['cloud']) {
  if (!cloud) throw new Error(`controller ${name} needs a cloud provider (--cloud-provider)`);
  return cloud;
}

export const nodeVersionController: ControllerRegistration = {
  name: 'nodeversion',
  description: 'NodeVersion: replace nodes on an outdated image, within the surge and unavailability budgets',
  needsCloud: true,
  rbac: [
    { apiGroups: [G], resources: ['nodeversions'], verbs: ['get', 'list', 'watch', 'patch'] },
    // Owner references that block deletion need this where OwnerReferencesPermissionEnforcement runs.
    { apiGroups: [G], resources: ['nodeversions/finalizers'], verbs: ['update'] },
    { apiGroups: [G], resources: ['nodeversions/status'], verbs: ['get', 'update', 'patch'] },
    { apiGroups: [G], resources: ['scalinggroups'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [G], resources: ['pendingnodes'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
    { apiGroups: [G], resources: ['autoscalingstrategies'], verbs: ['get', 'list', 'watch', 'patch'] },
    {
      apiGroups: ['maintenance.nodewarden.dev'],
      resources: ['nodemaintenances'],
      verbs: ['get', 'list', 'watch', 'create', 'delete'],
    },
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch', 'delete'] },
  ],
  setup(mgr, options) {
    setupNodeVersions(mgr, { cloud: cloudOf('nodeversion', options.cloud) });
  },
};

export const upgradeControllers: ControllerRegistration[] = [
  nodeVersionController,
  {
    name: 'scalinggroup',
    description: "ScalingGroup: switch the cloud group's launch image to the NodeVersion's",
    needsCloud: true,
    rbac: scalingGroupRbac,
    setup: (mgr, o) => setupScalingGroups(mgr, { cloud: cloudOf('scalinggroup', o.cloud) }),
  },
  {
    name: 'pendingnode',
    description: 'PendingNode: follow a node joining or leaving until it does or its deadline passes',
    needsCloud: true,
    rbac: pendingNodeRbac,
    setup: (mgr, o) => setupPendingNodes(mgr, { cloud: cloudOf('pendingnode', o.cloud) }),
  },
  {
    name: 'autoscalingstrategy',
    description: 'AutoscalingStrategy: scale the cluster autoscaler and build its node-group arguments',
    rbac: autoscalingRbac,
    setup: (mgr) => setupAutoscalingStrategies(mgr),
  },
  {
    name: 'scalinggroup-discovery',
    description: "Discovery: a ScalingGroup for each of the cluster's cloud groups",
    needsCloud: true,
    rbac: discoveryRbac,
    setup: (mgr, o) =>
      setupScalingGroupDiscovery(mgr, {
        cloud: cloudOf('scalinggroup-discovery', o.cloud),
        clusterId: o.clusterId,
      }),
  },
];
