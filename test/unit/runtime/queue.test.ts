import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { registry } from '../../../src/runtime/metrics.ts';
import {
  defaultControllerRateLimiter,
  exponentialFailureRateLimiter,
  maxOfRateLimiters,
  tokenBucketRateLimiter,
  WorkQueue,
} from '../../../src/runtime/queue.ts';

let seq = 0;
const queues: WorkQueue[] = [];
function newQueue(opts: Partial<ConstructorParameters<typeof WorkQueue>[0]> = {}): WorkQueue {
  const q = new WorkQueue({ name: `test-${++seq}`, ...opts });
  queues.push(q);
  return q;
}
afterEach(() => {
  for (const q of queues.splice(0)) q.shutDown();
});

/** Whether the promise settled by the time pending I/O callbacks ran. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => {
    done = true;
  });
  await new Promise((r) => setImmediate(r));
  return done;
}

/** A metric's value for one queue; for histograms pass the sample, e.g. `_count`. */
async function metric(name: string, queue: string, sample = ''): Promise<number | undefined> {
  const m = registry.getSingleMetric(name);
  assert.ok(m, `metric ${name} is registered`);
  // Histograms report each sample with its own metricName; counters and gauges have none.
  type Sample = { value: number; labels: Partial<Record<string, string | number>>; metricName?: string };
  const values: Sample[] = (await m.get()).values;
  return values.find(
    (v) =>
      (v.metricName ?? name) === name + sample && v.labels.name === queue && v.labels.controller === queue,
  )?.value;
}

describe('WorkQueue', () => {
  it('hands keys out in the order they were added, each once however often it was added', async () => {
    const q = newQueue();
    for (const k of ['a', 'b', 'a', 'c', 'b']) q.add(k);
    assert.equal(q.len(), 3);
    assert.deepEqual([await q.get(), await q.get(), await q.get()], ['a', 'b', 'c']);
    assert.equal(q.len(), 0);
  });

  it('wakes a waiting worker when a key is added', async () => {
    const q = newQueue();
    const next = q.get();
    assert.equal(await settled(next), false);
    q.add('a');
    assert.equal(await next, 'a');
  });

  it('never gives a key to a second worker while the first is still processing it', async () => {
    const q = newQueue();
    q.add('a');
    assert.equal(await q.get(), 'a');
    q.add('a');
    q.add('a');
    assert.equal(q.len(), 0, 're-added key must wait for done()');
    const second = q.get();
    assert.equal(await settled(second), false);
    q.done('a');
    assert.equal(await second, 'a', 'dirty key comes back after done()');
    q.done('a');
    assert.equal(q.len(), 0, 'several re-adds during processing give exactly one more pass');
  });

  it('does not re-queue a key that was not added again while processing', async () => {
    const q = newQueue();
    q.add('a');
    await q.get();
    q.done('a');
    assert.equal(q.len(), 0);
  });

  it('shutDown releases waiting workers and ignores later adds', async () => {
    const q = newQueue();
    const waiting = [q.get(), q.get()];
    q.shutDown();
    assert.equal(q.shuttingDown(), true);
    assert.deepEqual(await Promise.all(waiting), [undefined, undefined]);
    q.add('a');
    assert.equal(q.len(), 0);
    assert.equal(await q.get(), undefined);
  });

  it('shutDownWithDrain waits for keys in progress to be done', async () => {
    const q = newQueue();
    q.add('a');
    await q.get();
    const stopped = q.shutDownWithDrain();
    assert.equal(await settled(stopped), false);
    q.done('a');
    await stopped;
    assert.equal(await settled(q.drain()), true);
  });

  it('leaves no timer that keeps the process alive after shutDown', () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const q = newQueue();
    q.addAfter('a', 60_000);
    q.addRateLimited('b');
    assert.ok(timers() > before, 'delayed adds hold timers while running');
    q.shutDown();
    assert.equal(timers(), before);
  });

  it('updates adds, depth, queue and work duration, and retries metrics', async () => {
    const q = newQueue({ rateLimiter: exponentialFailureRateLimiter(1, 1) });
    q.add('a');
    q.add('a');
    q.add('b');
    assert.equal(await metric('workqueue_adds_total', q.name), 2);
    assert.equal(await metric('workqueue_depth', q.name), 2);
    await q.get();
    assert.equal(await metric('workqueue_depth', q.name), 1);
    assert.equal(await metric('workqueue_queue_duration_seconds', q.name, '_count'), 1);
    assert.equal((await metric('workqueue_work_duration_seconds', q.name, '_count')) ?? 0, 0);
    q.done('a');
    assert.equal(await metric('workqueue_work_duration_seconds', q.name, '_count'), 1);
    q.addRateLimited('a');
    q.addRateLimited('a');
    assert.equal(await metric('workqueue_retries_total', q.name), 2);
  });
});

