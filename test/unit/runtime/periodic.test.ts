import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControllerBuilder, type ControllerRegistry } from '../../../src/runtime/builder.ts';
import type { Controller } from '../../../src/runtime/controller.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import { periodicSource } from '../../../src/runtime/periodic.ts';
import type { Request } from '../../../src/runtime/reconcile.ts';

describe('a periodic source', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval'] }));
  afterEach(() => mock.timers.reset());

  const run = (intervalMs: number, opts = {}) => {
    const seen: Request[] = [];
    const stop = periodicSource(intervalMs, { name: '~tick' }, opts)((req) => seen.push(req));
    return { seen, stop };
  };

  it('enqueues its request as soon as it starts', () => {
    const { seen, stop } = run(1000);
    assert.deepEqual(seen, [{ name: '~tick' }]);
    stop();
  });

  it('enqueues it again every interval', () => {
    const { seen, stop } = run(1000);
    mock.timers.tick(999);
    assert.equal(seen.length, 1);
    mock.timers.tick(1);
    assert.equal(seen.length, 2);
    mock.timers.tick(3000);
    assert.equal(seen.length, 5);
    stop();
  });

  it('waits the initial delay before the first request, then keeps the interval', () => {
    const { seen, stop } = run(1000, { initialDelayMs: 500 });
    assert.equal(seen.length, 0);
    mock.timers.tick(500);
    assert.equal(seen.length, 1);
    mock.timers.tick(1000);
    assert.equal(seen.length, 2);
    stop();
  });

  it('enqueues nothing once stopped, even during the initial delay', () => {
    const running = run(1000);
    mock.timers.tick(1000);
    running.stop();
    mock.timers.tick(10_000);
    assert.equal(running.seen.length, 2);

    const delayed = run(1000, { initialDelayMs: 500 });
    delayed.stop();
    mock.timers.tick(10_000);
    assert.equal(delayed.seen.length, 0);
  });

  it('hands out a copy of the request, so a reconciler cannot change the next one', () => {
    const { seen, stop } = run(1000);
    seen[0]!.name = 'changed';
    mock.timers.tick(1000);
    assert.deepEqual(seen[1], { name: '~tick' });
    stop();
  });

  it('refuses an interval that is not positive', () => {
    for (const bad of [0, -1, Number.NaN])
      assert.throws(() => periodicSource(bad, { name: 'x' }), /interval/);
  });
});

describe('a controller built with every()', () => {
  /** A registry with no informers: every() needs none. */
  function registry() {
    const added: Controller[] = [];
    const reg: ControllerRegistry = {
      cache: {
        informer: () => {
          throw new Error('no informer expected');
        },
      },
      log: createLogger({ level: 'silent' }),
      add: (c) => added.push(c),
    };
    return { reg, added };
  }

  it('reconciles its request while it runs, and not before start or after stop', async () => {
    const { reg, added } = registry();
    const seen: string[] = [];
    const c = new ControllerBuilder(reg, 'periodic-test')
      .every(20, { name: '~every' })
      .complete(async (req) => {
        seen.push(req.name);
      });
    assert.deepEqual(added, [c]);
    await sleep(50);
    assert.deepEqual(seen, [], 'nothing before start (a follower never ticks)');
    c.start();
    await sleep(110);
    await c.stop(1000);
    const atStop = seen.length;
    assert.ok(atStop >= 3 && atStop <= 7, `reconciled ${atStop} times in ~110 ms at a 20 ms interval`);
    assert.ok(seen.every((n) => n === '~every'));
    await sleep(60);
    assert.equal(seen.length, atStop, 'no ticks after stop');
  });

  it('needs no for(), but needs some source', () => {
    const { reg } = registry();
    assert.throws(() => new ControllerBuilder(reg, 'empty').complete(async () => {}), /nothing to reconcile/);
  });

  it('refuses a bad interval where it is wired', () => {
    const { reg } = registry();
    assert.throws(() => new ControllerBuilder(reg, 'bad').every(0, { name: 'x' }), /interval/);
  });
});
