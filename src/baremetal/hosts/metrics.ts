// Host-controller metrics: power changes by cause (drift is the one to alert
// on) and BMC failures by metal3's error type.
import { Counter } from 'prom-client';
import { registry } from '../../runtime/metrics.ts';

export const powerActions = new Counter({
  name: 'nodewarden_baremetal_power_actions_total',
  help: 'Power actions sent to BMCs, by action (on, off, reboot) and cause (spec, drift)',
  labelNames: ['action', 'cause'] as const,
  registers: [registry],
});

export const bmcErrors = new Counter({
  name: 'nodewarden_baremetal_host_errors_total',
  help: 'Host reconciles that failed, by metal3 error type',
  labelNames: ['error_type'] as const,
  registers: [registry],
});
