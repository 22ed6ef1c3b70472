// What the renderers read: the TenantCluster (its spec.services) and the hosts
// it holds, as the scheduler hands them over.
export type { ServicePlacementSpec, TenantCluster, TenantServicesSpec } from '../../api/tenant.ts';
export type { ClaimedHost } from '../claims.ts';

import type { TenantCluster } from '../../api/tenant.ts';

/** The cluster's name and namespace, never undefined (a stored object has both). */
export function clusterKey(tc: TenantCluster): { name: string; namespace: string } {
  return { name: tc.metadata.name ?? '', namespace: tc.metadata.namespace ?? 'default' };
}
