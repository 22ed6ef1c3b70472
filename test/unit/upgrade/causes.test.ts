import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeVersion, ScalingGroup } from '../../../src/api/upgrade.ts';
import type { KubeClient } from '../../../src/runtime/client.ts';
import { ApiError } from '../../../src/runtime/errors.ts';
import type { EventRecorder } from '../../../src/runtime/events.ts';
import type { K8sObject } from '../../../src/runtime/resources.ts';
import { RolloutApplier } from '../../../src/upgrade/controllers/apply.ts';
import { problemKind, upgradeProblems } from '../../../src/upgrade/metrics.ts';
import { Upgrade } from '../../../src/upgrade/names.ts';
import type { CloudProvider } from '../../../src/upgrade/providers/interface.ts';
import type { Action } from '../../../src/upgrade/rollout/actions.ts';
import {
  degradedReason,
  type ProblemCause,
  type RolloutProblem,
} from '../../../src/upgrade/rollout/causes.ts';
import {
  classifyNodes,
  type ObservedNode,
  type ObservedState,
} from '../../../src/upgrade/rollout/classify.ts';
import { observe } from '../../../src/upgrade/rollout/observe.ts';
import { planRollout } from '../../../src/upgrade/rollout/planner.ts';
import { nextStatus } from '../../../src/upgrade/rollout/status.ts';
import { node as outdated } from './fixtures.ts';

const NOW = 1_000_000;
const A = Upgrade.annotations;
const nv = {
  apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
  kind: 'NodeVersion',
  metadata: { name: 'causes', generation: 1, uid: 'u1' },
  spec: { image: 'img-2' },
} as NodeVersion & K8sObject;

describe('the Degraded reason and the problem metric come from the cause, not the text', () => {
  const table: [RolloutProblem, string, string | undefined][] = [
    [{ cause: 'drainFailed', message: '' }, 'DrainFailed', 'drain_failed'],
    [{ cause: 'drainBackoff', message: '' }, 'DrainFailed', undefined],
    [{ cause: 'neverJoined', message: '' }, 'NodeNeverJoined', 'never_joined'],
    [{ cause: 'joinAbandoned', message: '' }, 'NodeNeverJoined', undefined],
    [{ cause: 'cloudError', message: '' }, 'CloudError', undefined],
    [{ cause: 'actionFailed', action: 'createNode', message: '' }, 'RolloutProblem', 'cloud_error'],
    [{ cause: 'actionFailed', action: 'deleteNode', message: '' }, 'RolloutProblem', 'cloud_error'],
    [{ cause: 'actionFailed', action: 'drain', message: '' }, 'DrainFailed', undefined],
    [{ cause: 'actionFailed', action: 'drainFailed', message: '' }, 'DrainFailed', undefined],
    [{ cause: 'actionFailed', action: 'cancelDrain', message: '' }, 'RolloutProblem', undefined],
    [{ cause: 'actionFailed', action: 'pair', message: '' }, 'RolloutProblem', undefined],
  ];
  for (const [problem, reason, kind] of table) {
    const name = problem.action ? `${problem.cause} (${problem.action})` : problem.cause;
    it(`${name}: Degraded ${reason}, counted as ${kind ?? 'nothing'}`, () => {
      assert.equal(degradedReason(problem), reason);
      assert.equal(problemKind(problem), kind);
    });
  }

  it('names the condition after the first problem whatever its message says', () => {
    const s = observe({
      nodeVersion: nv,
      groups: [group('w')],
      nodes: [],
      pending: [],
      maintenances: [],
      mayCreate: true,
      now: NOW,
    });
    const pretend = { ...s, nodes: [outdated('w-0')] };
    const reasonFor = (cause: ProblemCause, message: string) =>
      nextStatus(
        nv,
        classifyNodes(pretend),
        pretend,
        { problems: [{ cause, message }], replaced: 0 },
        new Date(NOW),
      ).conditions?.find((c) => c.type === 'Degraded');
    assert.equal(reasonFor('cloudError', 'drain of node w-0 failed')?.reason, 'CloudError');
    assert.equal(reasonFor('drainFailed', 'cloud: never joined')?.reason, 'DrainFailed');
    assert.equal(reasonFor('drainFailed', 'cloud: never joined')?.message, 'cloud: never joined');
  });
});

