import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  InvariantChecker,
  type NodeView,
  type PodView,
  type Sample,
  type Violation,
} from '../../soak/invariants.ts';
import {
  drainProblems,
  FAULT_UNSEEN_MS,
  KvmChecker,
  type KvmClusterView,
  mastersOut,
  type VmPodView,
} from '../../soak/kvm-invariants.ts';

const vm = (name: string, o: Partial<VmPodView> = {}): VmPodView => ({
  name,
  nodeId: name.split('-')[1] ?? name,
  role: name.startsWith('master') ? 'master' : 'worker',
  deleting: false,
  held: true,
  evicted: false,
  faulted: false,
  ...o,
});
const node = (name: string, ready = true): NodeView => ({ name, ready, unschedulable: false, taints: [] });
/** An app pod; on no node (waiting to be scheduled) when nodeName is "". */
const app = (name: string, nodeName: string, o: Partial<PodView> = {}): PodView => ({
  name,
  namespace: 'default',
  labels: { app: 'app' },
  ready: true,
  deleting: false,
  ...(nodeName ? { node: nodeName } : {}),
  ...o,
});
const pdb = { namespace: 'default', name: 'app', matchLabels: { app: 'app' }, minAvailable: 1 };

/** A cluster of masters m1..m3 and workers w1, w2, every VM a Ready node, the app on the workers. */
function cluster(o: Partial<KvmClusterView> = {}, w: Partial<NonNullable<KvmClusterView['workload']>> = {}) {
  const vms = ['master-m1', 'master-m2', 'master-m3', 'worker-w1', 'worker-w2'].map((n) => vm(n));
  return {
    name: 'soak-kvm/kvm-0',
    masters: ['m1', 'm2', 'm3'],
    drainTimeoutMs: 20_000,
    vms,
    workload: {
      nodes: vms.map((v) => node(v.name)),
      pods: [app('app-a', 'worker-w1'), app('app-b', 'worker-w2')],
      pdbs: [pdb],
      ...w,
    },
    ...o,
  } satisfies KvmClusterView;
}
const sample = (at: number, c: KvmClusterView): Sample => ({
  at,
  pods: [],
  pdbs: [],
  nodes: [],
  maintained: [],
  instances: [],
  kvm: { clusters: [c] },
});
/** Feeds the samples in turn; the invariants each one broke. */
function run(samples: Sample[]): { found: Violation[]; involuntary: Violation[] } {
  const involuntary: Violation[] = [];
  const checker = new KvmChecker(involuntary);
  return { found: samples.flatMap((s) => checker.check(s)), involuntary };
}
const withVm = (c: KvmClusterView, name: string, o: Partial<VmPodView>): KvmClusterView => ({
  ...c,
  vms: c.vms.map((v) => (v.name === name ? { ...v, ...o } : v)),
});

describe('KVM: no VM pod goes without its drain having finished or timed out', () => {
  const table: Array<[string, Partial<VmPodView>, Partial<NonNullable<KvmClusterView['workload']>>, number]> =
    [
      ['held by the finalizer while it drains', { deleting: true, deletionAskedAt: 0 }, {}, 0],
      [
        'let go, drained, its node empty',
        { deleting: true, held: false, drained: 'Drained' },
        { pods: [app('app-b', 'worker-w2')] },
        0,
      ],
      [
        'let go, timed out after drain.timeout',
        { deleting: true, held: false, drained: 'TimedOut', deletionAskedAt: 0 },
        {},
        0,
      ],
      [
        'let go, skipped (the cluster deleted, or never joined)',
        { deleting: true, held: false, drained: 'Skipped' },
        {},
        0,
      ],
      ['let go with no outcome at all', { deleting: true, held: false }, {}, 1],
      [
        'said drained with an app pod still on its node',
        { deleting: true, held: false, drained: 'Drained' },
        {},
        1,
      ],
      [
        'said drained, the pod left on it being deleted',
        { deleting: true, held: false, drained: 'Drained' },
        { pods: [app('app-a', 'worker-w1', { deleting: true })] },
        0,
      ],
      [
        'said timed out before drain.timeout',
        { deleting: true, held: false, drained: 'TimedOut', deletionAskedAt: 15_000 },
        {},
        1,
      ],
    ];
  for (const [name, w1, workload, violations] of table)
    it(name, () => {
      const c = withVm(cluster({}, workload), 'worker-w1', w1);
      assert.equal(drainProblems(c, 30_000).length, violations, drainProblems(c, 30_000).join('; '));
      const { found } = run([sample(30_000, c)]);
      assert.equal(found.filter((v) => v.invariant === 'vmDrain').length, violations);
    });

  it('is judged even when the workload cluster does not answer', () => {
    const c = withVm(cluster({ workload: undefined }), 'worker-w1', { deleting: true, held: false });
    assert.deepEqual(
      run([sample(1, c)]).found.map((v) => v.invariant),
      ['vmDrain'],
    );
  });
});

