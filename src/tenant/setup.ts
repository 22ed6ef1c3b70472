// Wiring of the TenantCluster controller: its own objects, and the hosts —
// a held host changing wakes its cluster; a free host changing (appearing,
// recovering, given back) wakes the clusters still short of hosts.
import { type BareMetalHost, BareMetalHosts } from '../api/baremetal.ts';
import { type TenantCluster, TenantClusters } from '../api/tenant.ts';
import { isConditionTrue } from '../runtime/conditions.ts';
import type { ControllerHost } from '../runtime/host.ts';
import type { PolicyRule } from '../runtime/policy-rule.ts';
import type { Request } from '../runtime/reconcile.ts';
import { TenantClusterReconciler } from './controller.ts';
import type { TenantOptions } from './options.ts';
import { hostClaim } from './scheduling/host-view.ts';

const TC = TenantClusters.type;
const BMH = BareMetalHosts.type;

export const tenantControllerRbac: PolicyRule[] = [
  {
    apiGroups: ['baremetal.nodewarden.dev'],
    resources: ['tenantclusters'],
    verbs: ['get', 'list', 'watch', 'patch'],
  },
  {
    apiGroups: ['baremetal.nodewarden.dev'],
    resources: ['tenantclusters/status'],
    verbs: ['get', 'update', 'patch'],
  },
  // Owner references that block deletion need this where OwnerReferencesPermissionEnforcement runs.
  { apiGroups: ['baremetal.nodewarden.dev'], resources: ['tenantclusters/finalizers'], verbs: ['update'] },
  // Claims are label patches; hosts are never created, deleted or given a status by us.
  { apiGroups: ['metal3.io'], resources: ['baremetalhosts'], verbs: ['get', 'list', 'watch', 'patch'] },
  // Network data, BMC logins, node SSH keys: read one by name, never listed or watched.
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'patch', 'delete'] },
  // The support services, server-side applied (patch creates), removed by owner references with
  // the cluster, and by name when the spec drops one.
  { apiGroups: [''], resources: ['configmaps', 'services'], verbs: ['get', 'patch', 'delete'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'patch', 'delete'] },
];

export function setupTenantClusters(host: ControllerHost, opts: TenantOptions): void {
  const r = new TenantClusterReconciler(
    host.client,
    host.cache,
    host.eventRecorder('nodewarden.dev/tenantcluster'),
    { sipCompatibleLabels: opts.sipCompatibleLabels },
  );
  const wanting = (): Request[] =>
    host.cache
      .list<TenantCluster>(TC)
      .filter((tc) => !isConditionTrue(tc.status?.conditions, 'Scheduled'))
      .map((tc) => ({ name: tc.metadata.name ?? '', namespace: tc.metadata.namespace }));
  host
    .controller('tenantcluster')
    .for(TC)
    .watches(BMH, (obj) => {
      const claim = hostClaim((obj as BareMetalHost).metadata.labels ?? {});
      if (claim) {
        // Its holder (a failure, a label change; a SIP-labelled host, the cluster that adopts it).
        return [{ name: claim.clusterName, namespace: claim.clusterNamespace }];
      }
      return wanting();
    })
    .withWorkers(opts.workers)
    .complete((req, ctx) => r.reconcile(req, ctx));
}