describe('every planned action says why', () => {
  const base = (nodes: ObservedNode[], o: Partial<ObservedState> = {}): ObservedState => ({
    nodes,
    pending: [],
    groups: [{ id: 'w', role: 'Worker', min: 0, max: Number.POSITIVE_INFINITY, image: 'img-2' }],
    target: { image: 'img-2', kubernetesVersion: '' },
    strategy: { maxSurge: 2, maxUnavailable: 2, controlPlaneFirst: true, paused: false },
    now: NOW,
    ...o,
  });
  const causes = (plan: Action[]) => plan.map((a) => `${a.type}:${a.cause}`);

  it('a replacement: create, pair, drain, delete the donor as replaced', () => {
    assert.deepEqual(causes(planRollout(base([outdated('w-0')]))), ['createNode:outdated']);
    const mint = fresh('n1');
    const pending = [
      { name: 'pn-n1', providerID: 'sim://n1', groupId: 'w', goal: 'Join' as const, deadline: NOW + 1 },
    ];
    assert.deepEqual(causes(planRollout(base([outdated('w-0'), mint], { pending }))), [
      'pair:mintJoined',
      'deletePending:paired',
    ]);
    const donor = outdated('w-0', { annotations: { heir: 'n1' } });
    const heir = fresh('n1', { annotations: { donor: 'w-0' } });
    assert.deepEqual(causes(planRollout(base([donor, heir]))), ['drain:heirReady']);
    assert.deepEqual(causes(planRollout(base([{ ...donor, drain: 'Succeeded' }, heir]))), [
      'deleteNode:replaced',
      'clearPairing:donorDeleted',
    ]);
    assert.deepEqual(causes(planRollout(base([{ ...donor, drain: 'Failed' }, heir]))), [
      'drainFailed:drainFailed',
    ]);
  });

  it('an expired join: the instance deleted as never joined, the PendingNode as expired', () => {
    const pending = [
      { name: 'pn-n1', providerID: 'sim://n1', groupId: 'w', goal: 'Join' as const, deadline: NOW - 1 },
    ];
    const plan = planRollout(base([fresh('w-0')], { pending }));
    assert.deepEqual(causes(plan), ['deleteNode:neverJoined', 'deletePending:joinExpired']);
  });

  it('a surplus node: drained and deleted as obsolete', () => {
    const surplus = fresh('n1', { annotations: { obsolete: true } });
    assert.deepEqual(causes(planRollout(base([surplus]))), ['drain:obsolete']);
    assert.deepEqual(causes(planRollout(base([{ ...surplus, drain: 'Succeeded' }]))), [
      'deleteNode:obsolete',
    ]);
  });
});

