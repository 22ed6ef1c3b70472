// Wiring of the TenantCluster controller: its own objects, and the hosts —
// a held host changing wakes its cluster; a free host changing (appearing,
// recovering, given back) wakes the clusters still short of hosts.
import { type BareMetalHost, BareMetalHosts } from '../api/baremetal.ts';
import { type TenantCluster, TenantClusters } from '../api/tenant.ts';
import { isConditionTrue } from '../runtime/conditions.ts';
import { type ControllerHost, reconcilerDeps } from '../runtime/host.ts';
import type { Request } from '../runtime/reconcile.ts';
import { Pods } from '../runtime/resources.ts';
import { TenantClusterReconciler } from './controller.ts';
import type { TenantOptions } from './options.ts';
import { hostClaim } from './scheduling/host-view.ts';
import { SERVICE_POD_SELECTOR } from './service-pods.ts';
import { CLUSTER_LABEL } from './services/index.ts';

const TC = TenantClusters.type;
const BMH = BareMetalHosts.type;

export function setupTenantClusters(host: ControllerHost, opts: TenantOptions): void {
  const r = new TenantClusterReconciler(reconcilerDeps(host, 'nodewarden.dev/tenantcluster'), {
    sipCompatibleLabels: opts.sipCompatibleLabels,
    ...(opts.jumpHostLoopbackAt ? { jumpHostLoopbackAt: opts.jumpHostLoopbackAt } : {}),
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
    // The support services' pods: their cluster says in ServicesRunning whether they run, and why not.
    .watches(
      Pods,
      (obj) => {
        const cluster = obj.metadata?.labels?.[CLUSTER_LABEL];
        return cluster ? [{ name: cluster, namespace: obj.metadata?.namespace }] : [];
      },
      { labelSelector: SERVICE_POD_SELECTOR },
    )
    .withWorkers(opts.workers)
    .complete((req, ctx) => r.reconcile(req, ctx));
}
