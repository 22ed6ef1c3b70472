// Maintenance metrics: how many maintenances are in each phase, and how long drains take.
import { Gauge, Histogram } from 'prom-client';
import type { NodeMaintenance } from '../api/maintenance.ts';
import { registry } from '../runtime/metrics.ts';

const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed'] as const;

let source: () => NodeMaintenance[] = () => [];

/** Where the phase gauge reads maintenances from at scrape time (the controller's cache). */
export function countMaintenancesFrom(list: () => NodeMaintenance[]): void {
  source = list;
}

export const maintenancesByPhase = new Gauge({
  name: 'nodewarden_node_maintenances',
  help: 'NodeMaintenances by phase',
  labelNames: ['phase'] as const,
  registers: [registry],
  collect() {
    const counts = new Map<string, number>(PHASES.map((p) => [p, 0]));
    for (const nm of source()) {
      const phase = nm.status?.phase ?? 'Pending';
      counts.set(phase, (counts.get(phase) ?? 0) + 1);
    }
    for (const [phase, n] of counts) this.set({ phase }, n);
  },
});

export const drainDuration = new Histogram({
  name: 'nodewarden_drain_duration_seconds',
  help: 'Time from the start of a maintenance to its node being drained',
  buckets: [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600],
  registers: [registry],
});
