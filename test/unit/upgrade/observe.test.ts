import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeMaintenance } from '../../../src/api/maintenance.ts';
import type { NodeVersion, PendingNode, ScalingGroup } from '../../../src/api/upgrade.ts';
import { drainRetryDelayMs, maintenanceName } from '../../../src/upgrade/controllers/apply.ts';
import { Upgrade } from '../../../src/upgrade/names.ts';
import { classifyNodes } from '../../../src/upgrade/rollout/classify.ts';
import { type ClusterSnapshot, type NodeObject, observe } from '../../../src/upgrade/rollout/observe.ts';
import { nextStatus } from '../../../src/upgrade/rollout/status.ts';

const A = Upgrade.annotations;
const NOW = Date.parse('2026-11-22T10:00:00Z');

const nv = (o: Partial<NodeVersion> = {}): NodeVersion =>
  ({
    apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
    kind: 'NodeVersion',
    metadata: { name: 'default', generation: 2, uid: 'u1' },
    spec: { image: 'img-2', kubernetesVersion: 'v1.37.1' },
    ...o,
  }) as NodeVersion;

const group = (id: string, role: 'ControlPlane' | 'Worker', image = 'img-2'): ScalingGroup =>
  ({
    metadata: { name: id },
    spec: { groupId: id, role, nodeVersion: 'default' },
    status: { imageReference: image },
  }) as ScalingGroup;

function node(
  name: string,
  group: string,
  image: string,
  o: { ann?: Record<string, string>; created?: string; ready?: boolean } = {},
): NodeObject {
  return {
    metadata: {
      name,
      uid: name,
      creationTimestamp: o.created ?? '2026-01-01T00:00:00Z',
      labels: { 'nodewarden.dev/pool': group, team: 'a' },
      annotations: { [A.scalingGroup]: group, [A.image]: image, ...o.ann },
    },
    spec: { providerID: `nwsim://${group}/${name}` },
    status: {
      nodeInfo: { kubeletVersion: 'v1.37.1' } as NonNullable<NodeObject['status']>['nodeInfo'],
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True' }] as NonNullable<
        NodeObject['status']
      >['conditions'],
    },
  };
}

function view(o: Partial<ClusterSnapshot> = {}): ClusterSnapshot {
  return {
    nodeVersion: nv(),
    groups: [group('cp', 'ControlPlane'), group('w', 'Worker')],
    nodes: [],
    pending: [],
    maintenances: [],
    mayCreate: true,
    now: NOW,
    ...o,
  };
}

