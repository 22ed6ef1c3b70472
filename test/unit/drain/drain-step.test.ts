import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DrainTracker, drainStep, type EvictClient, type Pod } from '../../../src/drain/index.ts';
import { ApiError } from '../../../src/runtime/errors.ts';

function pod(name: string, s: { owner?: string; terminating?: boolean; uid?: string } = {}): Pod {
  const owner = s.owner ?? 'ReplicaSet';
  return {
    metadata: {
      name,
      namespace: 'ns',
      uid: s.uid ?? `uid-${name}`,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: owner, name: 'o', uid: 'o', controller: true }],
      ...(s.terminating ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { nodeName: 'n1' },
    status: { phase: 'Running' },
  };
}

/** An API server stand-in: evict answers by pod name; records every call. */
function fakeClient(refuse: Record<string, () => Error> = {}) {
  const calls: { name: string; grace: number | undefined }[] = [];
  const client: EvictClient & { calls: typeof calls } = {
    calls,
    async evict(name, _ns, opts) {
      calls.push({ name, grace: opts?.gracePeriodSeconds });
      const err = refuse[name];
      if (err) throw err();
    },
  };
  return client;
}

const pdb429 = () =>
  new ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.", {
    causes: [
      {
        reason: 'DisruptionBudget',
        message: 'The disruption budget web needs 2 healthy pods and has 2 currently',
      },
    ],
  });
const T0 = 5_000_000;

