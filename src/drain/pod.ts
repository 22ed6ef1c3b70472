// The parts of a Pod the drain reads, as plain JSON (timestamps are strings,
// as the cache holds them), and the references it reports in status.
import type { NodeMaintenanceStatusType } from '../api/maintenance.ts';
import type { K8sObject } from '../runtime/resources.ts';

export interface Pod extends K8sObject {
  spec?: {
    nodeName?: string;
    volumes?: Array<{ name: string; emptyDir?: unknown }>;
    [k: string]: unknown;
  };
  status?: { phase?: string; [k: string]: unknown };
}

/** Shapes of NodeMaintenance status entries, so results can be written there as they are. */
export type PodRef = NonNullable<NodeMaintenanceStatusType['pendingPods']>[number];
export type BlockedPod = NonNullable<NodeMaintenanceStatusType['blockedPods']>[number];

export function podRef(pod: Pod): PodRef {
  return { namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '' };
}

/** "namespace/name", as kubectl names pods in its messages. */
export function podName(pod: Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

/**
 * Identity of one pod incarnation. A StatefulSet pod recreated under the same
 * name gets a new uid, so it is a different pod (kubectl's waitForDelete rule).
 */
export function podUid(pod: Pod): string {
  return pod.metadata?.uid ?? `name:${podName(pod)}`;
}

/** Succeeded or Failed: nothing left to disrupt, so kubectl lets such pods through every check. */
export function isCompleted(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}
