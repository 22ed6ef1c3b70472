// The rolling-upgrade capability as one value (see src/capability.ts): four
// CRDs, five controllers with the RBAC each needs, the operator's cloud flags,
// the `upgrade` command, and the simulated cloud every local cluster carries.
// All controllers but the autoscaling one need a cloud to talk to. Each
// controller's module, the command's and the simulated cloud's are imported
// when they run (src/capability.ts).
import type { AnyCustomResource } from '../api/index.ts';
import { AutoscalingStrategies, NodeVersions, PendingNodes, ScalingGroups } from '../api/upgrade.ts';
import type { Capability, ControllerSpec } from '../capability.ts';
import type { ControllerHost } from '../runtime/host.ts';
import { upgradeCommandSpec } from './command-spec.ts';
import { fencedCloud } from './providers/fenced.ts';
import { type CloudSetup, cloudOptions, cloudProviders } from './providers/from-flags.ts';
import { autoscalingRbac, discoveryRbac, pendingNodeRbac, scalingGroupRbac } from './rbac.ts';

const G = 'upgrade.nodewarden.dev';

export type UpgradeOptions = CloudSetup;

/** The cloud a controller changes on the manager's authority: fenced with its API writes. */
function cloudOf(name: string, cloud: UpgradeOptions['cloud'], mgr: ControllerHost) {
  if (!cloud) throw new Error(`controller ${name} needs a cloud provider (--cloud-provider)`);
  return fencedCloud(cloud, () => mgr.client.assertMayWrite());
}

const needsCloud = (o: UpgradeOptions) => (o.cloud ? undefined : 'needs a cloud: give --cloud-provider');

export const nodeVersionController: ControllerSpec<UpgradeOptions> = {
  name: 'nodeversion',
  description: 'NodeVersion: replace nodes on an outdated image, within the surge and unavailability budgets',
  unavailable: needsCloud,
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
  async setup(mgr, options) {
    const { setupNodeVersions } = await import('./controllers/nodeversion.ts');
    setupNodeVersions(mgr, { cloud: cloudOf('nodeversion', options.cloud, mgr) });
  },
};

export const upgradeControllers: ControllerSpec<UpgradeOptions>[] = [
  nodeVersionController,
  {
    name: 'scalinggroup',
    description: "ScalingGroup: switch the cloud group's launch image to the NodeVersion's",
    unavailable: needsCloud,
    rbac: scalingGroupRbac,
    setup: async (mgr, o) =>
      (await import('./controllers/scalinggroup.ts')).setupScalingGroups(mgr, {
        cloud: cloudOf('scalinggroup', o.cloud, mgr),
      }),
  },
  {
    name: 'pendingnode',
    description: 'PendingNode: follow a node joining or leaving until it does or its deadline passes',
    unavailable: needsCloud,
    rbac: pendingNodeRbac,
    setup: async (mgr, o) =>
      (await import('./controllers/pendingnode.ts')).setupPendingNodes(mgr, {
        cloud: cloudOf('pendingnode', o.cloud, mgr),
      }),
  },
  {
    name: 'autoscalingstrategy',
    description: 'AutoscalingStrategy: scale the cluster autoscaler and build its node-group arguments',
    rbac: autoscalingRbac,
    setup: async (mgr) => (await import('./controllers/autoscaling.ts')).setupAutoscalingStrategies(mgr),
  },
  {
    name: 'scalinggroup-discovery',
    description: "Discovery: a ScalingGroup for each of the cluster's cloud groups",
    unavailable: needsCloud,
    rbac: discoveryRbac,
    setup: async (mgr, o) =>
      (await import('./controllers/discovery.ts')).setupScalingGroupDiscovery(mgr, {
        cloud: cloudOf('scalinggroup-discovery', o.cloud, mgr),
        clusterId: o.clusterId,
      }),
  },
];

export const upgrade: Capability<UpgradeOptions> = {
  name: 'upgrade',
  customResources: [NodeVersions, ScalingGroups, PendingNodes, AutoscalingStrategies].map(
    (cr) => cr as unknown as AnyCustomResource,
  ),
  flags: [
    {
      name: 'cloud-provider',
      type: 'string',
      placeholder: 'NAME',
      env: 'NODEWARDEN_CLOUD_PROVIDER',
      default: 'none',
      help: 'cloud to replace nodes through (see Providers below);\nthe upgrade controllers run only with a cloud',
    },
    {
      name: 'cloud-endpoint',
      type: 'string',
      placeholder: 'URL',
      help: "the simulated cloud's API (default: from the local cluster's\nkube-system/nodewarden-simulated-cloud ConfigMap)",
    },
    {
      name: 'cluster-id',
      type: 'string',
      placeholder: 'ID',
      help: "the cluster's id in the cloud (scaling-group discovery);\nwith clusterapi the Cluster, <namespace>/<name> or <name>",
    },
    {
      name: 'clusterapi-image-path',
      type: 'string',
      placeholder: 'KIND=PATH,...',
      help: 'clusterapi: where a template kind keeps its image, for kinds\nnot known (e.g. FooMachineTemplate=spec.template.spec.image.name)',
    },
    {
      name: 'clusterapi-set-on-delete',
      type: 'boolean',
      help: "clusterapi: switch a RollingUpdate MachineDeployment to OnDelete\n(without it such a group is refused: Cluster API's rollout would fight ours)",
    },
    {
      name: 'clusterapi-namespace',
      type: 'string',
      placeholder: 'NS',
      help: 'clusterapi: only MachineDeployments and Machines of this namespace',
    },
  ],
  options: cloudOptions,
  providers: cloudProviders,
  controllers: upgradeControllers,
  commands: [upgradeCommandSpec],
  infrastructure: async () => [(await import('../cluster/infra/cloud/addon.ts')).simulatedCloud],
};
