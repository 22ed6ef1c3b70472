import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retryOnConflict } from '../../../src/runtime/conflict.ts';
import { ApiError } from '../../../src/runtime/errors.ts';

const conflict = () => new ApiError(409, 'the object has been modified', { reason: 'Conflict' });

/** fn that throws the given errors in turn, then returns 'ok'; counts its calls. */
function failing(errors: Error[]) {
  const fn = async () => {
    fn.calls++;
    const err = errors.shift();
    if (err) throw err;
    return 'ok';
  };
  fn.calls = 0;
  return fn;
}

describe('retryOnConflict', () => {
  it('returns at once when the first try succeeds', async () => {
    const fn = failing([]);
    assert.equal(await retryOnConflict(fn), 'ok');
    assert.equal(fn.calls, 1);
  });

  it('retries conflicts until the write goes through', async () => {
    const fn = failing([conflict(), conflict()]);
    assert.equal(await retryOnConflict(fn), 'ok');
    assert.equal(fn.calls, 3);
  });

  it("gives up after client-go's 5 tries and throws the last conflict", async () => {
    const last = conflict();
    const fn = failing([conflict(), conflict(), conflict(), conflict(), last, conflict()]);
    const started = performance.now();
    await assert.rejects(retryOnConflict(fn), (err) => err === last);
    assert.equal(fn.calls, 5);
    // Four waits of 10..11ms each; timers may fire up to 1ms early.
    assert.ok(performance.now() - started >= 36);
  });

  it('does not retry other errors, AlreadyExists included', async () => {
    for (const err of [
      new ApiError(409, 'exists', { reason: 'AlreadyExists' }),
      new ApiError(404, 'gone', { reason: 'NotFound' }),
      new Error('boom'),
    ]) {
      const fn = failing([err]);
      await assert.rejects(retryOnConflict(fn), (e) => e === err);
      assert.equal(fn.calls, 1);
    }
  });

  it('honours a custom number of attempts and backoff', async () => {
    const fn = failing([conflict(), conflict(), conflict()]);
    await assert.rejects(retryOnConflict(fn, { attempts: 2, backoffMs: 1 }), /modified/);
    assert.equal(fn.calls, 2);
    await assert.rejects(retryOnConflict(fn, { attempts: 0 }), RangeError);
  });
});
