import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CloudState,
  CloudStateError,
  parseProviderID,
  seededRandom,
} from '../../../src/cluster/infra/cloud/state.ts';

function cloud(seed = 7) {
  const state = new CloudState({ bootDelayMs: 5000, seed });
  state.addGroup({ id: 'workers', role: 'Worker', launchImage: 'img-1', kubernetesVersion: 'v1.33.0' });
  state.addGroup({ id: 'cp', role: 'ControlPlane', launchImage: 'img-1', kubernetesVersion: 'v1.33.0' });
  return state;
}

describe('simulated cloud state', () => {
  it('boots an instance: Creating until the boot delay has passed, then Ready', () => {
    const state = cloud();
    const events: string[] = [];
    state.onInstance((e, i) => events.push(`${e}:${i.nodeName}`));
    const i = state.createInstance('workers', 1000);
    assert.equal(i.state, 'Creating');
    assert.equal(i.image, 'img-1');
    assert.equal(i.readyAt, 6000);
    assert.deepEqual(parseProviderID(i.providerID), { groupId: 'workers', instance: i.nodeName });
    assert.match(i.providerID, /^nwsim:\/\/workers\/workers-[a-z0-9]{5}$/);
    assert.deepEqual(state.tick(5999), []);
    assert.equal(state.getInstance(i.providerID)?.state, 'Creating');
    assert.equal(state.tick(6000).length, 1);
    assert.equal(state.getInstance(i.providerID)?.state, 'Ready');
    assert.deepEqual(state.getGroup('workers')?.instances, [i.providerID]);
    assert.deepEqual(events, [`ready:${i.nodeName}`]);
  });

  it('new instances boot from the group image at the time of creation', () => {
    const state = cloud();
    const a = state.createInstance('workers', 0);
    state.setGroupImage('workers', 'img-2');
    const b = state.createInstance('workers', 0);
    assert.equal(a.image, 'img-1');
    assert.equal(b.image, 'img-2');
    assert.equal(state.getGroup('workers')?.launchImage, 'img-2');
  });

  it('keeps an instance that never joins in Creating', () => {
    const state = cloud();
    state.setFaults({ neverJoinNext: { workers: 1 } });
    const stuck = state.createInstance('workers', 0);
    const fine = state.createInstance('workers', 0);
    state.tick(1_000_000);
    assert.equal(state.getInstance(stuck.providerID)?.state, 'Creating');
    assert.equal(stuck.readyAt, undefined);
    assert.equal(state.getInstance(fine.providerID)?.state, 'Ready');
    assert.deepEqual(state.getFaults().neverJoinNext, {});
  });

  it('adds slowBootMs to the boot delay', () => {
    const state = cloud();
    state.setFaults({ slowBootMs: 3000 });
    const i = state.createInstance('cp', 0);
    state.tick(5000);
    assert.equal(state.getInstance(i.providerID)?.state, 'Creating');
    state.tick(8000);
    assert.equal(state.getInstance(i.providerID)?.state, 'Ready');
  });

  it('deletes idempotently and shrinks the group', () => {
    const state = cloud();
    const deleted: string[] = [];
    state.onInstance((e, i) => e === 'deleted' && deleted.push(i.nodeName));
    const i = state.createInstance('workers', 0);
    state.tick(5000);
    assert.equal(state.deleteInstance(i.providerID, 10)?.state, 'Terminated');
    assert.equal(state.deleteInstance(i.providerID, 20)?.state, 'Terminated');
    assert.equal(state.getInstance(i.providerID)?.deletedAt, 10);
    assert.equal(state.deleteInstance('nwsim://workers/nope'), undefined);
    assert.deepEqual(state.getGroup('workers')?.instances, []);
    assert.deepEqual(deleted, [i.nodeName]);
    // A Terminated instance never comes back.
    state.tick(1_000_000);
    assert.equal(state.getInstance(i.providerID)?.state, 'Terminated');
  });

  it('rejects unknown groups and bad specs', () => {
    const state = cloud();
    assert.throws(
      () => state.createInstance('nope', 0),
      (e) => e instanceof CloudStateError && e.status === 404,
    );
    assert.throws(
      () => state.addGroup({ id: 'workers', role: 'Worker', launchImage: 'x', kubernetesVersion: 'v1' }),
      (e) => e instanceof CloudStateError && e.status === 409,
    );
    assert.throws(
      () => state.addGroup({ id: 'Bad_Id', role: 'Worker', launchImage: 'x', kubernetesVersion: 'v1' }),
      (e) => e instanceof CloudStateError && e.status === 400,
    );
    assert.throws(() => state.setFaults({ throttleProbability: 2 }), CloudStateError);
  });

  it('consumes API faults in order: throttling, then errors', () => {
    const state = cloud();
    state.setFaults({ throttleNextCalls: 1, failNextCalls: 2 });
    assert.equal(state.nextApiFault()?.status, 429);
    assert.equal(state.nextApiFault()?.status, 503);
    assert.equal(state.nextApiFault()?.status, 503);
    assert.equal(state.nextApiFault(), undefined);
  });

  it('repeats seeded faults and names exactly', () => {
    const run = (seed: number) => {
      const state = cloud(seed);
      state.setFaults({ neverJoinProbability: 0.5, throttleProbability: 0.3 });
      const out: string[] = [];
      for (let k = 0; k < 20; k++) {
        const i = state.createInstance('workers', 0);
        out.push(
          `${i.nodeName}:${i.readyAt === undefined ? 'never' : 'boots'}:${state.nextApiFault()?.status ?? 'ok'}`,
        );
      }
      return out;
    };
    const a = run(42);
    assert.deepEqual(run(42), a);
    assert.notDeepEqual(run(43), a);
    assert.ok(a.some((s) => s.includes('never')) && a.some((s) => s.includes('boots')));
    assert.ok(a.some((s) => s.endsWith(':429')) && a.some((s) => s.endsWith(':ok')));
  });

  it('has a PRNG with values in [0, 1)', () => {
    const r = seededRandom(1);
    for (let k = 0; k < 1000; k++) {
      const v = r();
      assert.ok(v >= 0 && v < 1);
    }
  });

  it('lists groups by cluster and spreads instances over zones', () => {
    const state = cloud();
    state.addGroup({ id: 'other', cluster: 'b', role: 'Worker', launchImage: 'x', kubernetesVersion: 'v1' });
    assert.deepEqual(
      state.listGroups('nodewarden').map((g) => g.id),
      ['workers', 'cp'],
    );
    assert.deepEqual(
      state.listGroups('b').map((g) => g.id),
      ['other'],
    );
    const zones = [0, 1, 2, 3].map(() => state.createInstance('workers', 0).zone);
    assert.deepEqual(zones, ['nw-zone-a', 'nw-zone-b', 'nw-zone-c', 'nw-zone-a']);
  });
});

