// The kinds the commands address, by their names only. A command that reads or
// lists objects needs the group, version and plural, not the schema: the
// definitions in src/api/<group>.ts build TypeBox schemas as they load (~370
// modules, ~0.15 s of `maintenance status`, whose whole goal is 1.5x `kubectl
// get`). The definitions take their names from here, so the two cannot differ.
import type { ResourceRef } from './crd.ts';

export interface KindNames extends ResourceRef {
  scope: 'Cluster' | 'Namespaced';
}

function kind(group: string, version: string, kind: string, plural: string, scope: KindNames['scope']) {
  return { group, version, kind, plural, scope, namespaced: scope === 'Namespaced' } satisfies KindNames;
}

const MAINTENANCE = 'maintenance.nodewarden.dev';
const UPGRADE = 'upgrade.nodewarden.dev';

export const NodeMaintenanceKind = kind(
  MAINTENANCE,
  'v1alpha1',
  'NodeMaintenance',
  'nodemaintenances',
  'Cluster',
);
export const NodeVersionKind = kind(UPGRADE, 'v1alpha1', 'NodeVersion', 'nodeversions', 'Cluster');
export const ScalingGroupKind = kind(UPGRADE, 'v1alpha1', 'ScalingGroup', 'scalinggroups', 'Cluster');
export const PendingNodeKind = kind(UPGRADE, 'v1alpha1', 'PendingNode', 'pendingnodes', 'Cluster');
export const AutoscalingStrategyKind = kind(
  UPGRADE,
  'v1alpha1',
  'AutoscalingStrategy',
  'autoscalingstrategies',
  'Cluster',
);
