// Wiring of the TenantCluster controller: its own objects, and the hosts —
// a held host changing wakes its cluster; a free host changing (appearing,
// recovering, given back) wakes the clusters still short of hosts.
import { type BareMetalHost, BareMetalHosts } from '../api/baremetal.ts';
import { type TenantCluster, TenantClusters } from '../api/tenant.ts';
import { isConditionTrue } from '../runtime/conditions.ts';
import { type ControllerHost, reconcilerDeps } from '../runtime/host.ts';
import type { Request } from '../runtime/reconcile.ts';
import { TenantClusterReconciler } from './controller.ts';
import type { TenantOptions } from './options.ts';
import { hostClaim } from './scheduling/host-view.ts';

const TC = TenantClusters.type;
const BMH = BareMetalHosts.type;

export function setupTenantClusters(host: ControllerHost, opts: TenantOptions): void {
  const r = new TenantClusterReconciler(reconcilerDeps(host, 'nodewarden.dev/tenantcluster'), {
    sipCompatibleLabels: opts.sipCompatibleLabels,
  });
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
