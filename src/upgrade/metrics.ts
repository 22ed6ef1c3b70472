// Rolling-upgrade metrics: nodes per group and state, rollout progress, how
// long a replacement takes, and what went wrong along the way.
import { Counter, Gauge, Histogram } from 'prom-client';
import { registry } from '../runtime/metrics.ts';
import type { RolloutProblem } from './rollout/causes.ts';

export const upgradeNodes = new Gauge({
  name: 'nodewarden_upgrade_nodes',
  help: 'Nodes a NodeVersion governs, by scaling group and state (upToDate, outdated, replacing, draining)',
  labelNames: ['node_version', 'group', 'state'] as const,
  registers: [registry],
});

export const rolloutProgress = new Gauge({
  name: 'nodewarden_upgrade_rollout_progress_ratio',
  help: 'Share of nodes on the desired image and version (1 when the rollout is complete)',
  labelNames: ['node_version'] as const,
  registers: [registry],
});

export const replacementDuration = new Histogram({
  name: 'nodewarden_upgrade_replacement_duration_seconds',
  help: 'Time from pairing a new node with an outdated one to deleting the outdated one',
  buckets: [5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600],
  registers: [registry],
});

export const upgradeActions = new Counter({
  name: 'nodewarden_upgrade_actions_total',
  help: 'Rollout actions taken, by type (createNode, pair, drain, deleteNode, ...)',
  labelNames: ['node_version', 'action'] as const,
  registers: [registry],
});

export const upgradeProblems = new Counter({
  name: 'nodewarden_upgrade_problems_total',
  help: 'Problems a rollout met, by kind (drain_failed, never_joined, cloud_error)',
  labelNames: ['node_version', 'kind'] as const,
  registers: [registry],
});

/** The `kind` label a problem is counted under, if it is counted. */
export function problemKind(p: RolloutProblem): 'drain_failed' | 'never_joined' | 'cloud_error' | undefined {
  switch (p.cause) {
    case 'drainFailed':
      return 'drain_failed';
    case 'neverJoined':
      return 'never_joined';
    case 'actionFailed':
      // Creating and deleting nodes are the cloud calls.
      return p.action === 'createNode' || p.action === 'deleteNode' ? 'cloud_error' : undefined;
    // Already counted when first met (a backoff follows a failed drain; a join the PendingNode
    // controller abandoned is its Event), or not a rollout action's problem (annotation).
    case 'drainBackoff':
    case 'joinAbandoned':
    case 'cloudError':
      return undefined;
  }
}
