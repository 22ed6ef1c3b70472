import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KVMCluster, KVMClusterStatusType, NodeRole } from '../../../../src/api/kvm.ts';
import {
  buildStatus,
  clusterReady,
  type ObservedVm,
  type StatusInput,
  VERSION_LIMIT,
} from '../../../../src/kvm/plan/status.ts';
import { kvmCluster } from '../fixtures.ts';

const T0 = new Date('2026-11-24T01:00:00Z');
const later = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
const NAMES = ['master-m1', 'worker-w1', 'worker-w2'];
const hashes = (tag: string) => new Map(NAMES.map((n) => [n, `${tag}-${n}`]));

interface VmState {
  hash?: string;
  ready?: boolean;
  version?: string;
  joined?: boolean;
  terminating?: boolean;
}
const vm = (deployment: string, s: VmState = {}): ObservedVm => {
  const role: NodeRole = deployment.startsWith('master-') ? 'master' : 'worker';
  return {
    pod: `${deployment}-abc12`,
    deployment,
    id: deployment.split('-')[1] ?? '',
    role,
    release: '20.1.0',
    specHash: s.hash ?? `r1-${deployment}`,
    terminating: s.terminating ?? false,
    ...(s.joined === false ? {} : { node: { ready: s.ready ?? true, version: s.version ?? 'v1.37.1' } }),
  };
};
const allVms = (s: VmState = {}) => NAMES.map((n) => vm(n, s));

