// Issue 24: a one-node control plane's rollout stalled on our own webhook's quorum
// guard, and said so twice over in conditions that disagreed: Degraded=True
// DrainFailed beside DrainBlocked=False "no drain is blocked". The donor's
// NodeMaintenance now names its heir (the guard counts the cluster without the
// donor), and a NodeMaintenance refused by admission is a drain that waits.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Maintenance, type NodeMaintenance } from '../../../src/api/maintenance.ts';
import type { NodeVersion, ScalingGroup } from '../../../src/api/upgrade.ts';
import type { KubeClient } from '../../../src/runtime/client.ts';
import { ApiError } from '../../../src/runtime/errors.ts';
import type { EventRecorder } from '../../../src/runtime/events.ts';
import type { K8sObject } from '../../../src/runtime/resources.ts';
import { isAdmissionDenial, RolloutApplier } from '../../../src/upgrade/controllers/apply.ts';
import { describeRollout, stateOf } from '../../../src/upgrade/format.ts';
import { Upgrade } from '../../../src/upgrade/names.ts';
import type { CloudProvider } from '../../../src/upgrade/providers/interface.ts';
import type { Action } from '../../../src/upgrade/rollout/actions.ts';
import { type DrainBlock, drainBlocks, refusedDrain } from '../../../src/upgrade/rollout/blocked.ts';
import { classifyNodes, type ObservedNode } from '../../../src/upgrade/rollout/classify.ts';
import { type NodeObject, observe } from '../../../src/upgrade/rollout/observe.ts';
import { nextStatus } from '../../../src/upgrade/rollout/status.ts';

const NOW = 1_000_000;
const nv = {
  apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
  kind: 'NodeVersion',
  metadata: { name: 'default', generation: 1, uid: 'u1' },
  spec: { image: 'nwos-1.1.0' },
} as NodeVersion & K8sObject;

const QUORUM_REFUSAL =
  'admission webhook "vnodemaintenance.maintenance.nodewarden.dev" denied the request: cannot put control-plane node cp-000 into maintenance: it would leave 1 of 2 control-plane nodes healthy, below the quorum of 2';

/** Applies a drain of cp-000 (whose heir is cp-001) with a client whose create does `create`. */
async function drainWith(create: (o: NodeMaintenance & K8sObject) => Promise<void>) {
  const donor = {
    metadata: { name: 'cp-000', annotations: { [Upgrade.annotations.heir]: 'cp-001' } },
  } as unknown as NodeObject;
  const client = { createIfAbsent: async (_t: unknown, o: NodeMaintenance & K8sObject) => create(o) };
  const applier = new RolloutApplier(
    {
      client: client as unknown as KubeClient,
      cloud: {} as CloudProvider,
      events: { normal() {}, warning() {} } as unknown as EventRecorder,
      maintenance: () => undefined,
      node: (n) => (n === 'cp-000' ? donor : undefined),
    },
    nv,
    new Date(NOW),
    { debug() {}, info() {}, warn() {} } as never,
  );
  const drain: Action = {
    type: 'drain',
    cause: 'heirReady',
    reason: 'its heir cp-001 is Ready',
    node: 'cp-000',
  };
  await applier.applyAll([drain]);
  return applier.result;
}

describe("a donor's drain names its heir", () => {
  it('the NodeMaintenance carries the heir, for the quorum guard', async () => {
    const made: (NodeMaintenance & K8sObject)[] = [];
    await drainWith(async (o) => void made.push(o));
    assert.equal(made[0]?.metadata?.annotations?.[Maintenance.replacedByAnnotation], 'cp-001');
  });
});