describe('observe', () => {
  it('reads group, image, kubelet version and readiness from the node', () => {
    const s = observe(view({ nodes: [node('w-0', 'w', 'img-1', { ready: false })] }));
    assert.deepEqual(
      s.nodes.map((n) => [n.name, n.groupId, n.role, n.image, n.kubernetesVersion, n.ready]),
      [['w-0', 'w', 'Worker', 'img-1', 'v1.37.1', false]],
    );
    assert.deepEqual(classifyNodes(s).outdated, ['w-0']);
  });
  it("reads when each node was made, and the cloud's launches not listed yet, for the surge", () => {
    const launches = new Map([['w', [NOW - 1_000]]]);
    const s = observe(
      view({
        nodes: [node('w-0', 'w', 'img-1', { created: '2026-11-22T09:59:00Z' })],
        requestedLaunches: launches,
      }),
    );
    assert.equal(s.nodes[0]?.createdAt, NOW - 60_000);
    assert.deepEqual(s.requestedLaunches, launches);
    const st = nextStatus(nv(), classifyNodes(s), s, { problems: [], replaced: 0 }, new Date(NOW));
    const outdated = st.conditions?.find((c) => c.type === 'Outdated');
    assert.match(outdated?.message ?? '', /1 replacements in flight/, 'the launch is in flight');
  });
  it('leaves out nodes of groups another NodeVersion governs', () => {
    const s = observe(view({ nodes: [node('w-0', 'w', 'img-1'), node('x-0', 'other', 'img-1')] }));
    assert.deepEqual(
      s.nodes.map((n) => n.name),
      ['w-0'],
    );
  });
  it('maps our NodeMaintenance phases to drain phases', () => {
    const nm = (node: string, phase?: string) =>
      ({
        metadata: { name: maintenanceName(node) },
        spec: { nodeName: node },
        status: phase ? { phase } : undefined,
      }) as NodeMaintenance;
    const s = observe(
      view({
        nodes: ['a', 'b', 'c', 'd'].map((n) => node(n, 'w', 'img-1')),
        maintenances: [nm('a'), nm('b', 'Running'), nm('c', 'Succeeded'), nm('d', 'Failed')],
      }),
    );
    assert.deepEqual(
      s.nodes.map((n) => n.drain),
      ['Running', 'Running', 'Succeeded', 'Failed'],
    );
  });
  it('reads the drain backoff from the node', () => {
    const at = '2026-11-22T10:05:00Z';
    const s = observe(view({ nodes: [node('w-0', 'w', 'img-1', { ann: { [A.drainRetryAt]: at } })] }));
    assert.equal(s.nodes[0]?.drainRetryAt, Date.parse(at));
  });
  it('adopts a node made during the rollout that has no PendingNode, but not a former heir', () => {
    const running = nv({ status: { startTime: '2026-11-22T09:00:00Z' } } as Partial<NodeVersion>);
    const nodes = [
      node('w-0', 'w', 'img-1'),
      node('n-0', 'w', 'img-2', { created: '2026-11-22T09:30:00Z' }),
      node('n-1', 'w', 'img-2', { created: '2026-11-22T09:30:00Z', ann: { [A.replaces]: 'w-9' } }),
    ];
    const s = observe(view({ nodeVersion: running, nodes }));
    assert.deepEqual(classifyNodes(s).mints, ['n-0']);
    assert.deepEqual(classifyNodes(s).upToDate, ['n-1']);
    // After the rollout finished, new nodes are somebody else's (the autoscaler's).
    const finished = nv({
      status: { startTime: '2026-11-22T09:00:00Z', finishTime: '2026-11-22T09:10:00Z' },
    } as Partial<NodeVersion>);
    assert.deepEqual(classifyNodes(observe(view({ nodeVersion: finished, nodes }))).mints, []);
  });
  it('reads PendingNodes with their deadline and target image', () => {
    const pn = {
      metadata: { name: 'n-0', annotations: { [A.targetImage]: 'img-2' } },
      spec: {
        providerID: 'nwsim://w/n-0',
        groupID: 'w',
        nodeName: 'n-0',
        goal: 'Join',
        deadline: '2026-11-22T10:15:00Z',
      },
    } as unknown as PendingNode;
    const s = observe(view({ pending: [pn] }));
    assert.deepEqual(s.pending, [
      {
        name: 'n-0',
        providerID: 'nwsim://w/n-0',
        groupId: 'w',
        nodeName: 'n-0',
        goal: 'Join',
        deadline: Date.parse('2026-11-22T10:15:00Z'),
        image: 'img-2',
      },
    ]);
  });
  it('counts a node the cloud refused as invalid, not as awaiting annotation (no budget held)', () => {
    const stranger = node('x-0', 'w', 'img-1');
    delete stranger.metadata.annotations;
    const s = observe(view({ nodes: [stranger], refused: new Set(['x-0']) }));
    assert.deepEqual([classifyNodes(s).invalid, classifyNodes(s).awaitingAnnotation], [['x-0'], []]);
    const t = observe(view({ nodes: [stranger] }));
    assert.deepEqual(classifyNodes(t).awaitingAnnotation, ['x-0']);
  });
  it('fills in the strategy defaults', () => {
    const s = observe(view());
    assert.deepEqual(s.strategy, { maxSurge: 1, maxUnavailable: 1, controlPlaneFirst: true, paused: false });
    const t = observe(
      view({ nodeVersion: nv({ spec: { image: 'i', strategy: { maxSurge: 10, paused: true } } }) }),
    );
    assert.deepEqual([t.strategy.maxSurge, t.strategy.paused, t.target.kubernetesVersion], [10, true, '']);
  });
});