describe('the applier switches on the cause of a deleted node', () => {
  function applier(cloud = { deleteNode: async () => {} } as unknown as CloudProvider) {
    const events: [string, string, string][] = [];
    const recorder = {
      normal: (_o: K8sObject, reason: string, _a: string, note: string) =>
        events.push(['Normal', reason, note]),
      warning: (_o: K8sObject, reason: string, _a: string, note: string) =>
        events.push(['Warning', reason, note]),
    } as unknown as EventRecorder;
    const client = {
      // No Node registered: an instance past its Join deadline is deleted as never joined.
      get: async (_t: unknown, name: string) => {
        throw new ApiError(404, `nodes "${name}" not found`, { reason: 'NotFound' });
      },
      delete: async () => {},
      createIfAbsent: async () => {},
      patch: async () => {},
    } as unknown as KubeClient;
    const log = { debug() {}, info() {}, warn() {} } as never;
    const a = new RolloutApplier(
      { client, cloud, events: recorder, maintenance: () => undefined, node: () => undefined },
      nv,
      new Date(NOW),
      log,
    );
    return { a, events };
  }
  const neverJoinedCount = async () =>
    (await upgradeProblems.get()).values.find(
      (v) => v.labels.node_version === 'causes' && v.labels.kind === 'never_joined',
    )?.value ?? 0;

  it('a node that never joined is a Warning and a problem, whatever the reason text says', async () => {
    const { a, events } = applier();
    const before = await neverJoinedCount();
    await a.applyAll([
      {
        type: 'deleteNode',
        cause: 'neverJoined',
        node: 'n1',
        providerID: 'sim://n1',
        reason: 'replaced by n2',
      },
    ]);
    assert.deepEqual(
      events.map(([type, reason]) => [type, reason]),
      [['Warning', 'NodeNeverJoined']],
    );
    assert.deepEqual(
      a.result.problems.map((p) => p.cause),
      ['neverJoined'],
    );
    assert.equal(a.result.replaced, 0);
    assert.equal(await neverJoinedCount(), before + 1);
  });

  it('a replaced donor counts as replaced, whatever the reason text says', async () => {
    const { a, events } = applier();
    await a.applyAll([
      {
        type: 'deleteNode',
        cause: 'replaced',
        node: 'w-0',
        providerID: 'sim://w-0',
        reason: 'instance never joined',
      },
    ]);
    assert.equal(a.result.replaced, 1);
    assert.deepEqual(a.result.problems, []);
    assert.deepEqual(
      events.map(([type, reason]) => [type, reason]),
      [['Normal', 'DeletedNode']],
    );
  });

  it('a failed action is a problem naming the action', async () => {
    const { a } = applier({ createNode: async () => Promise.reject(new Error('quota')) } as never);
    await a.applyAll([{ type: 'createNode', cause: 'outdated', group: 'w', outdated: [], reason: '' }]);
    assert.deepEqual(a.result.problems, [
      { cause: 'actionFailed', action: 'createNode', message: 'createNode failed: quota' },
    ]);
  });
});

describe('observe: a ScalingGroup’s own rollout budgets', () => {
  it('reach the planner; without them the overall budgets alone apply and the group has no size cap', () => {
    const s = observe({
      nodeVersion: nv,
      groups: [group('a', { maxSurge: 1, maxUnavailable: 2, maxSize: 7 }), group('b')],
      nodes: [],
      pending: [],
      maintenances: [],
      mayCreate: true,
      now: NOW,
    });
    assert.deepEqual(s.groups, [
      { id: 'a', role: 'Worker', min: 1, max: 7, image: 'img-2', maxSurge: 1, maxUnavailable: 2 },
      { id: 'b', role: 'Worker', min: 1, max: Number.POSITIVE_INFINITY, image: 'img-2' },
    ]);
  });

  it('keep a group to its own surge under a larger overall one', () => {
    const nodes = ['a', 'b'].flatMap((g) =>
      [0, 1, 2].map((i) => ({
        metadata: {
          name: `${g}-${i}`,
          annotations: { [A.scalingGroup]: g, [A.image]: 'img-1' },
        },
        spec: { providerID: `sim://${g}-${i}` },
        status: { nodeInfo: { kubeletVersion: 'v1.37.1' }, conditions: [{ type: 'Ready', status: 'True' }] },
      })),
    ) as never;
    const strategy = { maxSurge: 3, maxUnavailable: 3 };
    const s = observe({
      nodeVersion: { ...nv, spec: { image: 'img-2', strategy } },
      groups: [group('a', { maxSurge: 1 }), group('b')],
      nodes,
      pending: [],
      maintenances: [],
      mayCreate: true,
      now: NOW,
    });
    const created = planRollout(s).flatMap((a) => (a.type === 'createNode' ? [a.group] : []));
    assert.deepEqual(created, ['a', 'b', 'b']);
  });
});

function group(id: string, rollout?: NonNullable<ScalingGroup['spec']['rollout']>): ScalingGroup {
  return {
    metadata: { name: id },
    spec: { groupId: id, role: 'Worker', nodeVersion: 'causes', min: 1, ...(rollout ? { rollout } : {}) },
    status: { imageReference: 'img-2' },
  } as ScalingGroup;
}

const fresh = (name: string, o: Partial<ObservedNode> = {}) => outdated(name, { image: 'img-2', ...o });
