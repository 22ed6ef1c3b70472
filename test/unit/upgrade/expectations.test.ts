import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Expectations } from '../../../src/upgrade/controllers/expectations.ts';

const key = (o: { name: string }) => o.name;

describe('expectations', () => {
  it('adds what we created until the cache shows it', () => {
    const e = new Expectations<{ name: string; v: number }>(1000);
    e.created('a', { name: 'a', v: 1 }, 0);
    assert.deepEqual(e.view([], key, 10), [{ name: 'a', v: 1 }]);
    assert.deepEqual(e.view([{ name: 'a', v: 2 }], key, 20), [{ name: 'a', v: 2 }]);
    assert.deepEqual(e.view([], key, 30), [], 'forgotten once seen');
  });
  it('hides what we deleted until the cache drops it', () => {
    const e = new Expectations<{ name: string }>(1000);
    e.deleted('a', 0);
    assert.deepEqual(e.view([{ name: 'a' }, { name: 'b' }], key, 10), [{ name: 'b' }]);
    assert.deepEqual(e.view([], key, 20), []);
    assert.deepEqual(e.view([{ name: 'a' }], key, 30), [{ name: 'a' }], 'a new one of that name shows again');
  });
  it('forgets after the time limit', () => {
    const e = new Expectations<{ name: string }>(1000);
    e.created('a', { name: 'a' }, 0);
    assert.deepEqual(e.view([], key, 1001), []);
  });
});