describe('KVM: no PDB inside a workload cluster below its minimum', () => {
  const onW1Lost = {
    nodes: [...cluster().workload.nodes.filter((n) => n.name !== 'worker-w1'), node('worker-w1', false)],
  };
  const table: Array<[string, Array<Partial<NonNullable<KvmClusterView['workload']>>>, number, number]> = [
    [
      'met throughout',
      [{}, { pods: [app('app-a', 'worker-w1'), app('app-b', 'worker-w2', { ready: false })] }],
      0,
      0,
    ],
    [
      'not judged before it was met once (the app starting)',
      [{ pods: [app('app-a', 'worker-w1', { ready: false })] }, {}],
      0,
      0,
    ],
    [
      'below once armed: both pods evicted at once',
      [
        {},
        {
          pods: [
            app('app-a', 'worker-w1', { deleting: true }),
            app('app-b', 'worker-w2', { deleting: true }),
          ],
        },
      ],
      1,
      0,
    ],
    [
      'below only because the node under it lost its VM: involuntary',
      [
        {},
        {
          ...onW1Lost,
          pods: [app('app-a', 'worker-w1', { ready: false }), app('app-b', 'worker-w2', { deleting: true })],
        },
      ],
      0,
      1,
    ],
    [
      // Seed 424242 at 200 nodes: faults killed the workers, then the one master; no Node was left.
      'below while its pods wait for a node and none is left to run them: involuntary',
      [{}, { nodes: [], pods: [app('app-a', '', { ready: false }), app('app-b', '', { ready: false })] }],
      0,
      1,
    ],
    [
      'a pod waiting for a node while a Ready untainted one could take it is judged',
      [
        {},
        {
          pods: [app('app-a', 'worker-w1', { deleting: true }), app('app-b', '', { ready: false })],
        },
      ],
      1,
      0,
    ],
    [
      // Cordons and taints are the operator's (its drains): no loss of nodes.
      'a pod waiting for a node while the Ready nodes left are cordoned or tainted is judged',
      [
        {},
        {
          nodes: [
            { ...node('master-m1'), taints: ['node-role.kubernetes.io/control-plane'] },
            { ...node('worker-w1'), unschedulable: true },
          ],
          pods: [app('app-a', '', { ready: false }), app('app-b', 'worker-w1', { deleting: true })],
        },
      ],
      1,
      0,
    ],
    [
      'below with its pods on Nodes gone with their VMs, or deleted by pod GC: involuntary',
      [
        {},
        {
          pods: [
            app('app-a', 'worker-w8', { ready: false }),
            app('app-b', 'worker-w9', { ready: false, deleting: true, disruption: 'DeletionByPodGC' }),
          ],
        },
      ],
      0,
      1,
    ],
    [
      'below with its pods on Nodes that went while their VMs still run: judged',
      [
        {},
        {
          nodes: cluster().workload.nodes.filter((n) => !n.name.startsWith('worker')),
          pods: [
            app('app-a', 'worker-w1', { ready: false }),
            app('app-b', 'worker-w2', { ready: false, deleting: true, disruption: 'DeletionByPodGC' }),
          ],
        },
      ],
      1,
      0,
    ],
    [
      'an evicted pod on a Node that went is still judged',
      [
        {},
        {
          nodes: cluster().workload.nodes.filter((n) => !n.name.startsWith('worker')),
          pods: [
            app('app-a', 'worker-w1', { ready: false, deleting: true, disruption: 'EvictionByEvictionAPI' }),
            app('app-b', 'worker-w2', { ready: false, deleting: true, disruption: 'EvictionByEvictionAPI' }),
          ],
        },
      ],
      1,
      0,
    ],
  ];
  for (const [name, workloads, violations, involuntary] of table)
    it(name, () => {
      const r = run(workloads.map((w, i) => sample(i + 1, cluster({}, w))));
      assert.equal(r.found.filter((v) => v.invariant === 'kvmPdb').length, violations);
      assert.equal(r.involuntary.length, involuntary);
    });

  it("keeps two clusters' PDBs of the same name apart", () => {
    const other = { ...cluster(), name: 'soak-kvm/kvm-1' };
    const checker = new KvmChecker([]);
    checker.check({ ...sample(1, cluster()), kvm: { clusters: [cluster(), other] } });
    const below = cluster({}, { pods: [] });
    const found = checker.check({ ...sample(2, below), kvm: { clusters: [below, other] } });
    assert.deepEqual(
      found.map((v) => v.message.split(':')[0]),
      ['workload cluster soak-kvm/kvm-0'],
    );
  });
});

