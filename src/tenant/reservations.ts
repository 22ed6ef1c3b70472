// Hosts a cluster in this process is about to claim. Workers plan at the same
// moment from the same cache; without this they would all pick the same first
// hosts, and all but one would lose the resourceVersion race and retry. A
// reservation lives from the plan to the end of the label writes; the
// resourceVersion guard still protects against other processes.
import type { HostView } from './scheduling/host-view.ts';
import { hostKey } from './scheduling/host-view.ts';

export class HostReservations {
  private readonly byHost = new Map<string, string>();

  /** The view as the planner should see it: a host reserved by another cluster is taken. */
  mask(view: HostView, cluster: string): HostView {
    const holder = this.byHost.get(hostKey(view));
    if (view.claim || holder === undefined || holder === cluster) return view;
    const [clusterNamespace = '', clusterName = ''] = holder.split('/');
    return { ...view, claim: { clusterNamespace, clusterName, role: '', standby: false, foreign: true } };
  }

  /** Reserves hosts for `cluster` (call synchronously after planning, before any await). */
  reserve(cluster: string, hosts: readonly { namespace: string; name: string }[]): void {
    for (const h of hosts) this.byHost.set(hostKey(h), cluster);
  }

  release(cluster: string): void {
    for (const [k, v] of this.byHost) if (v === cluster) this.byHost.delete(k);
  }
}
