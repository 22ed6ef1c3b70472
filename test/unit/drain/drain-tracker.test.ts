import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DrainTracker, type EvictionOutcome, type Pod } from '../../../src/drain/index.ts';

const pod = (name: string, uid = `uid-${name}`): Pod => ({ metadata: { name, namespace: 'ns', uid } });
const blocked: EvictionOutcome = { result: 'blocked', pdb: 'web-pdb', message: 'needs 3 healthy pods' };
const T0 = 1_000_000;

describe('DrainTracker: evicting once', () => {
  it('makes a new pod due at once', () => {
    assert.equal(new DrainTracker().due(pod('a'), T0), true);
  });

  it('never evicts the same pod twice, even once its retry time is long past', () => {
    const t = new DrainTracker();
    t.record(pod('a'), { result: 'evicted' }, T0);
    assert.equal(t.due(pod('a'), T0 + 3_600_000), false);
    assert.equal(t.wasEvicted(pod('a')), true);
  });

  it('treats a pod already gone (404) as evicted', () => {
    const t = new DrainTracker();
    t.record(pod('a'), { result: 'gone' }, T0);
    assert.equal(t.due(pod('a'), T0 + 60_000), false);
  });

  it('evicts a StatefulSet pod recreated under the same name: a new uid is a new pod', () => {
    const t = new DrainTracker();
    t.record(pod('db-0', 'uid-1'), { result: 'evicted' }, T0);
    assert.equal(t.due(pod('db-0', 'uid-2'), T0), true);
    assert.equal(t.wasEvicted(pod('db-0', 'uid-2')), false);
  });
});

describe('DrainTracker: retrying refused pods', () => {
  it('backs off 1 s, 2 s, 4 s … up to 30 s per refused pod', () => {
    const t = new DrainTracker();
    const delays: number[] = [];
    let now = T0;
    for (let i = 0; i < 8; i++) {
      t.record(pod('a'), blocked, now);
      const at = t.retryAt(pod('a'))!;
      delays.push(at - now);
      assert.equal(t.due(pod('a'), at - 1), false, 'not due before its retry time');
      assert.equal(t.due(pod('a'), at), true, 'due at its retry time');
      now = at;
    }
    assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });

  it('caps a PDB refusal at 5 s while the drain evicted a pod within the last minute, 30 s after', () => {
    const cases: { name: string; evictedAgoMs?: number; outcome: EvictionOutcome; want: number[] }[] = [
      {
        name: 'blocked, nothing evicted yet',
        outcome: blocked,
        want: [1000, 2000, 4000, 8000, 16000, 30000],
      },
      {
        name: 'blocked, an eviction 1 s before',
        evictedAgoMs: 1000,
        outcome: blocked,
        want: [1000, 2000, 4000, 5000, 5000, 5000],
      },
      {
        name: 'blocked, an eviction 2 min before',
        evictedAgoMs: 120_000,
        outcome: blocked,
        want: [1000, 2000, 4000, 8000, 16000, 30000],
      },
      {
        name: 'an error, an eviction 1 s before',
        evictedAgoMs: 1000,
        outcome: { result: 'error', message: 'boom' },
        want: [1000, 2000, 4000, 8000, 16000, 30000],
      },
    ];
    for (const c of cases) {
      const t = new DrainTracker({ random: () => 1 }); // the top of each spread: the cap itself
      if (c.evictedAgoMs !== undefined) t.record(pod('moved'), { result: 'evicted' }, T0 - c.evictedAgoMs);
      const delays: number[] = [];
      for (let i = 0; i < 6; i++) {
        t.record(pod('a'), c.outcome, T0); // the same instant: the window is judged at the refusal
        delays.push(t.retryAt(pod('a'))! - T0);
      }
      assert.deepEqual(delays, c.want, c.name);
    }
  });

  it("spreads a moving drain's refused pods over the second half of their delay", () => {
    for (const [random, want] of [
      [0, 500],
      [0.5, 750],
      [1, 1000],
    ] as const) {
      const t = new DrainTracker({ random: () => random });
      t.record(pod('moved'), { result: 'evicted' }, T0 - 1000);
      t.record(pod('a'), blocked, T0);
      assert.equal(t.retryAt(pod('a'))! - T0, want, `random ${random}`);
    }
    const still = new DrainTracker({ random: () => 0 }); // nothing moved: no spread
    still.record(pod('a'), blocked, T0);
    assert.equal(still.retryAt(pod('a'))! - T0, 1000);
  });

  it('keeps each pod on its own schedule', () => {
    const t = new DrainTracker();
    t.record(pod('a'), blocked, T0);
    t.record(pod('a'), blocked, T0);
    t.record(pod('b'), blocked, T0);
    assert.equal(t.retryAt(pod('a')), T0 + 2000);
    assert.equal(t.retryAt(pod('b')), T0 + 1000);
    assert.equal(t.retryAt(pod('c')), undefined);
  });

  it('backs off errors and terminating namespaces the same way', () => {
    const t = new DrainTracker({ backoffBaseMs: 10, backoffMaxMs: 15 });
    t.record(pod('a'), { result: 'error', message: 'boom' }, T0);
    t.record(pod('b'), { result: 'terminating-namespace', message: 'being terminated' }, T0);
    t.record(pod('b'), { result: 'terminating-namespace', message: 'being terminated' }, T0);
    assert.equal(t.retryAt(pod('a')), T0 + 10);
    assert.equal(t.retryAt(pod('b')), T0 + 15);
    assert.deepEqual(t.lastRefusal(pod('a')), { result: 'error', message: 'boom' });
  });

  it('forgets the refusal once the eviction goes through', () => {
    const t = new DrainTracker();
    t.record(pod('a'), blocked, T0);
    t.record(pod('a'), { result: 'evicted' }, T0 + 1000);
    assert.equal(t.lastRefusal(pod('a')), undefined);
    assert.equal(t.retryAt(pod('a')), undefined);
  });

  it('forgets pods no longer on the node', () => {
    const t = new DrainTracker();
    t.record(pod('a'), blocked, T0);
    t.record(pod('b'), { result: 'evicted' }, T0);
    t.prune([pod('c')]);
    assert.equal(t.retryAt(pod('a')), undefined);
    assert.equal(t.wasEvicted(pod('b')), false);
  });
});

