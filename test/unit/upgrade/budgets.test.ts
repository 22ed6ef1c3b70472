import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bothZero,
  clampMessage,
  resolveBudget,
  resolveBudgets,
  surgeCapacity,
} from '../../../src/upgrade/rollout/budgets.ts';

describe('a budget written as a count or a percentage, as a Deployment resolves it', () => {
  const cases: Array<[number | string, number, 'up' | 'down', number]> = [
    [3, 10, 'up', 3],
    [3, 0, 'down', 3],
    ['25%', 10, 'up', 3],
    ['25%', 10, 'down', 2],
    ['10%', 30, 'up', 3],
    ['10%', 30, 'down', 3],
    ['1%', 5, 'up', 1],
    ['1%', 5, 'down', 0],
    ['100%', 7, 'down', 7],
    ['150%', 4, 'up', 6],
    ['0%', 9, 'down', 0],
    ['50%', 0, 'up', 0],
  ];
  for (const [budget, nodes, round, want] of cases) {
    it(`${JSON.stringify(budget)} of ${nodes} nodes rounded ${round} is ${want}`, () => {
      assert.equal(resolveBudget(budget, nodes, round), want);
    });
  }
});

describe('resolving a strategy', () => {
  it('rounds surge up and unavailability down', () => {
    assert.deepEqual(resolveBudgets({ maxSurge: '25%', maxUnavailable: '25%' }, 10), {
      maxSurge: 3,
      maxUnavailable: 2,
    });
  });
  it('keeps integer budgets as they are', () => {
    assert.deepEqual(resolveBudgets({ maxSurge: 2, maxUnavailable: 1 }, 50), {
      maxSurge: 2,
      maxUnavailable: 1,
    });
  });
  it('keeps maxUnavailable 0 with a surge: a surge-only rollout', () => {
    assert.deepEqual(resolveBudgets({ maxSurge: '20%', maxUnavailable: 0 }, 10), {
      maxSurge: 2,
      maxUnavailable: 0,
    });
  });
  it('allows one drain when percentages both come to 0, as a Deployment does', () => {
    // maxSurge is at least 1 on the API; only an empty cluster resolves it to 0.
    assert.deepEqual(resolveBudgets({ maxSurge: '10%', maxUnavailable: '10%' }, 0), {
      maxSurge: 0,
      maxUnavailable: 1,
    });
  });
  it('clamps a surge beyond what the groups can hold, and says so', () => {
    const r = resolveBudgets({ maxSurge: 100000, maxUnavailable: 1 }, 10, 10);
    assert.deepEqual(r, {
      maxSurge: 10,
      maxUnavailable: 1,
      clamp: { asked: 100000, resolved: 100000, capacity: 10 },
    });
    assert.equal(
      clampMessage(r.clamp!, [{ groupId: 'w', max: 10 }]),
      'maxSurge 100000 is more than the scaling groups can hold (10: w max 10); surging at most 10 nodes at once',
    );
    const p = resolveBudgets({ maxSurge: '300%', maxUnavailable: 1 }, 4, 6);
    assert.equal(
      clampMessage(p.clamp!, [{ groupId: 'a', maxSize: 6 }]).slice(0, 24),
      'maxSurge 300% (12 nodes)',
    );
  });
  it('does not clamp a surge the groups can hold', () => {
    assert.equal(resolveBudgets({ maxSurge: 10, maxUnavailable: 1 }, 10, 10).clamp, undefined);
  });
});

describe('what the scaling groups can hold', () => {
  it("adds each group's maxSize where given, else its max", () => {
    assert.equal(
      surgeCapacity([
        { groupId: 'a', max: 10 },
        { groupId: 'b', max: 10, maxSize: 4 },
      ]),
      14,
    );
  });
  it('is unbounded when a group has neither, or there are no groups', () => {
    assert.equal(surgeCapacity([{ groupId: 'a', max: 10 }, { groupId: 'b' }]), Number.POSITIVE_INFINITY);
    assert.equal(surgeCapacity([]), Number.POSITIVE_INFINITY);
  });
});

describe('neither surge nor unavailability', () => {
  it('is 0 and 0, as counts or percentages', () => {
    assert.equal(bothZero({ maxSurge: 0, maxUnavailable: '0%' }), true);
    assert.equal(bothZero({ maxSurge: 1, maxUnavailable: 0 }), false);
    assert.equal(bothZero({ maxSurge: '0%', maxUnavailable: '5%' }), false);
  });
});

describe('a clamp never stalls a rollout', () => {
  it('keeps a surge of at least one when the groups can hold none', async () => {
    const { resolveBudgets } = await import('../../../src/upgrade/rollout/budgets.ts');
    const r = resolveBudgets({ maxSurge: 3, maxUnavailable: 0 }, 10, 0);
    assert.equal(r.maxSurge, 1);
    assert.equal(r.clamp?.capacity, 1);
  });
});
