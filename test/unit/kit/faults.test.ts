import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ApiFault,
  type ApiFaults,
  apiFaultGuard,
  mergeApiFaults,
  noApiFaults,
  takeApiFault,
} from '../../../src/cluster/infra/kit/faults.ts';

const never = () => {
  throw new Error('no random draw expected');
};

describe('merging API fault settings', () => {
  const accepted: [string, Partial<ApiFaults>, Partial<ApiFaults>][] = [
    ['a count of failures', { failNextCalls: 3 }, { failNextCalls: 3 }],
    ['a count of throttled calls', { throttleNextCalls: 2 }, { throttleNextCalls: 2 }],
    ['a throttling chance', { throttleProbability: 0.25 }, { throttleProbability: 0.25 }],
    ['a slow-call delay', { slowCallsMs: 1500 }, { slowCallsMs: 1500 }],
    ['zero, which clears one', { failNextCalls: 0 }, { failNextCalls: 0 }],
  ];
  for (const [what, patch, want] of accepted) {
    it(`takes ${what}`, () => {
      assert.deepEqual(mergeApiFaults(noApiFaults(), patch), { ...noApiFaults(), ...want });
    });
  }

  const refused: [string, Partial<ApiFaults>, RegExp][] = [
    ['a chance above 1', { throttleProbability: 1.5 }, /throttleProbability must be 0..1/],
    ['a negative chance', { throttleProbability: -0.1 }, /throttleProbability must be 0..1/],
    ['a fractional count', { failNextCalls: 1.5 }, /failNextCalls must be a whole number/],
    ['a negative count', { throttleNextCalls: -1 }, /throttleNextCalls must be a whole number/],
    ['a delay as text', { slowCallsMs: '5' as unknown as number }, /slowCallsMs must be a whole number/],
  ];
  for (const [what, patch, message] of refused) {
    it(`refuses ${what}`, () =>
      assert.throws(
        () => mergeApiFaults(noApiFaults(), patch),
        (e) => e instanceof RangeError && message.test(e.message),
      ));
  }

  it('keeps the fields a simulator adds of its own, and leaves the original alone', () => {
    const own = { ...noApiFaults(), neverJoin: 2 };
    const next = mergeApiFaults(own, { failNextCalls: 1 });
    assert.deepEqual(next, { ...noApiFaults(), neverJoin: 2, failNextCalls: 1 });
    assert.equal(own.failNextCalls, 0);
  });
});

describe('taking the fault of the next call', () => {
  it('throttles first, then fails, then lets calls through', () => {
    const f = mergeApiFaults(noApiFaults(), { throttleNextCalls: 1, failNextCalls: 2 });
    const seen = [1, 2, 3, 4].map(() => takeApiFault(f, never)?.status ?? 'ok');
    assert.deepEqual(seen, [429, 503, 503, 'ok']);
    assert.deepEqual(f, noApiFaults());
  });

  it('throttles by chance, drawing from the given generator', () => {
    const f = mergeApiFaults(noApiFaults(), { throttleProbability: 0.5 });
    const draws = [0.1, 0.9, 0.49, 0.5];
    const seen = draws.map((d) => takeApiFault(f, () => d)?.status ?? 'ok');
    assert.deepEqual(seen, [429, 'ok', 429, 'ok']);
  });

  it('draws nothing when no chance is set, so a seeded run does not shift', () => {
    assert.equal(takeApiFault(noApiFaults(), never), undefined);
  });
});

describe('the fault guard of a route table', () => {
  function source(faults: (ApiFault | undefined)[], delayMs = 0) {
    let calls = 0;
    return {
      calls: () => calls,
      callDelayMs: () => delayMs,
      nextApiFault: () => {
        calls++;
        return faults.shift();
      },
    };
  }
  const req = { method: 'GET', url: new URL('http://x/'), params: {}, body: undefined };

  it('answers a due fault with its status, a JSON error and Retry-After', async () => {
    const guard = apiFaultGuard(source([{ status: 503, message: 'down' }]));
    assert.deepEqual(await guard(req), {
      status: 503,
      body: { error: 'down' },
      headers: { 'retry-after': '1' },
    });
    assert.equal(await guard(req), undefined);
  });

  it('holds every call for the slow-call delay', async () => {
    const guard = apiFaultGuard(source([], 60));
    const started = Date.now();
    assert.equal(await guard(req), undefined);
    assert.ok(Date.now() - started >= 55, `waited ${Date.now() - started} ms`);
  });
});
