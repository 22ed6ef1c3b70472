import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type GroupBudget,
  InvariantChecker,
  type PodView,
  type Sample,
  unownedNodes,
  writesWithoutLease,
} from '../../soak/invariants.ts';

const pod = (ready: boolean, o: Partial<PodView> = {}): PodView => ({
  namespace: 'soak',
  labels: { app: 'web' },
  ready,
  deleting: false,
  ...o,
});
const pdb = { namespace: 'soak', name: 'web', matchLabels: { app: 'web' }, minAvailable: 2 };
const sample = (o: Partial<Sample> = {}): Sample => ({
  at: 1,
  pods: [],
  pdbs: [],
  nodes: [],
  maintained: [],
  instances: [],
  ...o,
});
const group: GroupBudget = { id: 'g', size: 3, maxSurge: 2, maxUnavailable: 0 };
const instances = (ready: number, creating = 0, terminating = 0) => [
  ...Array.from({ length: ready }, () => ({ groupId: 'g', state: 'Ready' })),
  ...Array.from({ length: creating }, () => ({ groupId: 'g', state: 'Creating' })),
  ...Array.from({ length: terminating }, () => ({ groupId: 'g', state: 'Terminating' })),
];

describe('PDB invariant', () => {
  const table: Array<[string, PodView[][], number]> = [
    [
      'met throughout',
      [
        [pod(true), pod(true)],
        [pod(true), pod(true), pod(false)],
      ],
      0,
    ],
    [
      'one below once armed',
      [
        [pod(true), pod(true)],
        [pod(true), pod(false)],
      ],
      1,
    ],
    [
      'a pod being deleted does not count',
      [
        [pod(true), pod(true)],
        [pod(true), pod(true, { deleting: true })],
      ],
      1,
    ],
    ['not armed while still starting', [[pod(false)], [pod(true)]], 0],
    [
      'pods of another app or namespace do not count',
      [
        [pod(true), pod(true)],
        [pod(true), pod(true, { labels: { app: 'x' } })],
      ],
      1,
    ],
  ];
  for (const [name, rounds, want] of table) {
    it(name, () => {
      const c = new InvariantChecker([]);
      for (const pods of rounds) c.check(sample({ pods, pdbs: [pdb] }));
      assert.equal(c.violations.filter((v) => v.invariant === 'pdb').length, want);
    });
  }
});

describe('samples that finish out of order (two sampling lanes)', () => {
  const pods = (healthy: number) => Array.from({ length: healthy }, () => pod(true));
  // [start time of each sample, in the order it finished; healthy pods or Ready instances], violations
  const table: Array<[string, Array<[number, number]>, number]> = [
    [
      'begun before the arming sample, finished after it: not judged',
      [
        [2, 2],
        [1, 1],
      ],
      0,
    ],
    [
      'begun after the arming sample: judged',
      [
        [1, 2],
        [2, 1],
      ],
      1,
    ],
    [
      'begun after the arming sample though finished before an older one: judged',
      [
        [2, 2],
        [1, 1],
        [3, 1],
      ],
      1,
    ],
  ];
  for (const [name, rounds, want] of table) {
    it(`PDB: ${name}`, () => {
      const c = new InvariantChecker([]);
      for (const [at, healthy] of rounds) c.check(sample({ at, pods: pods(healthy), pdbs: [pdb] }));
      assert.equal(c.violations.length, want);
    });
    it(`group: ${name}`, () => {
      const c = new InvariantChecker([group]);
      // Ready instances: 3 meets the group's size, 1 is below it.
      for (const [at, healthy] of rounds)
        c.check(sample({ at, instances: instances(healthy === 2 ? 3 : 1, healthy === 2 ? 0 : 2) }));
      assert.deepEqual(
        c.violations.map((v) => v.invariant),
        Array(want).fill('underSize'),
      );
    });
  }
});

describe('PDB violation message', () => {
  it('counts the pods and names each that does not count, with who disrupted it', () => {
    const c = new InvariantChecker([]);
    c.check(sample({ pods: [pod(true), pod(true)], pdbs: [pdb] }));
    const [v] = c.check(
      sample({
        pods: [
          pod(true, { name: 'web-a', node: 'n1' }),
          pod(true, { name: 'web-b', node: 'n2', deleting: true, disruption: 'EvictionByEvictionAPI' }),
          pod(false, { name: 'web-c', node: 'n3' }),
        ],
        pdbs: [pdb],
      }),
    );
    assert.equal(
      v?.message,
      'PDB soak/web: 1 healthy pods, fewer than minAvailable 2 ' +
        '(of 3 pods; web-b on n2: deleting, EvictionByEvictionAPI; web-c on n3: not Ready)',
    );
  });
});

