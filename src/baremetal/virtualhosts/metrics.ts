// VM-host metrics: hosts per pool (desired, created, ready) read from the
// pools' status at scrape time, and how many addresses each IPPool hands out.
import { Counter, Gauge } from 'prom-client';
import type { VirtualHostPool } from '../../api/virtualhosts.ts';
import { registry } from '../../runtime/metrics.ts';

let source: () => VirtualHostPool[] = () => [];

/** Where the host gauge reads pools from at scrape time (the controller's cache). */
export function countPoolsFrom(list: () => VirtualHostPool[]): void {
  source = list;
}

export const virtualHosts = new Gauge({
  name: 'nodewarden_virtual_hosts',
  help: "VirtualHostPools' hosts by state (desired, created, ready)",
  labelNames: ['namespace', 'pool', 'state'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const p of source()) {
      const labels = { namespace: p.metadata.namespace ?? '', pool: p.metadata.name ?? '' };
      this.set({ ...labels, state: 'desired' }, p.status?.desiredHosts ?? 0);
      this.set({ ...labels, state: 'created' }, p.status?.createdHosts ?? 0);
      this.set({ ...labels, state: 'ready' }, p.status?.readyHosts ?? 0);
    }
  },
});

export const hostsReleased = new Counter({
  name: 'nodewarden_virtual_hosts_released_total',
  help: 'VM hosts given up (host, machine, Secrets and addresses), by cause',
  labelNames: ['cause'] as const,
  registers: [registry],
});

export const addressesExhausted = new Counter({
  name: 'nodewarden_virtual_hosts_addresses_exhausted_total',
  help: 'VM hosts not made because a network had no free address left',
  registers: [registry],
});
