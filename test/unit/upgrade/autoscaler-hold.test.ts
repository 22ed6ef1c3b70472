import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeVersion } from '../../../src/api/upgrade.ts';
import {
  type AutoscalerHold,
  autoscalerHold,
  otherRolloutHoldsAutoscalers,
} from '../../../src/upgrade/rollout/autoscaler-hold.ts';

type Status = NonNullable<NodeVersion['status']>;
type Counts = NonNullable<Status['counts']>;
type Group = NonNullable<Status['groups']>[number];

const ZERO: Counts = {
  total: 0,
  upToDate: 0,
  outdated: 0,
  donors: 0,
  heirs: 0,
  mints: 0,
  pending: 0,
  obsolete: 0,
  invalid: 0,
  awaitingAnnotation: 0,
};

function nv(
  name: string,
  o: {
    outdated?: boolean;
    counts?: Partial<Counts>;
    groups?: Partial<Group>[];
    generation?: number;
    observed?: number;
    deleting?: boolean;
    noStatus?: boolean;
  } = {},
): NodeVersion {
  const generation = o.generation ?? 1;
  const status: Status = {
    observedGeneration: o.observed ?? generation,
    counts: { ...ZERO, ...o.counts },
    groups: (o.groups ?? []).map((g) => ({
      groupId: 'w',
      role: 'Worker',
      total: 0,
      upToDate: 0,
      outdated: 0,
      replacing: 0,
      draining: 0,
      ...g,
    })),
    conditions: [
      {
        type: 'Outdated',
        status: o.outdated ? 'True' : 'False',
        reason: o.outdated ? 'NodeVersionsOutOfDate' : 'NodeVersionsUpToDate',
        message: '',
        lastTransitionTime: '2026-11-26T10:00:00Z',
        observedGeneration: o.observed ?? generation,
      },
    ],
  };
  return {
    metadata: {
      name,
      generation,
      ...(o.deleting ? { deletionTimestamp: '2026-11-26T10:00:00Z' } : {}),
    },
    spec: { image: 'img-2' },
    ...(o.noStatus ? {} : { status }),
  } as NodeVersion;
}

describe('which other rollouts keep the cluster autoscaler paused', () => {
  const table: [string, NodeVersion, boolean, AutoscalerHold][] = [
    ['a finished rollout', nv('a', { counts: { total: 4, upToDate: 4 } }), false, 'finished'],
    [
      'a rollout with outdated nodes left to replace',
      nv('a', { outdated: true, counts: { total: 4, upToDate: 1, outdated: 3 } }),
      true,
      'nodesToReplace',
    ],
    [
      'a rollout with only surplus nodes left to remove',
      nv('a', { outdated: true, counts: { total: 5, upToDate: 4, obsolete: 1 } }),
      true,
      'nodesToReplace',
    ],
    [
      'a rollout whose last new node is still joining',
      nv('a', { outdated: true, counts: { total: 4, upToDate: 4 }, groups: [{ replacing: 1 }] }),
      true,
      'replacementsInFlight',
    ],
    [
      'a rollout whose heir has not taken over yet',
      nv('a', { outdated: true, counts: { total: 5, upToDate: 3, outdated: 1, donors: 1, heirs: 1 } }),
      true,
      'replacementsInFlight',
    ],
    [
      // The Cluster API control-plane Node: nobody may replace it, so it is never work.
      'an Outdated rollout whose only nodes left are invalid (control-plane Machines)',
      nv('a', { outdated: true, counts: { total: 5, upToDate: 4, invalid: 1 } }),
      false,
      'nothingItCanDo',
    ],
    [
      'an Outdated rollout whose groups are gone, a Join of theirs left over',
      nv('a', { outdated: true, counts: { total: 1, invalid: 1, pending: 1 } }),
      false,
      'nothingItCanDo',
    ],
    [
      'an Outdated rollout being deleted (its finalizer gives the autoscalers back)',
      nv('a', { outdated: true, counts: { outdated: 3 }, deleting: true }),
      false,
      'deleting',
    ],
    [
      'a finished rollout whose image was just changed, no round has seen it yet',
      nv('a', { generation: 2, observed: 1, counts: { total: 4, upToDate: 4 } }),
      true,
      'specNotYetSeen',
    ],
    ['a NodeVersion just created, no status yet', nv('a', { noStatus: true }), true, 'specNotYetSeen'],
  ];
  for (const [name, v, holds, why] of table) {
    it(`${holds ? 'holds' : 'does not hold'} them: ${name}`, () => {
      assert.deepEqual(autoscalerHold(v), { holds, why });
    });
  }

  it('never counts the NodeVersion asking', () => {
    const self = nv('self', { outdated: true, counts: { outdated: 2 } });
    assert.equal(otherRolloutHoldsAutoscalers([self], 'self'), false);
    assert.equal(
      otherRolloutHoldsAutoscalers([self, nv('b', { outdated: true, counts: { outdated: 1 } })], 'self'),
      true,
    );
  });

  it('a rollout that can never finish does not keep them paused once the others are done', () => {
    const stuck = nv('capi', { outdated: true, counts: { total: 5, upToDate: 4, invalid: 1 } });
    const done = nv('done', { counts: { total: 3, upToDate: 3 } });
    assert.equal(otherRolloutHoldsAutoscalers([stuck, done], 'done'), false);
  });
});
