// The tenant capability as one value (see src/capability.ts): TenantCluster,
// the controller that carves tenant clusters out of BareMetalHosts and runs
// their support services, and the `tenant` command. Parity anchor: Airship
// SIP (../shared/reference/baremetal.md §1–§3).
import type { AnyCustomResource } from '../api/index.ts';
import { TenantClusters } from '../api/tenant.ts';
import type { Capability, ControllerSpec } from '../capability.ts';
import { tenantCommandSpec } from './command-spec.ts';
import { type TenantOptions, tenantFlags, tenantOptions } from './options.ts';
import { tenantControllerRbac } from './rbac.ts';

export type { TenantOptions };

export const tenantClusterController: ControllerSpec<TenantOptions> = {
  name: 'tenantcluster',
  description:
    'TenantCluster: claim BareMetalHosts per role under topology constraints, run the support services',
  rbac: tenantControllerRbac,
  setup: async (host, o) => (await import('./setup.ts')).setupTenantClusters(host, o),
};

export const tenant: Capability<TenantOptions> = {
  name: 'tenant',
  customResources: [TenantClusters as unknown as AnyCustomResource],
  flags: tenantFlags,
  options: tenantOptions,
  controllers: [tenantClusterController],
  commands: [tenantCommandSpec],
};
