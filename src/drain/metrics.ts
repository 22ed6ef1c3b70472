// Drain metrics, on the process-wide registry /metrics serves.
import { Counter } from 'prom-client';
import { registry } from '../runtime/metrics.ts';

export const evictionsTotal = new Counter({
  name: 'nodewarden_evictions_total',
  help: 'Eviction requests sent while draining nodes, by outcome',
  labelNames: ['result'] as const,
  registers: [registry],
});