describe('drainStep', () => {
  it('evicts what is due, leaves DaemonSet pods, and asks to look again in 1 s without waiting', async () => {
    const c = fakeClient();
    const t = new DrainTracker();
    const pods = [pod('a'), pod('b'), pod('agent', { owner: 'DaemonSet' })];
    const r = await drainStep(c, t, pods, {}, T0);
    assert.deepEqual(
      c.calls.map((x) => x.name),
      ['a', 'b'],
    );
    assert.equal(r.evictedNow, 2);
    assert.equal(r.done, false, 'the evicted pods are still listed');
    assert.deepEqual(
      r.pending.map((p) => p.name),
      ['a', 'b'],
    );
    assert.equal(r.evictionPods, 2);
    assert.equal(r.drainProgress, 0);
    assert.equal(r.nextCheckMs, 1000);
  });

  it('does not evict again on the next step while the cache still shows the pods', async () => {
    const c = fakeClient();
    const t = new DrainTracker();
    await drainStep(c, t, [pod('a')], {}, T0);
    const r = await drainStep(c, t, [pod('a', { terminating: true })], {}, T0 + 100);
    assert.equal(c.calls.length, 1);
    assert.equal(r.evictedNow, 0);
    assert.equal(r.nextCheckMs, 1000);
  });

  it('is done, at 100 %, once the pods are gone (a DaemonSet pod may stay)', async () => {
    const c = fakeClient();
    const t = new DrainTracker();
    await drainStep(c, t, [pod('a'), pod('b')], {}, T0);
    const half = await drainStep(c, t, [pod('b', { terminating: true })], {}, T0 + 1000);
    assert.equal(half.drainProgress, 50);
    const r = await drainStep(c, t, [pod('agent', { owner: 'DaemonSet' })], {}, T0 + 2000);
    assert.equal(r.done, true);
    assert.equal(r.drainProgress, 100);
    assert.deepEqual(r.pending, []);
    assert.equal(r.nextCheckMs, 0);
  });

  it('is done at once on a node with nothing to evict', async () => {
    const r = await drainStep(fakeClient(), new DrainTracker(), []);
    assert.equal(r.done, true);
    assert.equal(r.drainProgress, 100);
  });

  it('reports a PDB refusal with the PDB, once as new, and retries only when due', async () => {
    const c = fakeClient({ a: pdb429 });
    const t = new DrainTracker();
    const first = await drainStep(c, t, [pod('a')], {}, T0);
    const want = {
      namespace: 'ns',
      name: 'a',
      pdb: 'web',
      message: first.blocked[0]?.message ?? '',
    };
    assert.deepEqual(first.blocked, [want]);
    assert.deepEqual(first.newlyBlocked, [want]);
    assert.equal(first.nextCheckMs, 1000);

    const early = await drainStep(c, t, [pod('a')], {}, T0 + 500);
    assert.equal(c.calls.length, 1, 'not retried before its time');
    assert.deepEqual(early.blocked, [want], 'still reported between attempts');
    assert.equal(early.nextCheckMs, 500);

    const again = await drainStep(c, t, [pod('a')], {}, T0 + 1000);
    assert.equal(c.calls.length, 2);
    assert.deepEqual(again.newlyBlocked, [], 'a refusal in a row is not new');
    assert.equal(again.nextCheckMs, 2000);
  });

  it('evicts nothing while the options forbid a pod, as kubectl refuses the whole drain', async () => {
    const c = fakeClient();
    const r = await drainStep(c, new DrainTracker(), [pod('a'), pod('agent', { owner: 'DaemonSet' })], {
      ignoreDaemonSets: false,
    });
    assert.equal(c.calls.length, 0);
    assert.equal(r.done, false);
    assert.deepEqual(r.policyBlocked, [
      'cannot delete DaemonSet-managed Pods (use ignoreDaemonSets): ns/agent',
    ]);
    assert.deepEqual(r.policyBlockedPods, [
      {
        namespace: 'ns',
        name: 'agent',
        message: 'cannot delete DaemonSet-managed Pods (use ignoreDaemonSets)',
      },
    ]);
    assert.equal(r.nextCheckMs, 5000);
  });

  it('waits for terminating pods without evicting them', async () => {
    const c = fakeClient();
    const r = await drainStep(c, new DrainTracker(), [pod('old', { terminating: true })]);
    assert.equal(c.calls.length, 0);
    assert.deepEqual(r.pending, [{ namespace: 'ns', name: 'old' }]);
    assert.equal(r.nextCheckMs, 1000);
  });

  it('reports eviction errors by pod until the next attempt', async () => {
    const msg =
      'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.';
    const c = fakeClient({ a: () => new ApiError(500, msg) });
    const t = new DrainTracker();
    const r = await drainStep(c, t, [pod('a'), pod('b')], {}, T0);
    assert.deepEqual(r.errors, [{ namespace: 'ns', name: 'a', message: msg }]);
    assert.deepEqual(r.blocked, []);
    const later = await drainStep(c, t, [pod('a'), pod('b', { terminating: true })], {}, T0 + 10);
    assert.deepEqual(later.errors, [{ namespace: 'ns', name: 'a', message: msg }]);
  });

  it('passes the grace period on, and leaves it to the pod when -1', async () => {
    const c = fakeClient();
    await drainStep(c, new DrainTracker(), [pod('a')], { gracePeriodSeconds: 5 });
    await drainStep(c, new DrainTracker(), [pod('b')], { gracePeriodSeconds: -1 });
    assert.deepEqual(c.calls, [
      { name: 'a', grace: 5 },
      { name: 'b', grace: undefined },
    ]);
  });

  it('keeps counting progress against the original set after a restart', async () => {
    const t = new DrainTracker();
    const r = await drainStep(fakeClient(), t, [pod('a', { terminating: true })], { evictionPods: 4 });
    assert.equal(r.evictionPods, 4);
    assert.equal(r.drainProgress, 75);
  });

  it('after a restart re-evaluates: an evicted pod now terminating is waited for, not evicted', async () => {
    const c = fakeClient();
    const r = await drainStep(c, new DrainTracker(), [pod('a', { terminating: true }), pod('b')]);
    assert.deepEqual(
      c.calls.map((x) => x.name),
      ['b'],
    );
    assert.equal(r.pending.length, 2);
  });

  it('evicts a replacement that landed on the node under a new uid', async () => {
    const c = fakeClient();
    const t = new DrainTracker();
    await drainStep(c, t, [pod('db-0', { uid: 'u1' })], {}, T0);
    await drainStep(c, t, [pod('db-0', { uid: 'u2' })], {}, T0 + 1000);
    assert.deepEqual(
      c.calls.map((x) => x.name),
      ['db-0', 'db-0'],
    );
  });
});
