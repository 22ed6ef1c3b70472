import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeMaintenance } from '../../../src/api/maintenance.ts';
import type { NodeVersion, PendingNode, ScalingGroup } from '../../../src/api/upgrade.ts';
import { Upgrade } from '../../../src/upgrade/names.ts';
import type { NodeObject } from '../../../src/upgrade/rollout/observe.ts';
import { planRound, type RoundSnapshot } from '../../../src/upgrade/rollout/round.ts';

const A = Upgrade.annotations;
const NOW = Date.parse('2026-11-22T10:00:00Z');

const nodeVersion = (status?: NodeVersion['status']): NodeVersion =>
  ({
    metadata: { name: 'default', generation: 1 },
    spec: { image: 'img-2', kubernetesVersion: 'v1.37.1', strategy: { maxSurge: 1 } },
    ...(status ? { status } : {}),
  }) as NodeVersion;

const group = (image = 'img-2'): ScalingGroup =>
  ({
    metadata: { name: 'w' },
    spec: { groupId: 'w', role: 'Worker', nodeVersion: 'default' },
    status: { imageReference: image },
  }) as ScalingGroup;

function node(
  name: string,
  image: string,
  ann: Record<string, string> = {},
  created = '2026-01-01T00:00:00Z',
): NodeObject {
  return {
    metadata: {
      name,
      creationTimestamp: created,
      annotations: { [A.scalingGroup]: 'w', [A.image]: image, ...ann },
    },
    spec: { providerID: `nwsim://w/${name}` },
    status: {
      nodeInfo: { kubeletVersion: 'v1.37.1' } as NonNullable<NodeObject['status']>['nodeInfo'],
      conditions: [{ type: 'Ready', status: 'True' }] as NonNullable<NodeObject['status']>['conditions'],
    },
  };
}

const maintenance = (nodeName: string): NodeMaintenance =>
  ({ metadata: { name: `upgrade-${nodeName}` }, spec: { nodeName } }) as NodeMaintenance;

function snapshot(o: Partial<RoundSnapshot> = {}): RoundSnapshot {
  return {
    nodeVersion: nodeVersion(),
    groups: [group()],
    nodes: [node('w-0', 'img-1')],
    pending: [],
    maintenances: [],
    instances: new Map([['w', []]]),
    mayCreate: true,
    autoscalerRunning: false,
    now: NOW,
    ...o,
  };
}

const types = (r: ReturnType<typeof planRound>) => r.actions.map((a) => `${a.type}:${a.cause}`);

describe('a rollout round, decided from one snapshot', () => {
  const cases: [string, Partial<RoundSnapshot>, Partial<ReturnType<typeof planRound>>][] = [
    [
      'an outdated node: the autoscaler is paused and a replacement made',
      {},
      { active: true, autoscalers: 'pause', planned: 1, waitingFor: [] },
    ],
    [
      'an autoscaler still running: no node is made until it stops, and the rollout says so',
      { autoscalerRunning: true },
      {
        active: true,
        autoscalers: 'pause',
        planned: 0,
        waitingFor: ['waiting for the cluster autoscaler to stop'],
      },
    ],
    [
      'no instance list from the cloud: nothing is made, and the rollout says what it waits for',
      { instances: undefined, mayCreate: false },
      { planned: 0, waitingFor: ["waiting for the cloud to list the groups' instances"] },
    ],
    [
      'a group still launching the old image: the rollout waits for it',
      { groups: [group('img-1')] },
      { planned: 0, waitingFor: ['waiting for group w to launch img-2'] },
    ],
    [
      'nothing to replace: the autoscaler is given back, and a running one is no reason to wait',
      { nodes: [node('w-0', 'img-2')], autoscalerRunning: true },
      { active: false, autoscalers: 'restore', planned: 0, waitingFor: [], actions: [] },
    ],
  ];
  for (const [what, given, want] of cases) {
    it(what, () => {
      const round = planRound(snapshot(given));
      for (const [key, value] of Object.entries(want)) {
        assert.deepEqual(round[key as keyof typeof round], value, key);
      }
    });
  }

  it('cancels our drains of nodes that are gone after the plan, without counting them as planned', () => {
    const round = planRound(snapshot({ nodes: [node('w-0', 'img-2')], maintenances: [maintenance('gone')] }));
    assert.deepEqual(types(round), ['cancelDrain:nodeGone']);
    assert.equal(round.planned, 0);
  });

  it('reports a drain waiting out its backoff, with the last error', () => {
    const heir = node('n-0', 'img-2', { [A.donor]: 'w-0' });
    const donor = node('w-0', 'img-1', {
      [A.heir]: 'n-0',
      [A.drainRetryAt]: new Date(NOW + 60_000).toISOString(),
      [A.drainLastError]: 'pdb',
    });
    const round = planRound(snapshot({ nodes: [donor, heir] }));
    assert.deepEqual(
      round.problems.map((p) => [p.cause, p.message]),
      [['drainBackoff', 'drain of node w-0 failed: pdb; retrying at 2026-11-22T10:01:00.000Z']],
    );
  });

  it('reports a Join given up on (a Leave still carrying its target image)', () => {
    const leave = {
      metadata: { name: 'p-1', annotations: { [A.targetImage]: 'img-2' } },
      spec: { providerID: 'nwsim://w/n-1', groupID: 'w', nodeName: 'n-1', goal: 'Leave' },
    } as unknown as PendingNode;
    assert.deepEqual(
      planRound(snapshot({ pending: [leave] })).problems.map((p) => p.cause),
      ['joinAbandoned'],
    );
  });

  it('counts heirs made since the rollout started whose donor is gone as replaced', () => {
    const started = nodeVersion({ startTime: '2026-11-22T09:00:00Z' });
    const nodes = [
      node('n-0', 'img-2', { [A.replaces]: 'w-0' }, '2026-11-22T09:30:00Z'),
      node('n-1', 'img-2', { [A.replaces]: 'w-1' }, '2026-11-22T08:30:00Z'),
      node('w-2', 'img-1'),
    ];
    assert.equal(planRound(snapshot({ nodeVersion: started, nodes })).replaced, 1);
  });
});
