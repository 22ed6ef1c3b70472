import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeRole } from '../../../../src/api/kvm.ts';
import type { UnhealthyPolicy } from '../../../../src/kvm/plan/spec.ts';
import { planUnhealthy, type UnhealthyInput, type VmView } from '../../../../src/kvm/plan/unhealthy.ts';

const MIN = 60_000;
const NOW = 1_000 * MIN;
const policy: UnhealthyPolicy = {
  terminate: true,
  notReadyForMs: 30 * MIN,
  maxFraction: 0.1,
  pauseBetweenMs: 10 * MIN,
};

const ready = (pod: string, role: NodeRole = 'worker'): VmView => ({
  pod,
  role,
  terminating: false,
  runningSince: NOW - 100 * MIN,
  node: { ready: true, sinceMs: NOW - 100 * MIN },
});
/** A VM whose node has been NotReady for `minutes`. */
const notReady = (pod: string, minutes: number, role: NodeRole = 'worker'): VmView => ({
  pod,
  role,
  terminating: false,
  runningSince: NOW - 200 * MIN,
  node: { ready: false, sinceMs: NOW - minutes * MIN },
});
/** A VM running for `minutes` whose node never appeared. */
const neverJoined = (pod: string, minutes: number, role: NodeRole = 'worker'): VmView => ({
  pod,
  role,
  terminating: false,
  runningSince: NOW - minutes * MIN,
});
const terminating = (vm: VmView): VmView => ({ ...vm, terminating: true });
const workers = (n: number, prefix = 'w') => Array.from({ length: n }, (_, i) => ready(`${prefix}${i + 1}`));

const plan = (over: Partial<UnhealthyInput>) =>
  planUnhealthy({ policy, now: NOW, vms: [], workloadNodes: [], ...over });
const replaced = (over: Partial<UnhealthyInput>) => plan(over).replace.map((r) => r.pod);

describe('planUnhealthy: when a VM is replaced', () => {
  it('replaces nothing when turned off, and says so', () => {
    const p = plan({ policy: { ...policy, terminate: false }, vms: [notReady('w1', 60), ready('w2')] });
    assert.deepEqual(p, { replace: [], removeNodes: [], held: 'disabled' });
  });

  it('a healthy cluster: nothing, and nothing held', () => {
    assert.deepEqual(plan({ vms: workers(5) }), { replace: [], removeNodes: [] });
  });

  const thresholds: Array<[number, boolean]> = [
    [29, false],
    [30, true],
    [45, true],
  ];
  for (const [minutes, due] of thresholds) {
    it(`NotReady for ${minutes}m with notReadyFor 30m: ${due ? 'replaced' : 'kept'}`, () => {
      const p = plan({ vms: [notReady('w1', minutes), ...workers(3, 'ok')] });
      assert.deepEqual(
        p.replace,
        due ? [{ pod: 'w1', role: 'worker', cause: 'notReady', forMs: minutes * MIN }] : [],
      );
      assert.equal(p.held, undefined);
    });
  }

  it('a VM running past notReadyFor whose node never joined is replaced', () => {
    assert.deepEqual(plan({ vms: [neverJoined('w1', 31), ready('w2')] }).replace, [
      { pod: 'w1', role: 'worker', cause: 'neverJoined', forMs: 31 * MIN },
    ]);
  });

  it('a VM that joined recently or is not running yet is left alone', () => {
    const pending: VmView = { pod: 'w2', role: 'worker', terminating: false };
    assert.deepEqual(plan({ vms: [neverJoined('w1', 10), pending] }), { replace: [], removeNodes: [] });
  });

  it('a VM already being deleted is not replaced again', () => {
    assert.deepEqual(replaced({ vms: [terminating(notReady('w1', 60)), ...workers(20, 'ok')] }), []);
  });
});

