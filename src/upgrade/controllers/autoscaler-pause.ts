// The cluster autoscaler during a rollout: paused while nodes are replaced
// (it would fight the rollout over group sizes) and given back exactly the
// setting it had, which is remembered on the AutoscalingStrategy itself so a
// restarted operator still knows it. The anchor turns it back on regardless.
import {
  AutoscalingStrategies,
  type AutoscalingStrategy,
  type NodeVersion,
  NodeVersions,
} from '../../api/upgrade.ts';
import type { KubeClient } from '../../runtime/client.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import type { CacheReader } from '../../runtime/host.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import { Upgrade } from '../names.ts';
import { otherRolloutHoldsAutoscalers } from '../rollout/autoscaler-hold.ts';

const AS = AutoscalingStrategies.type;
const A = Upgrade.annotations;
type NodeVersionObject = NodeVersion & K8sObject;

/** Whether an autoscaler still runs, as its status says (a pause takes effect when it stops). */
export function autoscalerRunning(cache: CacheReader): boolean {
  return cache.list<AutoscalingStrategy & K8sObject>(AS).some((as) => as.status?.enabled === true);
}

/**
 * Pauses every AutoscalingStrategy, remembering the user's setting on the object itself
 * (so a restart restores it).
 */
export async function pauseAutoscalers(
  client: KubeClient,
  cache: CacheReader,
  events: EventRecorder,
  nv: NodeVersionObject,
): Promise<void> {
  for (const as of cache.list<AutoscalingStrategy & K8sObject>(AS)) {
    const remembered = as.metadata.annotations?.[A.enabledBeforeRollout];
    if (remembered === undefined || as.spec.enabled) {
      await client.patch(
        AS,
        as.metadata.name!,
        undefined,
        {
          metadata: { annotations: { [A.enabledBeforeRollout]: remembered ?? String(as.spec.enabled) } },
          spec: { enabled: false },
        },
        { type: 'merge' },
      );
      if (remembered === undefined) {
        events.normal(
          nv,
          'AutoscalerPaused',
          'Pause',
          `paused AutoscalingStrategy ${as.metadata.name} for the rollout`,
        );
      }
    }
  }
}

/** Gives every paused autoscaler back the setting it had, once no other rollout has work left it can do. */
export async function restoreAutoscalers(
  client: KubeClient,
  cache: CacheReader,
  events: EventRecorder,
  nv: NodeVersionObject,
): Promise<void> {
  const paused = cache
    .list<AutoscalingStrategy & K8sObject>(AS)
    .filter((as) => as.metadata.annotations?.[A.enabledBeforeRollout] !== undefined);
  if (paused.length === 0) return;
  // Only a rollout with work it can still do holds them: one that can never finish would hold them for good.
  if (otherRolloutHoldsAutoscalers(cache.list<NodeVersionObject>(NodeVersions.type), nv.metadata.name ?? ''))
    return;
  for (const as of paused) {
    const before = as.metadata.annotations![A.enabledBeforeRollout] === 'true';
    await client.patch(
      AS,
      as.metadata.name!,
      undefined,
      { metadata: { annotations: { [A.enabledBeforeRollout]: null } }, spec: { enabled: before } },
      { type: 'merge' },
    );
    events.normal(
      nv,
      'AutoscalerRestored',
      'Resume',
      `AutoscalingStrategy ${as.metadata.name} restored to enabled=${before}`,
    );
  }
}
