// An operator killed after the cloud accepted createNode and before the PendingNode was
// written leaves an instance nothing in the cluster records. The rollout must count it
// as a replacement on its way (and record it), not launch one more: the planner runs on
// what observe makes of the cluster and the cloud's instance list.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeVersion, PendingNode, ScalingGroup } from '../../../src/api/upgrade.ts';
import { Upgrade } from '../../../src/upgrade/names.ts';
import type { CloudInstance, InstanceState } from '../../../src/upgrade/providers/interface.ts';
import type { Action } from '../../../src/upgrade/rollout/actions.ts';
import { type NodeObject, observe } from '../../../src/upgrade/rollout/observe.ts';
import { planRollout } from '../../../src/upgrade/rollout/planner.ts';
import { rolloutStarting } from '../../../src/upgrade/rollout/status.ts';

const A = Upgrade.annotations;
const NOW = Date.parse('2026-11-22T10:00:00Z');
const OLD = 'img-1';
const NEW = 'img-2';

const nodeVersion = {
  apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
  kind: 'NodeVersion',
  metadata: { name: 'default', generation: 1, uid: 'u1' },
  spec: { image: NEW, strategy: { maxSurge: 2, maxUnavailable: 2, nodeReadyTimeout: '10m' } },
  status: { startTime: new Date(NOW - 60_000).toISOString() },
} as NodeVersion;

const groups = ['w', 'x'].map(
  (id) =>
    ({
      metadata: { name: id },
      spec: { groupId: id, role: 'Worker', nodeVersion: 'default' },
      status: { imageReference: NEW },
    }) as ScalingGroup,
);

const pid = (name: string, group = 'w') => `nwsim://${group}/${name}`;

function node(name: string, image = OLD, group = 'w'): NodeObject {
  return {
    metadata: {
      name,
      uid: name,
      creationTimestamp: '2026-01-01T00:00:00Z',
      annotations: { [A.scalingGroup]: group, [A.image]: image },
    },
    spec: { providerID: pid(name, group) },
    status: {
      nodeInfo: { kubeletVersion: 'v1.37.1' } as NonNullable<NodeObject['status']>['nodeInfo'],
      conditions: [{ type: 'Ready', status: 'True' }] as NonNullable<NodeObject['status']>['conditions'],
    },
  };
}

function joining(name: string, group = 'w'): PendingNode {
  return {
    metadata: { name, annotations: { [A.targetImage]: NEW } },
    spec: {
      providerID: pid(name, group),
      groupID: group,
      nodeName: name,
      goal: 'Join',
      deadline: new Date(NOW + 60_000).toISOString(),
    },
  } as unknown as PendingNode;
}

function instance(name: string, o: { image?: string; state?: InstanceState; group?: string } = {}) {
  return {
    providerID: pid(name, o.group),
    nodeName: name,
    image: o.image ?? NEW,
    state: o.state ?? 'Creating',
    createdAt: NOW - 5_000,
  } satisfies CloudInstance;
}

/** The cloud lists every node of the group and the extra instances given. */
function plan(o: { nodes: NodeObject[]; pending?: PendingNode[]; extra?: CloudInstance[] }): Action[] {
  const listed = new Map<string, CloudInstance[]>();
  for (const n of o.nodes) {
    const g = n.metadata.annotations![A.scalingGroup]!;
    const image = n.metadata.annotations![A.image]!;
    listed.set(g, [
      ...(listed.get(g) ?? []),
      instance(n.metadata.name!, { image, state: 'Ready', group: g }),
    ]);
  }
  for (const p of o.pending ?? []) {
    listed.set(p.spec.groupID, [...(listed.get(p.spec.groupID) ?? []), instance(p.spec.nodeName!)]);
  }
  for (const i of o.extra ?? []) {
    const g = i.providerID.split('/')[2]!;
    listed.set(g, [...(listed.get(g) ?? []), i]);
  }
  const state = observe({
    nodeVersion,
    groups,
    nodes: o.nodes,
    pending: o.pending ?? [],
    maintenances: [],
    mayCreate: true,
    instances: listed,
    now: NOW,
  });
  return planRollout(state);
}

