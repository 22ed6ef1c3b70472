// Tenant-cluster metrics: claims by outcome (conflicts show clusters racing
// for hosts), releases by cause, standby promotions, failed hosts noticed.
import { Counter, Histogram } from 'prom-client';
import { registry } from '../runtime/metrics.ts';

export const hostClaims = new Counter({
  name: 'nodewarden_tenant_host_claims_total',
  help: 'Host label writes claiming a host, by result (claimed, conflict)',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const hostReleases = new Counter({
  name: 'nodewarden_tenant_host_releases_total',
  help: 'Hosts given back, by cause (scaleDown, failedReplaced, roleRemoved, clusterDeleted, rollback)',
  labelNames: ['cause'] as const,
  registers: [registry],
});

export const standbyPromotions = new Counter({
  name: 'nodewarden_tenant_standby_promotions_total',
  help: 'Standby hosts made active',
  registers: [registry],
});

export const hostFailures = new Counter({
  name: 'nodewarden_tenant_host_failures_total',
  help: 'Held hosts seen to fail',
  registers: [registry],
});

export const unschedulable = new Counter({
  name: 'nodewarden_tenant_unschedulable_total',
  help: 'Reconciles that found a role short of hosts, by role',
  labelNames: ['role'] as const,
  registers: [registry],
});

export const planSeconds = new Histogram({
  name: 'nodewarden_tenant_plan_seconds',
  help: 'Time to plan one TenantCluster (Secret reads included)',
  buckets: [0.001, 0.005, 0.02, 0.1, 0.5, 2],
  registers: [registry],
});