function cluster(release = '20.1.0', generation = 1, status?: KVMClusterStatusType): KVMCluster {
  const kc = kvmCluster({
    masters: 1,
    workers: 2,
    generation,
    spec: { release: { version: release, kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' } },
  });
  return status ? { ...kc, status } : kc;
}
const build = (over: Partial<StatusInput> & { kc: KVMCluster }) =>
  buildStatus({ indexes: { m1: 1, w1: 2, w2: 3 }, desired: hashes('r1'), vms: allVms(), now: T0, ...over });
const cond = (s: KVMClusterStatusType, type: string) => {
  const c = s.conditions?.find((x) => x.type === type);
  assert.ok(c, type);
  return c;
};
const flags = (s: KVMClusterStatusType) =>
  Object.fromEntries(['Creating', 'Created', 'Updating', 'Updated'].map((t) => [t, cond(s, t).status]));

describe('clusterReady', () => {
  const cases: Array<{ name: string; vms: ObservedVm[]; want: boolean }> = [
    { name: 'every VM a Ready node on the desired spec and version', vms: allVms(), want: true },
    { name: 'one VM missing', vms: allVms().slice(0, 2), want: false },
    {
      name: 'one node NotReady',
      vms: [vm('master-m1'), vm('worker-w1', { ready: false }), vm('worker-w2')],
      want: false,
    },
    {
      name: 'one VM not joined',
      vms: [vm('master-m1'), vm('worker-w1', { joined: false }), vm('worker-w2')],
      want: false,
    },
    {
      name: 'one VM on an older spec',
      vms: [vm('master-m1'), vm('worker-w1', { hash: 'r0' }), vm('worker-w2')],
      want: false,
    },
    {
      name: 'one node on an older Kubernetes version',
      vms: [vm('master-m1'), vm('worker-w1', { version: 'v1.36.0' }), vm('worker-w2')],
      want: false,
    },
    {
      name: 'the only VM of a node is terminating',
      vms: [vm('master-m1'), vm('worker-w1', { terminating: true }), vm('worker-w2')],
      want: false,
    },
  ];
  for (const c of cases) {
    it(`${c.want ? 'ready' : 'not ready'}: ${c.name}`, () => {
      assert.equal(clusterReady({ kc: cluster(), desired: hashes('r1'), vms: c.vms }), c.want);
    });
  }

  it('accepts a release Kubernetes version written without the v', () => {
    const kc = cluster();
    kc.spec.release.kubernetesVersion = '1.37.1';
    assert.equal(clusterReady({ kc, desired: hashes('r1'), vms: allVms() }), true);
  });
});

describe('buildStatus: Creating, then Created for good', () => {
  it('Creating while nodes are still joining', () => {
    const s = build({ kc: cluster(), vms: [vm('master-m1'), vm('worker-w1', { joined: false })] });
    assert.deepEqual(flags(s), { Creating: 'True', Created: 'False', Updating: 'False', Updated: 'False' });
    assert.match(cond(s, 'Creating').message, /1 of 3 nodes Ready/);
    assert.equal(s.readyNodes, 1);
    assert.equal(s.desiredNodes, 3);
    assert.deepEqual(s.versions, []);
  });

  it('Created once every node is Ready on the desired versions, and the release recorded', () => {
    const s = build({ kc: cluster() });
    assert.deepEqual(flags(s), { Creating: 'False', Created: 'True', Updating: 'False', Updated: 'True' });
    assert.deepEqual(s.versions, [{ release: '20.1.0', lastTransitionTime: T0.toISOString() }]);
    assert.equal(s.readyNodes, 3);
  });

  it('stays Created when a node later goes NotReady', () => {
    const first = build({ kc: cluster() });
    const s = build({
      kc: cluster('20.1.0', 1, first),
      vms: [vm('master-m1'), vm('worker-w1', { ready: false }), vm('worker-w2')],
      now: later(5),
    });
    assert.equal(cond(s, 'Created').status, 'True');
    assert.equal(cond(s, 'Creating').status, 'False');
    assert.equal(cond(s, 'Created').lastTransitionTime, cond(first, 'Created').lastTransitionTime);
  });

  it('a node going NotReady after creation, on the current spec, is not an update', () => {
    const first = build({ kc: cluster() });
    const s = build({
      kc: cluster('20.1.0', 1, first),
      vms: [vm('master-m1'), vm('worker-w1', { ready: false }), vm('worker-w2')],
      now: later(5),
    });
    assert.equal(cond(s, 'Updating').status, 'False');
  });
});

describe('buildStatus: Updating, then Updated with the release appended', () => {
  const created = build({ kc: cluster() });

  it('a scale-down is not an update: the removed workers draining are on no spec', () => {
    const desired = new Map([...hashes('r1')].filter(([n]) => n !== 'worker-w2'));
    const s = build({
      kc: cluster('20.1.0', 2, created),
      desired,
      vms: [vm('master-m1'), vm('worker-w1'), vm('worker-w2', { terminating: true })],
      now: later(1),
    });
    assert.deepEqual(flags(s), { Creating: 'False', Created: 'True', Updating: 'False', Updated: 'True' });
    assert.equal(s.desiredNodes, 2);
  });

  it('Updating while a node runs an older spec, with the rollout wait in the message', () => {
    const s = build({
      kc: cluster('20.2.0', 2, created),
      desired: hashes('r2'),
      vms: [vm('master-m1', { hash: 'r2-master-m1' }), vm('worker-w1'), vm('worker-w2')],
      rolloutWait: 'waiting for worker-w1 to settle',
      now: later(1),
    });
    assert.deepEqual(flags(s), { Creating: 'False', Created: 'True', Updating: 'True', Updated: 'False' });
    assert.match(cond(s, 'Updating').message, /2 nodes on an older spec; waiting for worker-w1 to settle/);
    assert.deepEqual(
      s.versions?.map((v) => v.release),
      ['20.1.0'],
    );
  });

  it('Updated once every node is on the new spec, the release appended once', () => {
    const mid = build({
      kc: cluster('20.2.0', 2, created),
      desired: hashes('r2'),
      vms: allVms(),
      now: later(1),
    });
    const done = build({
      kc: cluster('20.2.0', 2, mid),
      desired: hashes('r2'),
      vms: NAMES.map((n) => vm(n, { hash: `r2-${n}` })),
      now: later(20),
    });
    assert.deepEqual(flags(done), { Creating: 'False', Created: 'True', Updating: 'False', Updated: 'True' });
    assert.deepEqual(done.versions, [
      { release: '20.1.0', lastTransitionTime: T0.toISOString() },
      { release: '20.2.0', lastTransitionTime: later(20).toISOString() },
    ]);
    const again = build({
      kc: cluster('20.2.0', 2, done),
      desired: hashes('r2'),
      vms: NAMES.map((n) => vm(n, { hash: `r2-${n}` })),
      now: later(30),
    });
    assert.deepEqual(again.versions, done.versions, 'not appended twice');
  });

  it(`keeps the last ${VERSION_LIMIT} releases`, () => {
    const history = ['1', '2', '3', '4', '5'].map((r, i) => ({
      release: `${r}.0.0`,
      lastTransitionTime: later(i).toISOString(),
    }));
    const s = build({ kc: cluster('6.0.0', 7, { ...created, versions: history }), now: later(60) });
    assert.equal(s.versions?.length, VERSION_LIMIT);
    assert.deepEqual(
      s.versions?.map((v) => v.release),
      ['2.0.0', '3.0.0', '4.0.0', '5.0.0', '6.0.0'],
    );
  });
});

describe('buildStatus: generations and nodes', () => {
  it('every condition and the status carry the generation observed', () => {
    for (const generation of [1, 7]) {
      const s = build({ kc: cluster('20.1.0', generation) });
      assert.equal(s.observedGeneration, generation);
      assert.equal(s.conditions?.length, 4);
      for (const c of s.conditions ?? []) assert.equal(c.observedGeneration, generation, c.type);
    }
  });

  it('lists each VM with its node, a terminating one as not Ready', () => {
    const s = build({
      kc: cluster(),
      vms: [vm('master-m1'), vm('worker-w1', { terminating: true }), vm('worker-w2', { joined: false })],
    });
    assert.deepEqual(
      s.nodes?.map((n) => [n.name, n.id, n.role, n.ready, n.version]),
      [
        ['master-m1-abc12', 'm1', 'master', true, 'v1.37.1'],
        ['worker-w1-abc12', 'w1', 'worker', false, 'v1.37.1'],
        ['worker-w2-abc12', 'w2', 'worker', false, undefined],
      ],
    );
    assert.deepEqual(s.nodeIndexes, { m1: 1, w1: 2, w2: 3 });
  });
});
