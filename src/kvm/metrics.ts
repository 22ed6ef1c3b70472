// KVM workload-cluster metrics: node updates started, VMs replaced as
// unhealthy (by cause), drains by outcome with their duration, how many
// workload nodes are Ready per cluster, and certificates issued (by cause).
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../runtime/metrics.ts';

export const nodeUpdates = new Counter({
  name: 'nodewarden_kvm_node_updates_total',
  help: 'Node Deployments updated to a new spec (one node at a time), by role',
  labelNames: ['role'] as const,
  registers: [registry],
});

export const unhealthyReplacements = new Counter({
  name: 'nodewarden_kvm_unhealthy_replacements_total',
  help: 'VM pods deleted because their node was unhealthy, by cause (notReady, neverJoined)',
  labelNames: ['cause'] as const,
  registers: [registry],
});

export const drains = new Counter({
  name: 'nodewarden_kvm_drains_total',
  help: 'Workload-node drains before a VM went, by outcome (drained, timedOut, skipped)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const drainSeconds = new Histogram({
  name: 'nodewarden_kvm_drain_seconds',
  help: 'Time from a VM pod deletion to its workload node drained (or the drain timing out)',
  buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200],
  registers: [registry],
});

export const readyNodes = new Gauge({
  name: 'nodewarden_kvm_ready_nodes',
  help: 'Ready workload nodes per KVMCluster',
  labelNames: ['namespace', 'cluster'] as const,
  registers: [registry],
});

export const certificatesIssued = new Counter({
  name: 'nodewarden_kvm_certificates_issued_total',
  help: "Workload clusters' CAs and certificates issued, by cause (missing, renewal, expired, subjectChanged, otherCa)",
  labelNames: ['cause'] as const,
  registers: [registry],
});
