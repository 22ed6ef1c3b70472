// A launch-image switch the cloud puts off is a wait, not an error. Found against the real Cluster
// API manager (the retarget case): the provider's hold while a MachineDeployment's sets settle was
// thrown as a retryable CloudError, so the controller retried hot and wrote a Warning each time
// (about 7 in 0.7 s). Now the cloud answers a deferral: the controller asks again when it says,
// status says why, and one Normal Event is written per target.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../../src/runtime/client.ts';
import type { EventRecorder } from '../../../src/runtime/events.ts';
import type { CacheReader, ReconcilerDeps } from '../../../src/runtime/host.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import type { ReconcileContext } from '../../../src/runtime/reconcile.ts';
import {
  IMAGE_UP_TO_DATE,
  ScalingGroupReconciler,
  SWITCH_DEFERRED,
} from '../../../src/upgrade/controllers/scalinggroup.ts';
import type { CloudDeferral, CloudProvider } from '../../../src/upgrade/providers/interface.ts';

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}
type Sg = {
  metadata: { name: string; generation: number };
  spec: { groupId: string; nodeVersion: string };
  status?: { imageReference?: string; conditions?: Condition[] };
};

/** A ScalingGroup following NodeVersion nv (image img-2) whose cloud launches img-1 and defers `defers` switches. */
function setup(defers: number) {
  const log = createLogger({ level: 'silent' });
  let sg: Sg = { metadata: { name: 'g', generation: 1 }, spec: { groupId: 'ns/md', nodeVersion: 'nv' } };
  const nv = { metadata: { name: 'nv' }, spec: { image: 'img-2' } };
  const events: string[] = [];
  let launching = 'img-1';
  let left = defers;
  const cloud = {
    scalingGroupImage: async () => launching,
    setScalingGroupImage: async (_g: string, image: string): Promise<CloudDeferral | undefined> => {
      if (left-- > 0) return { reason: `sets settling (${left} to go)`, retryAfterMs: 1000 };
      launching = image;
      return undefined;
    },
  } as unknown as CloudProvider;
  const cache = {
    get: (type: { kind: string }) => (type.kind === 'ScalingGroup' ? sg : nv),
  } as unknown as CacheReader;
  const client = {
    updateStatus: async (_t: unknown, obj: Sg) => {
      sg = structuredClone(obj);
      return obj;
    },
  } as unknown as KubeClient;
  const recorder = {
    normal: (_o: unknown, reason: string) => events.push(`Normal ${reason}`),
    warning: (_o: unknown, reason: string) => events.push(`Warning ${reason}`),
  } as unknown as EventRecorder;
  const deps: ReconcilerDeps = { client, cache, events: recorder, log };
  const r = new ScalingGroupReconciler(deps, cloud);
  const ctx = { controller: 'scalinggroup', log, signal: new AbortController().signal } as ReconcileContext;
  return {
    events,
    condition: () => sg.status?.conditions?.find((c) => c.type === IMAGE_UP_TO_DATE),
    reconcile: () => r.reconcile({ name: 'g' }, ctx),
  };
}

describe('a launch-image switch the cloud defers', () => {
  it('is asked again when the cloud says, not thrown for a backoff', async () => {
    const s = setup(1);
    assert.deepEqual(await s.reconcile(), { requeueAfterMs: 1000 });
  });

  it('says why in status, not as a cloud error', async () => {
    const s = setup(1);
    await s.reconcile();
    assert.equal(s.condition()?.status, 'False');
    assert.equal(s.condition()?.reason, SWITCH_DEFERRED);
    assert.match(s.condition()?.message ?? '', /launching img-2 waits: sets settling/);
  });

  it('writes one Normal Event per target and no Warning, however often it is asked again', async () => {
    const s = setup(3);
    for (let i = 0; i < 3; i++) await s.reconcile();
    assert.deepEqual(s.events, [`Normal ${SWITCH_DEFERRED}`]);
  });

  it('switches once the cloud lets it, and says so', async () => {
    const s = setup(2);
    for (let i = 0; i < 3; i++) await s.reconcile();
    assert.deepEqual(s.events, [`Normal ${SWITCH_DEFERRED}`, 'Normal ImageSwitched']);
    assert.equal(s.condition()?.reason, 'ImageUpToDate');
  });
});
