// One Prometheus registry for the whole process, with metric names that match
// controller-runtime and client-go, so dashboards built for Go operators work
// unchanged against nodewarden.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { observeRequests } from './client.ts';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

// Buckets as controller-runtime uses them for reconcile time (seconds).
const reconcileBuckets = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];
// client-go's workqueue buckets: 10^-8 .. 10^1 seconds.
const queueBuckets = Array.from({ length: 10 }, (_, i) => 10 ** (i - 8));

export const reconcileTotal = new Counter({
  name: 'controller_runtime_reconcile_total',
  help: 'Total number of reconciliations per controller',
  labelNames: ['controller', 'result'] as const,
  registers: [registry],
});
export const reconcileErrors = new Counter({
  name: 'controller_runtime_reconcile_errors_total',
  help: 'Total number of reconciliation errors per controller',
  labelNames: ['controller'] as const,
  registers: [registry],
});
export const terminalReconcileErrors = new Counter({
  name: 'controller_runtime_terminal_reconcile_errors_total',
  help: 'Total number of terminal reconciliation errors per controller',
  labelNames: ['controller'] as const,
  registers: [registry],
});
export const reconcileTime = new Histogram({
  name: 'controller_runtime_reconcile_time_seconds',
  help: 'Length of time per reconciliation per controller',
  labelNames: ['controller'] as const,
  buckets: reconcileBuckets,
  registers: [registry],
});
export const activeWorkers = new Gauge({
  name: 'controller_runtime_active_workers',
  help: 'Number of currently used workers per controller',
  labelNames: ['controller'] as const,
  registers: [registry],
});
export const maxConcurrentReconciles = new Gauge({
  name: 'controller_runtime_max_concurrent_reconciles',
  help: 'Maximum number of concurrent reconciles per controller',
  labelNames: ['controller'] as const,
  registers: [registry],
});

export const workqueueDepth = new Gauge({
  name: 'workqueue_depth',
  help: 'Current depth of workqueue',
  labelNames: ['name', 'controller'] as const,
  registers: [registry],
});
export const workqueueAdds = new Counter({
  name: 'workqueue_adds_total',
  help: 'Total number of adds handled by workqueue',
  labelNames: ['name', 'controller'] as const,
  registers: [registry],
});
export const workqueueQueueDuration = new Histogram({
  name: 'workqueue_queue_duration_seconds',
  help: 'How long in seconds an item stays in workqueue before being requested',
  labelNames: ['name', 'controller'] as const,
  buckets: queueBuckets,
  registers: [registry],
});
export const workqueueWorkDuration = new Histogram({
  name: 'workqueue_work_duration_seconds',
  help: 'How long in seconds processing an item from workqueue takes',
  labelNames: ['name', 'controller'] as const,
  buckets: queueBuckets,
  registers: [registry],
});
export const workqueueRetries = new Counter({
  name: 'workqueue_retries_total',
  help: 'Total number of retries handled by workqueue',
  labelNames: ['name', 'controller'] as const,
  registers: [registry],
});
export const workqueueUnfinishedWork = new Gauge({
  name: 'workqueue_unfinished_work_seconds',
  help: 'How many seconds of work has been done that is in progress and has not been observed by work_duration',
  labelNames: ['name', 'controller'] as const,
  registers: [registry],
});
export const workqueueLongestRunning = new Gauge({
  name: 'workqueue_longest_running_processor_seconds',
  help: 'How many seconds has the longest running processor for workqueue been running',
  labelNames: ['name', 'controller'] as const,
  registers: [registry],
});

export const restClientRequests = new Counter({
  name: 'rest_client_requests_total',
  help: 'Number of HTTP requests, partitioned by status code, method, and host',
  labelNames: ['code', 'method', 'host'] as const,
  registers: [registry],
});
export const restClientLatency = new Histogram({
  name: 'rest_client_request_duration_seconds',
  help: 'Request latency in seconds, broken down by verb and host',
  labelNames: ['verb', 'host'] as const,
  buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
  registers: [registry],
});
observeRequests({
  answered: (labels) => restClientRequests.inc(labels),
  latency: (labels, seconds) => restClientLatency.observe(labels, seconds),
});