describe('DrainTracker: progress', () => {
  const plan = (evict: Pod[], wait: Pod[] = []) => ({ evict, wait });

  it("follows the anchor's (evictionPods − pending) × 100 / evictionPods, rounded down", () => {
    const t = new DrainTracker();
    assert.equal(t.progress(3, plan([pod('a'), pod('b'), pod('c')])).drainProgress, 0);
    assert.equal(t.progress(3, plan([pod('a'), pod('b')])).drainProgress, 33);
    assert.equal(t.progress(3, plan([pod('a')])).drainProgress, 66);
    assert.equal(t.progress(3, plan([])).drainProgress, 100);
  });

  it('is 100 when there was nothing to evict', () => {
    assert.equal(new DrainTracker().progress(0, plan([])).drainProgress, 100);
  });

  it('never goes below 0 when more pods arrived than were there at the start', () => {
    assert.equal(new DrainTracker().progress(1, plan([pod('a'), pod('b')])).drainProgress, 0);
  });

  it('counts an evicted pod as pending until it is gone, and terminating pods too', () => {
    const t = new DrainTracker();
    t.record(pod('a'), { result: 'evicted' }, T0);
    const p = t.progress(2, plan([pod('a')], [pod('b')]));
    assert.deepEqual(p.pending, [
      { namespace: 'ns', name: 'a' },
      { namespace: 'ns', name: 'b' },
    ]);
    assert.equal(p.drainProgress, 0);
  });

  it('counts an evicted pod replaced elsewhere under its name as gone', () => {
    const t = new DrainTracker();
    t.record(pod('db-0', 'uid-1'), { result: 'evicted' }, T0);
    // db-0 now runs on another node with uid-2: nothing of it is left on this one.
    const p = t.progress(1, plan([]));
    assert.deepEqual(p.pending, []);
    assert.equal(p.drainProgress, 100);
  });

  it('lists pods a PDB refused, with the PDB, only while they are still to evict', () => {
    const t = new DrainTracker();
    t.record(pod('a'), blocked, T0);
    t.record(pod('b'), { result: 'error', message: 'boom' }, T0);
    assert.deepEqual(t.progress(2, plan([pod('a'), pod('b')])).blocked, [
      { namespace: 'ns', name: 'a', pdb: 'web-pdb', message: 'needs 3 healthy pods' },
    ]);
    assert.deepEqual(t.progress(2, plan([pod('b')])).blocked, []);
  });
});