describe('adopting machines that run already', () => {
  it('records a Ready instance of the group without announcing it (its Node exists)', () => {
    const state = cloud();
    const events: string[] = [];
    state.onInstance((e, i) => events.push(`${e}:${i.nodeName}`));
    const i = state.adoptInstance({ groupId: 'workers', nodeName: 'workers-000', zone: 'nw-zone-b' }, 500);
    assert.equal(i.providerID, 'nwsim://workers/workers-000');
    assert.equal(i.state, 'Ready');
    assert.equal(i.image, 'img-1');
    assert.equal(i.kubernetesVersion, 'v1.33.0');
    assert.equal(i.readyAt, 500);
    state.tick(1_000_000);
    assert.deepEqual(events, []);
    assert.deepEqual(state.getGroup('workers')?.instances, [i.providerID]);
  });

  it('is idempotent, refuses a terminated machine, and deletes like any instance', () => {
    const state = cloud();
    const m = { groupId: 'cp', nodeName: 'cp-000', zone: 'nw-zone-a', image: 'old-img' };
    const a = state.adoptInstance(m, 0);
    assert.deepEqual(state.adoptInstance(m, 99), a);
    assert.equal(state.getGroup('cp')?.instances.length, 1);
    const deleted: string[] = [];
    state.onInstance((e, i) => e === 'deleted' && deleted.push(i.nodeName));
    state.deleteInstance(a.providerID, 10);
    assert.deepEqual(deleted, ['cp-000']);
    assert.throws(
      () => state.adoptInstance(m, 20),
      (e) => e instanceof CloudStateError && e.status === 409,
    );
    assert.throws(
      () => state.adoptInstance({ ...m, groupId: 'nope' }, 0),
      (e) => e instanceof CloudStateError && e.status === 404,
    );
  });
});

describe('runtime settings', () => {
  it('boots instances created after a change with the new delay; those booting keep theirs', () => {
    const state = cloud();
    const before = state.createInstance('workers', 0);
    assert.deepEqual(state.setSettings({ bootDelayMs: 1000 }), { bootDelayMs: 1000 });
    const after = state.createInstance('workers', 0);
    assert.equal(before.readyAt, 5000);
    assert.equal(after.readyAt, 1000);
    assert.equal(state.bootDelayMs, 1000);
  });

  for (const bad of [-1, 1.5, Number.NaN, 10 * 3_600_000, '1s' as unknown as number]) {
    it(`refuses a boot delay of ${String(bad)}`, () => {
      assert.throws(
        () => cloud().setSettings({ bootDelayMs: bad }),
        (e) => e instanceof CloudStateError && e.status === 400,
      );
    });
  }
});

describe('change notifications', () => {
  it('tell about every change a snapshot would hold, and nothing else', () => {
    const state = cloud();
    let changes = 0;
    state.onChange(() => changes++);
    const i = state.createInstance('workers', 0);
    state.tick(1); // nothing due
    state.tick(5000);
    state.setGroupImage('workers', 'img-2');
    state.setFaults({ failNextCalls: 1 });
    state.nextApiFault();
    state.nextApiFault(); // no fault left: no change
    state.setSettings({ bootDelayMs: 10 });
    state.deleteInstance(i.providerID, 1);
    state.getGroup('workers');
    state.listInstances();
    assert.equal(changes, 7);
  });
});