describe('WorkQueue delayed adds', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] }));
  afterEach(() => mock.timers.reset());
  const clock = () => Date.now();

  it('adds keys when their delay has passed, shortest delay first', () => {
    const q = newQueue({ now: clock });
    q.addAfter('slow', 100);
    q.addAfter('fast', 50);
    assert.equal(q.len(), 0);
    mock.timers.tick(50);
    assert.equal(q.len(), 1);
    mock.timers.tick(50);
    assert.equal(q.len(), 2);
    return Promise.all([q.get(), q.get()]).then((keys) => assert.deepEqual(keys, ['fast', 'slow']));
  });

  it('keeps only the earliest pending delay for a key', async () => {
    const q = newQueue({ now: clock });
    q.addAfter('a', 100);
    q.addAfter('a', 30);
    q.addAfter('a', 200);
    mock.timers.tick(30);
    assert.equal(q.len(), 1);
    assert.equal(await q.get(), 'a');
    q.done('a');
    mock.timers.tick(500);
    assert.equal(q.len(), 0, 'the later delays were dropped');
  });

  it('adds at once when the delay is zero or negative', () => {
    const q = newQueue({ now: clock });
    q.addAfter('a', 0);
    q.addAfter('b', -5);
    assert.equal(q.len(), 2);
  });

  it('drops pending delayed adds on shutDown', () => {
    const q = newQueue({ now: clock });
    q.addAfter('a', 100);
    q.shutDown();
    mock.timers.tick(100);
    assert.equal(q.len(), 0);
  });

  it('addRateLimited backs off per key and forget resets the count', () => {
    const q = newQueue({ now: clock, rateLimiter: exponentialFailureRateLimiter(10, 1000) });
    q.addRateLimited('a');
    q.addRateLimited('a'); // asks for 20ms; the pending 10ms wins
    assert.equal(q.numRequeues('a'), 2);
    mock.timers.tick(9);
    assert.equal(q.len(), 0);
    mock.timers.tick(1);
    assert.equal(q.len(), 1);
    q.forget('a');
    assert.equal(q.numRequeues('a'), 0);
  });
});

describe('rate limiters', () => {
  it('exponential backoff doubles per failure up to the cap, per key', () => {
    const rl = exponentialFailureRateLimiter(5, 100);
    assert.deepEqual(
      Array.from({ length: 7 }, () => rl.when('a')),
      [5, 10, 20, 40, 80, 100, 100],
    );
    assert.equal(rl.when('b'), 5, 'other keys have their own history');
    assert.equal(rl.numRequeues('a'), 7);
    rl.forget('a');
    assert.equal(rl.numRequeues('a'), 0);
    assert.equal(rl.when('a'), 5);
  });

  it('exponential backoff stays at the cap after very many failures', () => {
    const rl = exponentialFailureRateLimiter(5, 1000);
    for (let i = 0; i < 2000; i++) rl.when('a');
    assert.equal(rl.when('a'), 1000);
  });

  it('rejects nonsensical limiter settings', () => {
    assert.throws(() => exponentialFailureRateLimiter(0, 10), RangeError);
    assert.throws(() => exponentialFailureRateLimiter(10, 5), RangeError);
    assert.throws(() => tokenBucketRateLimiter(0, 1), RangeError);
    assert.throws(() => maxOfRateLimiters(), RangeError);
  });

  it('token bucket allows a burst, then spaces retries at 1/qps', () => {
    let now = 0;
    const rl = tokenBucketRateLimiter(10, 2, () => now);
    assert.deepEqual(
      ['a', 'b', 'c', 'd'].map((k) => rl.when(k)),
      [0, 0, 100, 200],
    );
    now += 1000; // refills, but never above the burst
    assert.deepEqual(
      ['a', 'b', 'c'].map((k) => rl.when(k)),
      [0, 0, 100],
    );
    assert.equal(rl.numRequeues('a'), 0);
  });

  it('max of limiters takes the longest delay and forgets in all of them', () => {
    let now = 0;
    const rl = maxOfRateLimiters(
      exponentialFailureRateLimiter(1, 1000),
      tokenBucketRateLimiter(1, 1, () => now),
    );
    assert.equal(rl.when('a'), 1);
    assert.equal(rl.when('a'), 1000, 'bucket empty: 1s');
    now += 10_000;
    assert.equal(rl.when('a'), 4, 'bucket full again: exponential wins');
    assert.equal(rl.numRequeues('a'), 3);
    rl.forget('a');
    assert.equal(rl.numRequeues('a'), 0);
  });

  it("default controller limiter matches controller-runtime's: 5ms backoff, 10 qps after a burst of 100", () => {
    const now = 0;
    const rl = defaultControllerRateLimiter(() => now);
    assert.deepEqual([rl.when('x'), rl.when('x'), rl.when('x')], [5, 10, 20]);
    for (let i = 0; i < 97; i++) rl.when(`k${i}`);
    assert.equal(rl.when('fresh'), 100, 'the 101st retry waits for a token');
  });
});