const count = (as: Action[], type: Action['type']) => as.filter((a) => a.type === type).length;
const outdated = (n: number) => Array.from({ length: n }, (_, i) => node(`old-${i}`));

describe('an instance launched but never recorded (operator killed between the cloud call and the PendingNode)', () => {
  const table: Array<{
    name: string;
    nodes: NodeObject[];
    pending?: PendingNode[];
    extra?: CloudInstance[];
    creates: number;
    adopts: string[];
  }> = [
    {
      name: 'counts as one of the surge: one PendingNode and one unrecorded launch at surge 2 make no new node',
      nodes: outdated(4),
      pending: [joining('new-a')],
      extra: [instance('new-b')],
      creates: 0,
      adopts: ['new-b'],
    },
    {
      name: 'with nothing recorded, two unrecorded launches fill surge 2',
      nodes: outdated(4),
      extra: [instance('new-a'), instance('new-b')],
      creates: 0,
      adopts: ['new-a', 'new-b'],
    },
    {
      name: 'an instance the cloud already calls Ready whose Node has not appeared counts too',
      nodes: outdated(4),
      extra: [instance('new-a', { state: 'Ready' })],
      creates: 1,
      adopts: ['new-a'],
    },
    {
      name: 'an instance of the old image is not a replacement (the group had not switched yet)',
      nodes: outdated(4),
      extra: [instance('new-a', { image: OLD })],
      creates: 2,
      adopts: [],
    },
    {
      name: 'an instance on its way out is nothing',
      nodes: outdated(4),
      extra: [instance('new-a', { state: 'Terminating' }), instance('new-b', { state: 'Failed' })],
      creates: 2,
      adopts: [],
    },
    {
      name: 'instances recorded by a PendingNode or a Node are not adopted twice',
      nodes: [...outdated(3), node('new-n', NEW)],
      pending: [joining('new-a')],
      creates: 1,
      adopts: [],
    },
    {
      name: 'one in another of our groups counts for that group, not this one',
      nodes: [...outdated(2), node('x-old', OLD, 'x')],
      extra: [instance('new-x', { group: 'x' })],
      creates: 1,
      adopts: ['new-x'],
    },
  ];
  for (const t of table) {
    it(t.name, () => {
      const actions = plan(t);
      assert.equal(count(actions, 'createNode'), t.creates, 'new nodes');
      assert.deepEqual(
        actions.flatMap((a) => (a.type === 'adoptInstance' ? [a.nodeName] : [])),
        t.adopts,
        'adopted',
      );
    });
  }

  it('an adopted instance keeps the time the cloud launched it (its join deadline runs from then)', () => {
    const actions = plan({ nodes: outdated(2), extra: [instance('new-a')] });
    const adopt = actions.find((a) => a.type === 'adoptInstance');
    assert.ok(adopt && adopt.type === 'adoptInstance');
    assert.equal(adopt.createdAt, NOW - 5_000);
    assert.equal(adopt.providerID, pid('new-a'));
    assert.equal(adopt.group, 'w');
  });

  it('without the cloud list no node is made (an unrecorded launch cannot be ruled out)', () => {
    const state = observe({
      nodeVersion,
      groups,
      nodes: outdated(4),
      pending: [],
      maintenances: [],
      mayCreate: false,
      now: NOW,
    });
    assert.equal(count(planRollout(state), 'createNode'), 0);
  });
});

describe("a rollout's start, recorded before its first round acts", () => {
  const at = new Date('2026-11-22T10:00:00.640Z');
  const cases: [string, NodeVersion['status'], boolean, string | undefined][] = [
    ['no rollout yet, work to do: started now (in seconds)', undefined, true, '2026-11-22T10:00:00Z'],
    [
      'the last one finished, work again: a new start',
      { startTime: '2026-11-22T09:00:00Z', finishTime: '2026-11-22T09:10:00Z' },
      true,
      '2026-11-22T10:00:00Z',
    ],
    ['one running: its start stays', { startTime: '2026-11-22T09:00:00Z' }, true, undefined],
    ['nothing to do: no start', undefined, false, undefined],
  ];
  for (const [name, prev, active, want] of cases)
    it(name, () => assert.equal(rolloutStarting(prev, active, at), want));
});
