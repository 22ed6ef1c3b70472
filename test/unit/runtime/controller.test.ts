import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller } from '../../../src/runtime/controller.ts';
import { TerminalError } from '../../../src/runtime/errors.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import { registry } from '../../../src/runtime/metrics.ts';
import { anyOf, generationChanged, labelsChanged } from '../../../src/runtime/predicates.ts';
import { exponentialFailureRateLimiter } from '../../../src/runtime/queue.ts';
import type { Reconcile, Request } from '../../../src/runtime/reconcile.ts';
import { parseRequestKey, requestKey } from '../../../src/runtime/reconcile.ts';

const quiet = createLogger({ level: 'silent' });
let n = 0;
function controller(reconcile: Reconcile, workers = 1) {
  return new Controller({
    name: `test-${++n}`,
    reconcile,
    workers,
    log: quiet,
    rateLimiter: exponentialFailureRateLimiter(5, 1000),
  });
}

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  return (
    m?.values
      .filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))
      .reduce((a, v) => a + v.value, 0) ?? 0
  );
}

describe('request keys', () => {
  it('round-trip namespaced and cluster-scoped requests', () => {
    for (const req of [{ name: 'a' }, { namespace: 'ns', name: 'b' }] as Request[]) {
      assert.deepEqual(parseRequestKey(requestKey(req)), req);
    }
  });
});

describe('a controller', () => {
  it('reconciles each enqueued key, once for several adds of the same key', async () => {
    const seen: string[] = [];
    const c = controller(async (req) => {
      seen.push(req.name);
      await sleep(20);
    });
    c.enqueue({ name: 'a' });
    c.enqueue({ name: 'a' });
    c.enqueue({ name: 'b' });
    c.start();
    await sleep(100);
    await c.stop(1000);
    assert.deepEqual(seen.sort(), ['a', 'b']);
  });

  it('never runs two reconciles of one key at once, even with many workers', async () => {
    let running = 0;
    let overlap = false;
    let calls = 0;
    const c = controller(async () => {
      running++;
      calls++;
      if (running > 1) overlap = true;
      await sleep(15);
      running--;
    }, 8);
    c.start();
    for (let i = 0; i < 20; i++) {
      c.enqueue({ name: 'same' });
      await sleep(3);
    }
    await sleep(100);
    await c.stop(1000);
    assert.equal(overlap, false);
    assert.ok(calls >= 2, 'adds during a reconcile run it again afterwards');
  });

  it('runs different keys in parallel up to the worker count', async () => {
    let running = 0;
    let peak = 0;
    const c = controller(async () => {
      running++;
      peak = Math.max(peak, running);
      await sleep(40);
      running--;
    }, 4);
    for (let i = 0; i < 10; i++) c.enqueue({ name: `k${i}` });
    c.start();
    await sleep(200);
    await c.stop(1000);
    assert.equal(peak, 4);
  });

  it('retries a failing reconcile with growing backoff, and counts the errors', async () => {
    const times: number[] = [];
    const c = controller(async () => {
      times.push(Date.now());
      if (times.length < 4) throw new Error('not yet');
    });
    c.enqueue({ name: 'flaky' });
    c.start();
    await sleep(250);
    await c.stop(1000);
    assert.equal(times.length, 4, 'three failures then success, no more');
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
    assert.ok(gaps[2]! > gaps[0]!, `backoff grows: ${gaps.join(', ')}`);
    assert.equal(await metric('controller_runtime_reconcile_errors_total', { controller: c.name }), 3);
    assert.equal(
      await metric('controller_runtime_reconcile_total', { controller: c.name, result: 'success' }),
      1,
    );
  });

  it('does not retry a terminal error', async () => {
    let calls = 0;
    const c = controller(async () => {
      calls++;
      throw new TerminalError('bad spec');
    });
    c.enqueue({ name: 'bad' });
    c.start();
    await sleep(150);
    await c.stop(1000);
    assert.equal(calls, 1);
    assert.equal(
      await metric('controller_runtime_terminal_reconcile_errors_total', { controller: c.name }),
      1,
    );
  });

  it('requeues after the asked delay', async () => {
    const times: number[] = [];
    const c = controller(async () => {
      times.push(Date.now());
      return times.length < 2 ? { requeueAfterMs: 80 } : undefined;
    });
    c.enqueue({ name: 'later' });
    c.start();
    await sleep(200);
    await c.stop(1000);
    assert.equal(times.length, 2);
    assert.ok(times[1]! - times[0]! >= 75, `waited ${times[1]! - times[0]!} ms`);
  });

  it('lets an in-flight reconcile finish at stop, and takes no new keys', async () => {
    let finished = 0;
    let started = 0;
    const c = controller(async () => {
      started++;
      await sleep(100);
      finished++;
    });
    c.enqueue({ name: 'a' });
    c.start();
    await sleep(20);
    c.enqueue({ name: 'b' });
    await c.stop(5000);
    assert.equal(started, 1);
    assert.equal(finished, 1);
  });

  it('aborts the reconcile signal when the grace period runs out', async () => {
    let aborted = false;
    const c = controller(async (_req, ctx) => {
      await new Promise<void>((resolve) =>
        ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
      );
      aborted = ctx.signal.aborted;
    });
    c.enqueue({ name: 'stuck' });
    c.start();
    await sleep(20);
    const t0 = Date.now();
    await c.stop(100);
    assert.equal(aborted, true);
    assert.ok(Date.now() - t0 < 1000);
  });
});

describe('predicates', () => {
  const obj = (generation: number, labels: Record<string, string> = {}) => ({
    metadata: { generation, labels },
  });
  it('generationChanged passes spec changes and drops status-only writes', () => {
    assert.equal(generationChanged(obj(1), obj(2)), true);
    assert.equal(generationChanged(obj(1), obj(1)), false);
  });
  it('labelsChanged sees added, removed and changed labels', () => {
    assert.equal(labelsChanged(obj(1, { a: '1' }), obj(1, { a: '1' })), false);
    assert.equal(labelsChanged(obj(1, { a: '1' }), obj(1, { a: '2' })), true);
    assert.equal(labelsChanged(obj(1, { a: '1' }), obj(1)), true);
  });
  it('anyOf combines them', () => {
    assert.equal(anyOf(generationChanged, labelsChanged)(obj(1, { a: '1' }), obj(1, { a: '2' })), true);
    assert.equal(anyOf(generationChanged, labelsChanged)(obj(1), obj(1)), false);
  });
});