describe('KVM: never more than one master of a workload cluster out at once', () => {
  const steady = cluster();
  const deleting = (c: KvmClusterView, name: string, o: Partial<VmPodView> = {}) =>
    withVm(c, name, { deleting: true, ...o });
  /** Its VM died: the hypervisor says so, and its node is NotReady. */
  const dead = (c: KvmClusterView, name: string): KvmClusterView => {
    const d = withVm(c, name, { faulted: true });
    return {
      ...d,
      workload: {
        ...c.workload!,
        nodes: c.workload!.nodes.map((n) => (n.name === name ? node(name, false) : n)),
      },
    };
  };
  const table: Array<[string, KvmClusterView[], number]> = [
    ['steady', [steady, steady], 0],
    [
      'one master upgraded at a time',
      [steady, deleting(steady, 'master-m1'), steady, deleting(steady, 'master-m2'), steady],
      0,
    ],
    [
      'a second master taken while the first is out',
      [steady, deleting(steady, 'master-m1'), deleting(deleting(steady, 'master-m1'), 'master-m2')],
      1,
    ],
    [
      'two masters taken in the same sample',
      [steady, deleting(deleting(steady, 'master-m1'), 'master-m2')],
      1,
    ],
    [
      'a master out because its new VM is not a Ready node yet, and another taken',
      [
        steady,
        deleting(steady, 'master-m1'),
        {
          ...steady,
          workload: {
            ...steady.workload,
            nodes: steady.workload.nodes.filter((n) => n.name !== 'master-m1'),
          },
        },
        {
          ...deleting(steady, 'master-m2'),
          workload: {
            ...steady.workload,
            nodes: steady.workload.nodes.filter((n) => n.name !== 'master-m1'),
          },
        },
      ],
      1,
    ],
    [
      'a master a fault killed, and the operator replacing it',
      [
        steady,
        dead(steady, 'master-m1'),
        deleting(dead(steady, 'master-m1'), 'master-m1'),
        { ...steady, vms: steady.vms.filter((v) => v.name !== 'master-m1') },
      ],
      0,
    ],
    [
      "a second master dies while one is upgraded (the fault's doing)",
      [steady, deleting(steady, 'master-m1'), dead(deleting(steady, 'master-m1'), 'master-m2')],
      0,
    ],
    [
      // Seed 424242 (2026-11-26): an upgrade took m1 and the fault killed m2 between two samples.
      'a master taken and another dying between the same two samples (which came first is unknown)',
      [steady, dead(deleting(steady, 'master-m1'), 'master-m2')],
      0,
    ],
    [
      'a master taken while another is dead',
      [steady, dead(steady, 'master-m1'), deleting(dead(steady, 'master-m1'), 'master-m2')],
      1,
    ],
    [
      'a master evicted by a host maintenance while one is upgraded',
      [
        steady,
        deleting(steady, 'master-m1'),
        deleting(deleting(steady, 'master-m1'), 'master-m2', { evicted: true }),
      ],
      0,
    ],
    [
      // Seed 424242 at 200 nodes (2026-11-27): m1 and m2 died together; m1's death was seen only
      // as its VM's before the operator replaced it (here: the workload cluster did not answer).
      'a master whose death was seen only by the hypervisor, replaced: no taking',
      [
        steady,
        dead(steady, 'master-m2'),
        { ...dead(dead(steady, 'master-m2'), 'master-m1'), workload: undefined },
        withVm(dead(steady, 'master-m2'), 'master-m1', { name: 'master-m1-new' }),
      ],
      0,
    ],
    [
      'a master whose VM died while its Node still read Ready, replaced: no taking',
      [
        steady,
        dead(steady, 'master-m2'),
        withVm(dead(steady, 'master-m2'), 'master-m1', { faulted: true }),
        withVm(dead(steady, 'master-m2'), 'master-m1', { name: 'master-m1-new' }),
      ],
      0,
    ],
    [
      // A death seen earlier counts as out from then on, though no sample saw the master out.
      'a master taken while another, dead unseen for samples, is replaced',
      [
        steady,
        { ...dead(steady, 'master-m1'), workload: undefined },
        { ...dead(steady, 'master-m1'), workload: undefined },
        deleting(withVm(steady, 'master-m1', { name: 'master-m1-new' }), 'master-m2'),
      ],
      1,
    ],
    [
      'a master taken while another, dead with its Node still Ready, is replaced',
      [
        steady,
        withVm(steady, 'master-m1', { faulted: true }),
        withVm(steady, 'master-m1', { faulted: true }),
        deleting(withVm(steady, 'master-m1', { name: 'master-m1-new' }), 'master-m2'),
      ],
      1,
    ],
    [
      "a dead VM's pod lingering, deleting, after its replacement serves excuses no later taking",
      [
        steady,
        dead(steady, 'master-m1'),
        {
          ...steady,
          vms: [...steady.vms, vm('master-m1-old', { nodeId: 'm1', deleting: true, faulted: true })],
        },
        {
          ...dead(steady, 'master-m2'),
          vms: [
            ...dead(steady, 'master-m2').vms,
            vm('master-m1-old', { nodeId: 'm1', deleting: true, faulted: true }),
          ],
        },
        {
          ...deleting(dead(steady, 'master-m2'), 'master-m1'),
          vms: [
            ...deleting(dead(steady, 'master-m2'), 'master-m1').vms,
            vm('master-m1-old', { nodeId: 'm1', deleting: true, faulted: true }),
          ],
        },
      ],
      1,
    ],
    [
      'a master that served again after its death, then taken while another is dead',
      [
        steady,
        withVm(steady, 'master-m1', { faulted: true }),
        steady,
        dead(steady, 'master-m2'),
        deleting(dead(steady, 'master-m2'), 'master-m1'),
      ],
      1,
    ],
    [
      'not judged while the cluster comes up',
      [deleting(deleting(steady, 'master-m1'), 'master-m2'), steady],
      0,
    ],
  ];
  // Samples 5 s apart: a death one sample earlier was there for the operator to see.
  for (const [name, samples, violations] of table)
    it(name, () => {
      const { found } = run(samples.map((c, i) => sample((i + 1) * 5_000, c)));
      assert.equal(
        found.filter((v) => v.invariant === 'mastersOut').length,
        violations,
        found.map((v) => v.message).join('; '),
      );
    });

  // Seed 424242 (2026-11-26, busy cores): m1's VM died ~100 ms before the update of m3.
  const timed: Array<[string, Array<[number, KvmClusterView]>, number]> = [
    [
      'a master taken within FAULT_UNSEEN_MS of another dying (the operator could not see it yet)',
      [
        [1_000, steady],
        [10_659, dead(steady, 'master-m1')],
        [11_041, deleting(dead(steady, 'master-m1'), 'master-m3', { deletionAskedAt: 10_000 })],
      ],
      0,
    ],
    [
      'a master taken FAULT_UNSEEN_MS after another died',
      [
        [1_000, steady],
        [10_659 - FAULT_UNSEEN_MS, dead(steady, 'master-m1')],
        [11_041, deleting(dead(steady, 'master-m1'), 'master-m3', { deletionAskedAt: 10_000 })],
      ],
      1,
    ],
    [
      'a master taken 400 ms after another was evicted (the budget the rollout asks knew it)',
      [
        [1_000, steady],
        [10_659, deleting(steady, 'master-m1', { evicted: true })],
        [
          11_041,
          deleting(deleting(steady, 'master-m1', { evicted: true }), 'master-m3', {
            deletionAskedAt: 10_000,
          }),
        ],
      ],
      1,
    ],
  ];
  for (const [name, samples, violations] of timed)
    it(name, () => {
      const { found } = run(samples.map(([at, c]) => sample(at, c)));
      assert.equal(
        found.filter((v) => v.invariant === 'mastersOut').length,
        violations,
        found.map((v) => v.message).join('; '),
      );
    });

  it('an older sample finishing after a newer one does not begin an episode again', () => {
    const checker = new KvmChecker([]);
    checker.check(sample(1, steady));
    checker.check(sample(2, dead(steady, 'master-m1')));
    checker.check(sample(4, steady));
    assert.deepEqual(checker.check(sample(3, deleting(deleting(steady, 'master-m1'), 'master-m2'))), []);
  });

  it('mastersOut: a master with no live VM pod that is a Ready node', () => {
    assert.deepEqual(mastersOut(steady), []);
    assert.deepEqual(mastersOut(deleting(steady, 'master-m2')), ['m2']);
    assert.deepEqual(mastersOut({ ...steady, vms: steady.vms.filter((v) => v.nodeId !== 'm3') }), ['m3']);
  });
});

describe("KVM checks run inside the soak's checker", () => {
  it("reports them as the run's violations", () => {
    const checker = new InvariantChecker([]);
    const kvm = new KvmChecker(checker.involuntary);
    checker.extraChecks.push((s) => kvm.check(s));
    checker.check(sample(1, withVm(cluster(), 'worker-w1', { deleting: true, held: false })));
    assert.deepEqual(
      checker.violations.map((v) => v.invariant),
      ['vmDrain'],
    );
  });
});