describe('PDB invariant: node failures are told apart from evictions', () => {
  const nodes = [
    { name: 'n1', ready: true, unschedulable: false, taints: [] },
    { name: 'n2', ready: false, unschedulable: false, taints: [] },
  ];
  const armed = [pod(true, { node: 'n1' }), pod(true, { node: 'n2' })];
  const table: Array<[string, PodView[], number, number]> = [
    [
      'a pod not Ready on a node that lost its heartbeat: involuntary',
      [pod(true, { node: 'n1' }), pod(false, { node: 'n2' })],
      0,
      1,
    ],
    [
      'a pod not Ready on a Ready node: a violation',
      [pod(true, { node: 'n2' }), pod(false, { node: 'n1' })],
      1,
      0,
    ],
    ['a pod missing altogether: a violation', [pod(true, { node: 'n1' })], 1, 0],
    [
      'a pod being deleted on a lost node: still a violation',
      [pod(true, { node: 'n1' }), pod(false, { node: 'n2', deleting: true })],
      1,
      0,
    ],
  ];
  for (const [name, pods, violations, involuntary] of table) {
    it(name, () => {
      const c = new InvariantChecker([]);
      c.check(sample({ pods: armed, pdbs: [pdb], nodes }));
      c.check(sample({ pods, pdbs: [pdb], nodes }));
      assert.equal(c.violations.filter((v) => v.invariant === 'pdb').length, violations);
      assert.equal(c.involuntary.length, involuntary);
    });
  }
});

describe('cordon and taint ownership', () => {
  const table: Array<[string, Partial<Sample>, string[]]> = [
    [
      'cordoned with a maintenance',
      { nodes: [{ name: 'a', unschedulable: true, taints: [] }], maintained: ['a'] },
      [],
    ],
    ['cordoned without one', { nodes: [{ name: 'a', unschedulable: true, taints: [] }] }, ['a']],
    [
      'our drain taint without one',
      { nodes: [{ name: 'a', unschedulable: false, taints: ['nodewarden.dev/drain'] }] },
      ['a'],
    ],
    [
      'a taint not ours',
      { nodes: [{ name: 'a', unschedulable: false, taints: ['node.kubernetes.io/unreachable'] }] },
      [],
    ],
    [
      'a maintenance of another node does not own it',
      { nodes: [{ name: 'a', unschedulable: true, taints: [] }], maintained: ['b'] },
      ['a'],
    ],
  ];
  for (const [name, s, want] of table) it(name, () => assert.deepEqual(unownedNodes(sample(s)), want));
});

describe('cloud instances within the rollout budgets', () => {
  const table: Array<[string, ReturnType<typeof instances>[], string[]]> = [
    ['size plus surge is fine', [instances(3), instances(3, 2)], []],
    ['one more is over-provisioned', [instances(3), instances(3, 3)], ['overProvisioned']],
    ['terminating ones are not live', [instances(3), instances(3, 2, 4)], []],
    ['below size minus unavailable once armed', [instances(3), instances(2, 1)], ['underSize']],
    ['not armed before the group is up', [instances(1, 2), instances(3)], []],
  ];
  for (const [name, rounds, want] of table) {
    it(name, () => {
      const c = new InvariantChecker([group]);
      for (const i of rounds) c.check(sample({ instances: i }));
      assert.deepEqual(
        c.violations.map((v) => v.invariant),
        want,
      );
    });
  }
});

describe('no write from a replica without the lease', () => {
  const lease = '/apis/coordination.k8s.io/v1/namespaces/soak/leases/nw';
  const holders = [
    { at: 0, holder: 'a' },
    { at: 10, holder: 'a' },
    { at: 20, holder: 'b' },
    { at: 30, holder: 'b' },
  ];
  const w = (at: number, replica: string, path = '/api/v1/nodes/x') => ({
    at,
    replica,
    method: 'PATCH',
    path,
  });
  const table: Array<[string, ReturnType<typeof w>[], number]> = [
    ['the holder writes', [w(5, 'a'), w(25, 'b')], 0],
    ['a write at the change, either side holding', [w(15, 'a'), w(15, 'b')], 0],
    ['the old leader writes after the new one took over', [w(25, 'a')], 1],
    ['a standby writes', [w(5, 'b')], 1],
    ['lease writes are the election itself', [w(25, 'a', lease), w(5, 'b', `${lease}?x=1`)], 0],
    ['before the first sample nothing is known', [w(-1, 'b')], 0],
  ];
  for (const [name, writes, want] of table)
    it(name, () => assert.equal(writesWithoutLease(writes, holders, lease).length, want));
});
