import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type Condition,
  type ConditionUpdate,
  findCondition,
  isConditionTrue,
  removeCondition,
  setCondition,
} from '../../../src/runtime/conditions.ts';

const t0 = new Date('2025-01-02T03:04:05.678Z');
const t1 = new Date('2025-01-02T04:00:00.000Z');

const ready: Condition = {
  type: 'Ready',
  status: 'False',
  reason: 'Draining',
  message: 'evicting pods',
  lastTransitionTime: '2025-01-02T03:04:05Z',
  observedGeneration: 1,
};

describe('setCondition', () => {
  const cases: Array<{
    name: string;
    start: Condition[] | undefined;
    next: ConditionUpdate;
    want: Condition[];
  }> = [
    {
      name: 'adds a new condition stamped with now, in seconds precision',
      start: undefined,
      next: {
        type: 'Ready',
        status: 'False',
        reason: 'Draining',
        message: 'evicting pods',
        observedGeneration: 1,
      },
      want: [ready],
    },
    {
      name: 'keeps lastTransitionTime when only reason, message and generation change',
      start: [ready],
      next: {
        type: 'Ready',
        status: 'False',
        reason: 'WaitingForPDB',
        message: 'blocked',
        observedGeneration: 2,
      },
      want: [{ ...ready, reason: 'WaitingForPDB', message: 'blocked', observedGeneration: 2 }],
    },
    {
      name: 'moves lastTransitionTime when the status changes',
      start: [ready],
      next: { type: 'Ready', status: 'True', reason: 'Drained', message: '', observedGeneration: 2 },
      want: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Drained',
          message: '',
          lastTransitionTime: '2025-01-02T04:00:00Z',
          observedGeneration: 2,
        },
      ],
    },
    {
      name: 'drops observedGeneration when the update has none',
      start: [ready],
      next: { type: 'Ready', status: 'False', reason: 'Draining', message: 'evicting pods' },
      want: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Draining',
          message: 'evicting pods',
          lastTransitionTime: ready.lastTransitionTime,
        },
      ],
    },
    {
      name: 'leaves other conditions alone and in place',
      start: [{ ...ready, type: 'Cordoned' }, ready],
      next: { type: 'Cordoned', status: 'True', reason: 'Maintenance', message: 'x', observedGeneration: 1 },
      want: [
        {
          ...ready,
          type: 'Cordoned',
          status: 'True',
          reason: 'Maintenance',
          message: 'x',
          lastTransitionTime: '2025-01-02T04:00:00Z',
        },
        ready,
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const now = c.start === undefined ? t0 : t1;
      const before = structuredClone(c.start);
      assert.deepEqual(setCondition(c.start, c.next, now), c.want);
      assert.deepEqual(c.start, before, 'the input is not mutated');
    });
  }

  const bad: Array<[string, Partial<ConditionUpdate>]> = [
    ['empty reason', { reason: '' }],
    ['lower-case reason', { reason: 'draining' }],
    ['reason with spaces', { reason: 'Pods Evicted' }],
    ['reason with punctuation', { reason: 'Drain-Failed' }],
    ['empty type', { type: '' }],
    ['unknown status', { status: 'Yes' as ConditionUpdate['status'] }],
  ];
  for (const [what, patch] of bad) {
    it(`throws on ${what}`, () => {
      const next = {
        type: 'Ready',
        status: 'True',
        reason: 'Fine',
        message: '',
        ...patch,
      } as ConditionUpdate;
      assert.throws(() => setCondition([], next), Error);
    });
  }
});

describe('finding and removing conditions', () => {
  const list: Condition[] = [ready, { ...ready, type: 'Healthy', status: 'True', reason: 'Probed' }];

  it('finds a condition by type, or undefined', () => {
    assert.equal(findCondition(list, 'Healthy')?.reason, 'Probed');
    assert.equal(findCondition(list, 'Missing'), undefined);
    assert.equal(findCondition(undefined, 'Ready'), undefined);
  });

  for (const [type, want] of [
    ['Healthy', true],
    ['Ready', false],
    ['Missing', false],
  ] as const) {
    it(`isConditionTrue(${type}) is ${want}`, () => {
      assert.equal(isConditionTrue(list, type), want);
    });
  }

  it('removes a condition into a new array', () => {
    const out = removeCondition(list, 'Ready');
    assert.deepEqual(
      out.map((c) => c.type),
      ['Healthy'],
    );
    assert.equal(list.length, 2);
    assert.deepEqual(removeCondition(undefined, 'Ready'), []);
  });
});