describe('planUnhealthy: how many at once', () => {
  // cap = max(1, round(maxFraction × VMs)), counting replacements under way.
  const caps: Array<{ vms: number; fraction: number; cap: number }> = [
    { vms: 1, fraction: 0.1, cap: 1 },
    { vms: 4, fraction: 0.1, cap: 1 },
    { vms: 10, fraction: 0.1, cap: 1 },
    { vms: 15, fraction: 0.1, cap: 2 }, // round(1.5)
    { vms: 24, fraction: 0.1, cap: 2 },
    { vms: 25, fraction: 0.1, cap: 3 }, // round(2.5)
    { vms: 6, fraction: 0.5, cap: 3 },
    { vms: 5, fraction: 0, cap: 1 },
    { vms: 4, fraction: 1, cap: 4 },
  ];
  for (const c of caps) {
    it(`${c.vms} VMs at ${c.fraction * 100}%: ${c.cap} at once`, () => {
      const vms = Array.from({ length: c.vms }, (_, i) => notReady(`w${String(i).padStart(2, '0')}`, 40 + i));
      const p = plan({ policy: { ...policy, maxFraction: c.fraction }, vms });
      assert.equal(p.replace.length, c.cap);
      assert.equal(p.held, undefined);
    });
  }

  it('counts replacements already under way against the cap', () => {
    const vms = [terminating(ready('t1')), notReady('w1', 50), notReady('w2', 40), ...workers(17, 'ok')];
    // 20 VMs at 10%: 2, one under way, one left
    assert.deepEqual(replaced({ vms }), ['w1']);
  });

  it('holds on the budget when the cap is used up', () => {
    const vms = [terminating(ready('t1')), notReady('w1', 50), ...workers(8, 'ok')];
    assert.deepEqual(plan({ vms }), { replace: [], removeNodes: [], held: 'budget' });
  });

  it('the longest NotReady goes first, ties by name', () => {
    const vms = [notReady('w3', 40), notReady('w1', 90), notReady('w2', 60), notReady('w0', 90)];
    assert.deepEqual(
      plan({ policy: { ...policy, maxFraction: 1 }, vms }).replace.map((r) => r.pod),
      ['w0', 'w1', 'w2', 'w3'],
    );
    assert.deepEqual(replaced({ vms }), ['w0']);
  });
});

describe('planUnhealthy: masters', () => {
  it('at most one master at a time, even with room for more', () => {
    const vms = [
      notReady('m1', 60, 'master'),
      notReady('m2', 50, 'master'),
      ready('m3', 'master'),
      notReady('w1', 40),
    ];
    assert.deepEqual(replaced({ policy: { ...policy, maxFraction: 1 }, vms }), ['m1', 'w1']);
  });

  it('no master while another master is being replaced; a worker still may', () => {
    const vms = [terminating(ready('m1', 'master')), notReady('m2', 60, 'master'), notReady('w1', 40)];
    assert.deepEqual(replaced({ policy: { ...policy, maxFraction: 1 }, vms }), ['w1']);
  });

  it('only a master due while another is going: held on the budget', () => {
    const vms = [terminating(ready('m1', 'master')), notReady('m2', 60, 'master'), ...workers(2)];
    assert.deepEqual(plan({ policy: { ...policy, maxFraction: 1 }, vms }).held, 'budget');
  });
});

describe('planUnhealthy: pauseBetween', () => {
  const vms = [notReady('w1', 60), ...workers(3, 'ok')];
  const pauses: Array<[number, string[], string | undefined]> = [
    [1, [], 'pause'],
    [9, [], 'pause'],
    [10, ['w1'], undefined],
    [30, ['w1'], undefined],
  ];
  for (const [ago, want, held] of pauses) {
    it(`last replacement ${ago}m ago with a 10m pause: ${held ?? 'replaced'}`, () => {
      const p = plan({ vms, lastReplacementMs: NOW - ago * MIN });
      assert.deepEqual(
        p.replace.map((r) => r.pod),
        want,
      );
      assert.equal(p.held, held);
    });
  }
});

describe('planUnhealthy: workload Nodes without a VM (anchor deleter-controller "node")', () => {
  it('removes a NotReady Node no VM pod accounts for, keeps a Ready one', () => {
    const p = plan({
      vms: workers(2),
      workloadNodes: [
        { name: 'w1', ready: true },
        { name: 'w2', ready: true },
        { name: 'gone', ready: false },
        { name: 'stray', ready: true },
      ],
    });
    assert.deepEqual(p.removeNodes, ['gone']);
  });

  it('a NotReady Node whose VM pod is there is replaced through the pod, not removed', () => {
    const p = plan({
      vms: [notReady('w1', 60), ...workers(9, 'ok')],
      workloadNodes: [{ name: 'w1', ready: false }],
    });
    assert.deepEqual(p.removeNodes, []);
    assert.deepEqual(
      p.replace.map((r) => r.pod),
      ['w1'],
    );
  });

  it('a Node whose pod is terminating still has its pod: not removed yet', () => {
    const p = plan({ vms: [terminating(notReady('w1', 60))], workloadNodes: [{ name: 'w1', ready: false }] });
    assert.deepEqual(p.removeNodes, []);
  });

  it('removes orphans whatever holds replacements (off, pause)', () => {
    const workloadNodes = [{ name: 'gone', ready: false }];
    const vms = [notReady('w1', 60)];
    assert.deepEqual(plan({ policy: { ...policy, terminate: false }, vms, workloadNodes }).removeNodes, [
      'gone',
    ]);
    assert.deepEqual(plan({ vms, workloadNodes, lastReplacementMs: NOW }).removeNodes, ['gone']);
  });
});