describe('a drain whose NodeMaintenance an admission webhook refuses', () => {
  const table: [string, Error, { refused: number; problems: number }][] = [
    ["the quorum guard's refusal: it waits", new ApiError(400, QUORUM_REFUSAL), { refused: 1, problems: 0 }],
    [
      'a 403 from RBAC: a failure',
      new ApiError(403, 'nodemaintenances is forbidden: User "x" cannot create'),
      { refused: 0, problems: 1 },
    ],
    [
      'a server error: a failure',
      new ApiError(500, 'etcdserver: request timed out'),
      { refused: 0, problems: 1 },
    ],
    [
      'a network error: a failure',
      new Error('connect ECONNREFUSED 127.0.0.1:6443'),
      { refused: 0, problems: 1 },
    ],
  ];
  for (const [what, err, want] of table)
    it(what, async () => {
      const r = await drainWith(async () => {
        throw err;
      });
      assert.deepEqual({ refused: r.refused.length, problems: r.problems.length }, want);
      assert.equal(isAdmissionDenial(err), want.refused === 1);
    });

  it('is recorded as a block naming the node and the webhook’s words', async () => {
    const r = await drainWith(async () => {
      throw new ApiError(400, QUORUM_REFUSAL);
    });
    assert.deepEqual(r.refused, [refusedDrain('cp-000', QUORUM_REFUSAL)]);
  });
});

/** One round's status of a fleet with one outdated control-plane node, with these blocks and problems. */
function statusWith(blocked: DrainBlock[], problems = 0) {
  const s = observe({
    nodeVersion: nv,
    groups: [
      {
        metadata: { name: 'cp' },
        spec: { groupId: 'cp', role: 'ControlPlane', nodeVersion: 'default', min: 1 },
        status: { imageReference: 'nwos-1.1.0' },
      } as ScalingGroup,
    ],
    nodes: [],
    pending: [],
    maintenances: [],
    mayCreate: true,
    now: NOW,
  });
  const node: ObservedNode = {
    name: 'cp-000',
    providerID: 'sim://cp-000',
    groupId: 'cp',
    role: 'ControlPlane',
    image: 'nwos-1.0.0',
    kubernetesVersion: 'v1.37.1',
    ready: true,
  };
  const state = { ...s, nodes: [node] };
  const problem = { cause: 'drainFailed' as const, message: 'drain of node cp-000 failed' };
  return nextStatus(
    nv,
    classifyNodes(state),
    state,
    { problems: problems ? [problem] : [], replaced: 0, blocked },
    new Date(NOW),
  );
}
const condition = (st: NodeVersion['status'], type: string) => st?.conditions?.find((c) => c.type === type);

describe('the conditions of a rollout whose drain was refused agree', () => {
  it('DrainBlocked says the refusal; Degraded points at it instead of calling it a failure', () => {
    const st = statusWith([refusedDrain('cp-000', QUORUM_REFUSAL)]);
    const blocked = condition(st, 'DrainBlocked');
    assert.equal(blocked?.status, 'True');
    assert.equal(blocked?.reason, 'MaintenanceRefused');
    assert.equal(
      blocked?.message,
      `drain of node cp-000 waits: its NodeMaintenance was refused: ${QUORUM_REFUSAL}`,
    );
    assert.equal(condition(st, 'Degraded')?.status, 'False');
    assert.match(condition(st, 'Degraded')?.message ?? '', /a drain waits \(see DrainBlocked\)/);
    assert.equal(stateOf({ ...nv, status: st }), 'Progressing,DrainBlocked');
    assert.match(
      describeRollout({ ...nv, status: st }),
      /drain blocked: drain of node cp-000 waits: its NodeMaintenance was refused/,
    );
  });

  it('a refused drain beside a PDB-blocked one: EvictionBlocked, both named', () => {
    const pdb = drainBlocks([
      {
        metadata: { name: 'upgrade-w-0' },
        spec: { nodeName: 'w-0' },
        status: {
          phase: 'Running',
          blockedPods: [{ namespace: 'shop', name: 'db-0', pdb: 'db', message: 'no' }],
        },
      } as NodeMaintenance,
    ]);
    const blocked = condition(statusWith([refusedDrain('cp-000', 'no'), ...pdb]), 'DrainBlocked');
    assert.equal(blocked?.reason, 'EvictionBlocked');
    assert.match(
      blocked?.message ?? '',
      /cp-000 waits: its NodeMaintenance was refused: no; drain of node w-0 waits: pod shop\/db-0/,
    );
  });
});
