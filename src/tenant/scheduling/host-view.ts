// What the planner knows of one BareMetalHost, read from the object alone:
// its labels, whether it is healthy enough to hold a tenant's node, and which
// cluster (if any) holds it. Pure: the controller builds these from its cache.
import type { BareMetalHost } from '../../api/baremetal.ts';
import { SIP_LABELS, TENANT_LABELS, type TenantRole } from '../../api/tenant.ts';

export interface HostClaim {
  clusterNamespace: string;
  clusterName: string;
  role: TenantRole | string;
  standby: boolean;
  /** Held through the anchor's labels only (a SIP operator's host): never ours to release. */
  foreign?: boolean;
}

export type Health = { healthy: true } | { healthy: false; reason: string };

export interface HostView {
  namespace: string;
  name: string;
  resourceVersion: string;
  labels: Record<string, string>;
  health: Health;
  claim?: HostClaim;
  /** Whether spec.networkData names a Secret (the anchor refuses a host without). */
  hasNetworkData: boolean;
}

const PICKABLE_STATES = new Set(['available', 'provisioned']);

/** Healthy: available or provisioned, operational status OK, no error, powered as spec.online says. */
export function hostHealth(h: BareMetalHost): Health {
  const st = h.status;
  const state = st?.provisioning?.state ?? '';
  if (st?.errorType) return { healthy: false, reason: `${st.errorType}: ${st.errorMessage ?? ''}`.trim() };
  if (st?.operationalStatus && st.operationalStatus !== 'OK')
    return { healthy: false, reason: `operational status ${st.operationalStatus}` };
  if (!PICKABLE_STATES.has(state)) return { healthy: false, reason: `state "${state || 'new'}"` };
  if (h.spec.online === true && st?.poweredOn === false)
    return { healthy: false, reason: 'powered off though spec.online is true' };
  return { healthy: true };
}

export function hostClaim(labels: Record<string, string>): HostClaim | undefined {
  const name = labels[TENANT_LABELS.clusterName];
  if (name !== undefined) {
    return {
      clusterNamespace: labels[TENANT_LABELS.clusterNamespace] ?? '',
      clusterName: name,
      role: labels[TENANT_LABELS.role] ?? '',
      standby: labels[TENANT_LABELS.standby] === 'true',
    };
  }
  const sip = labels[SIP_LABELS.clusterName];
  if (sip !== undefined) {
    return {
      clusterNamespace: labels[SIP_LABELS.clusterNamespace] ?? '',
      clusterName: sip,
      role: labels[SIP_LABELS.role] ?? '',
      standby: false,
      foreign: true,
    };
  }
  return undefined;
}

export function viewOfHost(h: BareMetalHost): HostView {
  const labels = h.metadata.labels ?? {};
  const claim = hostClaim(labels);
  return {
    namespace: h.metadata.namespace ?? 'default',
    name: h.metadata.name ?? '',
    resourceVersion: h.metadata.resourceVersion ?? '',
    labels,
    health: hostHealth(h),
    ...(claim ? { claim } : {}),
    hasNetworkData: !!h.spec.networkData?.name,
  };
}

export const hostKey = (h: { namespace: string; name: string }): string => `${h.namespace}/${h.name}`;

/** Natural order (host-2 before host-10), namespace first: the planner's one order. */
export function compareHosts(a: { namespace: string; name: string }, b: { namespace: string; name: string }) {
  return (
    a.namespace.localeCompare(b.namespace, 'en', { numeric: true }) ||
    a.name.localeCompare(b.name, 'en', { numeric: true })
  );
}
