// The maintenance capability as one value (see src/capability.ts): its CRD,
// its controller with the RBAC it needs (merged into the ClusterRole by
// `make manifests`), its webhook, its operator flag and its command. The
// controller and command modules are imported when they run; webhook.ts,
// which declares the endpoint too, loads with the capability.
import type { AnyCustomResource } from '../api/index.ts';
import { NodeMaintenances } from '../api/maintenance.ts';
import type { Capability, ControllerSpec } from '../capability.ts';
import { maintenanceCommandSpec } from './command-spec.ts';
import { nodeMaintenanceEndpoint, nodeMaintenanceWebhook } from './webhook.ts';

/** The maintenance flags of `nodewarden operator`, parsed (the reconciler's own options are built from them). */
export interface MaintenanceFlagValues {
  /** Namespace of the per-node leases a maintenance holds. */
  leaseNamespace: string;
}

export const maintenanceController: ControllerSpec<MaintenanceFlagValues> = {
  name: 'nodemaintenance',
  description: 'NodeMaintenance: cordon, taint and drain a node; restore it when the object is deleted',
  rbac: [
    {
      apiGroups: ['maintenance.nodewarden.dev'],
      resources: ['nodemaintenances'],
      verbs: ['get', 'list', 'watch', 'patch', 'update'],
    },
    {
      apiGroups: ['maintenance.nodewarden.dev'],
      resources: ['nodemaintenances/status'],
      verbs: ['get', 'patch', 'update'],
    },
    {
      apiGroups: ['maintenance.nodewarden.dev'],
      resources: ['nodemaintenances/finalizers'],
      verbs: ['update'],
    },
    { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'delete'] },
    { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
    // Node leases live in a namespace the user picks (--maintenance-lease-namespace), so the rule is cluster-wide.
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'create', 'update', 'delete'],
    },
  ],
  async setup(mgr, options) {
    const { setupNodeMaintenance } = await import('./controller.ts');
    setupNodeMaintenance(mgr, {
      lease: {
        namespace: options.leaseNamespace,
        holder: 'nodewarden-maintenance',
        durationSeconds: 3600,
      },
    });
  },
};

export const maintenance: Capability<MaintenanceFlagValues> = {
  name: 'maintenance',
  customResources: [NodeMaintenances as unknown as AnyCustomResource],
  flags: [
    {
      name: 'maintenance-lease-namespace',
      type: 'string',
      placeholder: 'NS',
      help: 'namespace of the per-node Leases held during maintenance\n(default: the operator\'s namespace; "medik8s-leases" interoperates with medik8s NHC)',
    },
  ],
  async options(flags, ctx) {
    const ns = flags['maintenance-lease-namespace'];
    return { leaseNamespace: typeof ns === 'string' ? ns : ctx.namespace };
  },
  controllers: [maintenanceController],
  webhooks: [
    {
      ...nodeMaintenanceEndpoint,
      handler: (host) => nodeMaintenanceWebhook(host.cache),
    },
  ],
  commands: [maintenanceCommandSpec],
};
