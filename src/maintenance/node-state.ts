// What a node looks like under maintenance, and after: pure functions from
// (node, maintenance) to the patch that gets it there, or null when it is
// already there. Every patch carries the node's resourceVersion, so a
// concurrent change by anyone else makes it fail (409) instead of being lost.
import type { V1Node, V1Taint } from '@kubernetes/client-node';
import { Maintenance, type NodeMaintenance } from '../api/maintenance.ts';

export type NodeObject = Pick<V1Node, 'spec'> & {
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string> };
};

export interface NodePatch {
  metadata: { resourceVersion?: string; labels?: Record<string, string | null> };
  spec: { unschedulable?: boolean | null; taints?: V1Taint[] };
}

const sameTaint = (a: V1Taint, b: { key: string; effect: string; value?: string }) =>
  a.key === b.key && a.effect === b.effect;

/** The taints a maintenance adds: the drain taint, the unschedulable one, and the spec's extra taints. */
export function maintenanceTaints(nm: NodeMaintenance): V1Taint[] {
  return [
    { ...Maintenance.unschedulableTaint },
    { ...Maintenance.drainTaint },
    ...(nm.spec.taints ?? []).map((t) => ({
      key: t.key,
      effect: t.effect,
      ...(t.value ? { value: t.value } : {}),
    })),
  ];
}

/** Cordon, taint (keeping every other taint) and label the node; null if it already is. */
export function enterMaintenancePatch(node: NodeObject, nm: NodeMaintenance): NodePatch | null {
  const taints = [...(node.spec?.taints ?? [])];
  let changed = false;
  for (const want of maintenanceTaints(nm)) {
    if (!taints.some((t) => sameTaint(t, want))) {
      taints.push(want);
      changed = true;
    }
  }
  const labelled = node.metadata?.labels?.[Maintenance.excludeFromRemediationLabel] === 'true';
  if (!changed && node.spec?.unschedulable === true && labelled) return null;
  return {
    metadata: {
      resourceVersion: node.metadata?.resourceVersion,
      ...(labelled ? {} : { labels: { [Maintenance.excludeFromRemediationLabel]: 'true' } }),
    },
    spec: { unschedulable: true, taints },
  };
}

/**
 * Undo what we did, and only that: remove our taints and label, and uncordon
 * only if the node was schedulable before we cordoned it (a node someone else
 * cordoned stays cordoned, with the unschedulable taint that goes with that).
 */
export function leaveMaintenancePatch(node: NodeObject, nm: NodeMaintenance): NodePatch | null {
  const weCordoned = nm.status?.nodeWasSchedulable === true;
  const ours = maintenanceTaints(nm).filter(
    (t) => weCordoned || t.key !== Maintenance.unschedulableTaint.key,
  );
  const before = node.spec?.taints ?? [];
  const taints = before.filter((t) => !ours.some((o) => sameTaint(t, o)));
  const labelled = node.metadata?.labels?.[Maintenance.excludeFromRemediationLabel] !== undefined;
  const uncordon = weCordoned && node.spec?.unschedulable === true;
  if (taints.length === before.length && !labelled && !uncordon) return null;
  return {
    metadata: {
      resourceVersion: node.metadata?.resourceVersion,
      ...(labelled ? { labels: { [Maintenance.excludeFromRemediationLabel]: null } } : {}),
    },
    spec: { ...(uncordon ? { unschedulable: null } : {}), taints },
  };
}