describe('budgets written as percentages', () => {
  const workers = (n: number, image = 'img-1') =>
    Array.from({ length: n }, (_, i) => node(`w-${i}`, 'w', image));
  const withStrategy = (strategy: NonNullable<NodeVersion['spec']['strategy']>) =>
    nv({ spec: { image: 'img-2', kubernetesVersion: 'v1.37.1', strategy } });
  it('resolves them against the nodes the cluster is meant to have: surge up, unavailability down', () => {
    const s = observe(
      view({ nodeVersion: withStrategy({ maxSurge: '25%', maxUnavailable: '25%' }), nodes: workers(10) }),
    );
    assert.deepEqual([s.strategy.maxSurge, s.strategy.maxUnavailable], [3, 2]);
  });
  it('does not count heirs and mints among the nodes', () => {
    const nodes = [
      ...workers(4),
      node('w-9', 'w', 'img-2', { ann: { [A.donor]: 'w-0' } }),
      node('m-0', 'w', 'img-2', { created: '2026-11-22T09:59:00Z' }),
    ];
    nodes[0]!.metadata.annotations![A.heir] = 'w-9';
    const pending = [
      {
        metadata: { name: 'pn-m-0' },
        spec: { providerID: 'nwsim://w/m-0', groupID: 'w', nodeName: 'm-0', goal: 'Join' },
      },
    ] as PendingNode[];
    const s = observe(
      view({ nodeVersion: withStrategy({ maxSurge: '50%', maxUnavailable: '50%' }), nodes, pending }),
    );
    assert.deepEqual([s.strategy.maxSurge, s.strategy.maxUnavailable], [2, 2]);
  });
  it('keeps an integer strategy stored before percentages unchanged', () => {
    const s = observe(
      view({ nodeVersion: withStrategy({ maxSurge: 3, maxUnavailable: 2 }), nodes: workers(10) }),
    );
    assert.deepEqual(s.strategy, { maxSurge: 3, maxUnavailable: 2, controlPlaneFirst: true, paused: false });
  });
  it('clamps a surge beyond what the groups can hold (maxSize where given, else max)', () => {
    const bounded = (id: string, spec: Partial<ScalingGroup['spec']>) => {
      const g = group(id, 'Worker');
      g.spec = { ...g.spec, ...spec };
      return g;
    };
    const s = observe(
      view({
        nodeVersion: withStrategy({ maxSurge: 100000 }),
        groups: [bounded('w', { max: 10 }), bounded('x', { max: 10, rollout: { maxSize: 4 } })],
        nodes: workers(10),
      }),
    );
    assert.equal(s.strategy.maxSurge, 14);
    assert.deepEqual(s.strategy.surgeClamp, { asked: 100000, resolved: 100000, capacity: 14 });
  });
});

describe('drain retry backoff', () => {
  it('doubles from 30 s up to 10 min', () => {
    assert.deepEqual([1, 2, 3, 5, 10].map(drainRetryDelayMs), [30_000, 60_000, 120_000, 480_000, 600_000]);
  });
});

describe('status', () => {
  const now = new Date(NOW);
  it('reports lists, counts, per-group progress and conditions at the observed generation', () => {
    const nodes = [node('cp-0', 'cp', 'img-2'), node('w-0', 'w', 'img-1'), node('w-1', 'w', 'img-2')];
    const s = observe(view({ nodes }));
    const st = nextStatus(nv(), classifyNodes(s), s, { problems: [], replaced: 0 }, now);
    assert.deepEqual(
      [st.upToDate, st.outdated, st.counts?.total, st.observedGeneration],
      [['cp-0', 'w-1'], ['w-0'], 3, 2],
    );
    assert.deepEqual(
      st.groups?.map((g) => [g.groupId, g.total, g.upToDate, g.outdated]),
      [
        ['cp', 1, 1, 0],
        ['w', 2, 1, 1],
      ],
    );
    const cond = (t: string) => st.conditions?.find((c) => c.type === t);
    assert.equal(cond('Outdated')?.status, 'True');
    assert.equal(cond('Progressing')?.reason, 'RollingOut');
    assert.equal(cond('Degraded')?.status, 'False');
    assert.equal(cond('Outdated')?.observedGeneration, 2);
    assert.equal(st.startTime, '2026-11-22T10:00:00Z');
  });
  it('finishes the rollout, keeping its start and counting replacements', () => {
    const s = observe(view({ nodes: [node('w-1', 'w', 'img-2')] }));
    const prev = nv({ status: { startTime: '2026-11-22T09:00:00Z', replaced: 4 } } as Partial<NodeVersion>);
    const st = nextStatus(prev, classifyNodes(s), s, { problems: [], replaced: 5 }, now);
    assert.deepEqual(
      [st.startTime, st.finishTime, st.replaced],
      ['2026-11-22T09:00:00Z', '2026-11-22T10:00:00Z', 5],
    );
    assert.equal(st.conditions?.find((c) => c.type === 'Outdated')?.status, 'False');
    assert.equal(st.conditions?.find((c) => c.type === 'Progressing')?.reason, 'RolloutComplete');
  });
  it('says Degraded with the reason of the first problem, and Paused when paused', () => {
    const paused = nv({ spec: { image: 'img-2', strategy: { paused: true } } });
    const s = observe(view({ nodeVersion: paused, nodes: [node('w-0', 'w', 'img-1')] }));
    const st = nextStatus(
      paused,
      classifyNodes(s),
      s,
      { problems: [{ cause: 'drainFailed', message: 'drain of node w-0 failed (1 time): x' }], replaced: 0 },
      now,
    );
    const cond = (t: string) => st.conditions?.find((c) => c.type === t);
    assert.deepEqual([cond('Degraded')?.status, cond('Degraded')?.reason], ['True', 'DrainFailed']);
    assert.deepEqual([cond('Progressing')?.status, cond('Progressing')?.reason], ['False', 'RolloutPaused']);
    assert.match(st.lastError ?? '', /w-0/);
  });
});
