import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MaintenanceClock, planRealFaults, REAL_FAULT_KINDS, RealNodesChecker } from '../../soak/real.ts';

describe("the real nodes' fault schedule", () => {
  const o = { seed: 7, durationMs: 100_000, nodes: ['real-000', 'real-001'], replicas: 2 };
  it('is the same for the same seed, and another for another', () => {
    assert.deepEqual(planRealFaults(o), planRealFaults(o));
    assert.notDeepEqual(planRealFaults(o), planRealFaults({ ...o, seed: 8 }));
  });
  it('has every kind in its first round, one after another within the run', () => {
    for (const seed of [1, 2, 3, 20261126]) {
      const s = planRealFaults({ ...o, seed });
      assert.deepEqual(
        s
          .slice(0, 3)
          .map((f) => f.kind)
          .sort(),
        [...REAL_FAULT_KINDS].sort(),
      );
      for (const [i, f] of s.entries()) {
        assert.ok(f.at < o.durationMs);
        if (i > 0) assert.ok(f.at >= s[i - 1]!.at + s[i - 1]!.downMs + 8_000, 'a gap after the last');
        if (f.kind === 'operatorKill') assert.ok(f.replica! >= 0 && f.replica! < 2);
        else assert.ok(o.nodes.includes(f.node!));
      }
    }
  });
});

describe('every NodeMaintenance converges within the bound', () => {
  const nm = (name: string, phase?: string) => ({
    name,
    node: 'n1',
    createdAt: 0,
    ...(phase ? { phase } : {}),
  });
  const table: Array<[string, Array<[number, ReturnType<typeof nm>[], string[]]>, number, number]> = [
    [
      'Succeeded within the bound',
      [
        [10, [nm('a')], ['n1']],
        [50, [nm('a', 'Succeeded')], ['n1']],
      ],
      0,
      1,
    ],
    [
      'deleted and its node uncordoned within the bound',
      [
        [10, [nm('a')], ['n1']],
        [50, [], []],
      ],
      0,
      1,
    ],
    [
      'deleted but its node still cordoned: not yet',
      [
        [10, [nm('a')], ['n1']],
        [50, [], ['n1']],
      ],
      0,
      0,
    ],
    [
      'still Draining past the bound: said once',
      [
        [10, [nm('a')], ['n1']],
        [101, [nm('a')], ['n1']],
        [150, [nm('a')], ['n1']],
      ],
      1,
      0,
    ],
    // Two sampling lanes: a sample begun before the one that saw it is no proof it is gone.
    [
      'a sample begun earlier that does not list it: not gone',
      [
        [20, [nm('a')], ['n1']],
        [10, [], []],
      ],
      0,
      0,
    ],
    [
      'converged, then listed again by a late sample: not judged again',
      [
        [10, [nm('a', 'Succeeded')], []],
        [200, [nm('a')], ['n1']],
      ],
      0,
      1,
    ],
  ];
  for (const [name, samples, violations, converged] of table)
    it(name, () => {
      const c = new MaintenanceClock(100);
      for (const [at, nms, cordoned] of samples) c.observe(at, nms, new Set(cordoned));
      assert.equal(c.violations.length, violations);
      assert.equal(c.convergedMs.length, converged);
    });
  it('names the maintenance, its node and the bound', () => {
    const c = new MaintenanceClock(100_000);
    const [v] = c.observe(150_000, [nm('a')], new Set(['n1']));
    assert.equal(v?.invariant, 'notConverged');
    assert.match(
      v?.message ?? '',
      /NodeMaintenance a of n1: neither Succeeded nor let go 150\.0 s .*bound 100 s/,
    );
  });
});

describe('PDB on real nodes: a restarted runtime is not an eviction', () => {
  const pod = (ready: boolean, node: string, deleting = false) => ({
    namespace: 'soak',
    labels: { app: 'web' },
    ready,
    deleting,
    node,
  });
  const pdb = { namespace: 'soak', name: 'web', matchLabels: { app: 'web' }, minAvailable: 2 };
  const nodes = ['n1', 'n2'].map((name) => ({ name, ready: true, unschedulable: false, taints: [] }));
  const sample = (at: number, pods: ReturnType<typeof pod>[]) => ({
    at,
    pods,
    pdbs: [pdb],
    nodes,
    maintained: [],
    instances: [],
  });
  it('counts a pod not Ready on a node while its runtime restarts as involuntary, and the same pod elsewhere as a violation', () => {
    const c = new RealNodesChecker((node, at) => node === 'n2' && at >= 10 && at <= 20);
    c.check(sample(1, [pod(true, 'n1'), pod(true, 'n2')]));
    c.check(sample(15, [pod(true, 'n1'), pod(false, 'n2')]));
    assert.equal(c.violations.length, 0);
    assert.equal(c.involuntary.length, 1);
    c.check(sample(25, [pod(true, 'n1'), pod(false, 'n2')]));
    c.check(sample(15, [pod(true, 'n2'), pod(false, 'n1')]));
    c.check(sample(15, [pod(true, 'n1'), pod(false, 'n2', true)]));
    assert.equal(c.violations.length, 3);
  });
});
