// A host a TenantCluster holds, with what its services need to reach it: the
// shape the support-service renderers (src/tenant/services/) work from.
import type { TenantRole } from '../api/tenant.ts';

export interface ClaimedHost {
  name: string;
  namespace: string;
  role: 'ControlPlane' | 'Worker';
  standby: boolean;
  rack?: string;
  ips: Record<string, string> /* interface id → IP from the network data */;
  bmc: { address: string; username: string; password: string };
}

/** Compile-time check that the literal union above stays the API's roles. */
export type ClaimedRole = ClaimedHost['role'] & TenantRole;
