import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { mapConcurrently } from '../../../src/runtime/pool.ts';

/** An async function that records how many calls overlap. */
function tracked<T, R>(fn: (item: T, i: number) => R, delayMs = 2) {
  const stats = { inFlight: 0, peak: 0, started: [] as number[] };
  const run = async (item: T, i: number) => {
    stats.started.push(i);
    stats.peak = Math.max(stats.peak, ++stats.inFlight);
    try {
      await sleep(delayMs);
      return fn(item, i);
    } finally {
      stats.inFlight--;
    }
  };
  return { run, stats };
}

describe('mapConcurrently', () => {
  it('returns every result in the order of the items', async () => {
    const items = [5, 1, 4, 2, 3];
    // Later items finish first: the order of results must not follow completion.
    const out = await mapConcurrently(items, { concurrency: 3 }, async (n) => {
      await sleep(n);
      return n * 10;
    });
    assert.deepEqual(out, [50, 10, 40, 20, 30]);
  });

  it('never has more than `concurrency` calls in flight, and uses all of them', async () => {
    const { run, stats } = tracked((n: number) => n);
    await mapConcurrently(
      Array.from({ length: 40 }, (_, i) => i),
      { concurrency: 4 },
      run,
    );
    assert.equal(stats.peak, 4);
    assert.equal(stats.started.length, 40);
  });

  it('starts items in order', async () => {
    const { run, stats } = tracked((n: number) => n);
    await mapConcurrently([0, 1, 2, 3, 4, 5, 6], { concurrency: 2 }, run);
    assert.deepEqual(stats.started, [0, 1, 2, 3, 4, 5, 6]);
  });

  it('resolves to an empty list for no items without calling fn', async () => {
    let calls = 0;
    assert.deepEqual(await mapConcurrently([], { concurrency: 8 }, async () => calls++), []);
    assert.equal(calls, 0);
  });

  it('treats a concurrency below 1 as 1', async () => {
    for (const concurrency of [0, -3, Number.NaN]) {
      const { run, stats } = tracked((n: number) => n, 1);
      assert.deepEqual(await mapConcurrently([1, 2, 3], { concurrency }, run), [1, 2, 3]);
      assert.equal(stats.peak, 1);
    }
  });

  it('rejects with the first failure, starts nothing after it and waits for calls in flight', async () => {
    const boom = new Error('boom');
    let finished = 0;
    const started: number[] = [];
    await assert.rejects(
      mapConcurrently(
        Array.from({ length: 20 }, (_, i) => i),
        { concurrency: 3 },
        async (i) => {
          started.push(i);
          if (i === 1) throw boom;
          await sleep(5);
          finished++;
        },
      ),
      (err) => err === boom,
    );
    assert.deepEqual(started, [0, 1, 2]);
    // Items 0 and 2 were in flight when 1 failed; they ran to the end before the rejection.
    assert.equal(finished, 2);
  });

  it('stops starting items once the signal aborts, rejecting with its reason', async () => {
    const ctl = new AbortController();
    const reason = new Error('stopping');
    const started: number[] = [];
    await assert.rejects(
      mapConcurrently(
        Array.from({ length: 10 }, (_, i) => i),
        { concurrency: 2, signal: ctl.signal },
        async (i) => {
          started.push(i);
          if (i === 3) ctl.abort(reason);
          await sleep(1);
        },
      ),
      (err) => err === reason,
    );
    assert.ok(started.length <= 5, `started ${started.join(',')}`);
    assert.ok(!started.includes(9));
  });

  it('starts nothing when the signal has already aborted', async () => {
    const ctl = new AbortController();
    ctl.abort(new Error('gone'));
    let calls = 0;
    await assert.rejects(
      mapConcurrently([1, 2, 3], { concurrency: 2, signal: ctl.signal }, async () => calls++),
      /gone/,
    );
    assert.equal(calls, 0);
  });
});
