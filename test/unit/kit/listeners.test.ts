import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Listeners } from '../../../src/cluster/infra/kit/listeners.ts';

describe("a simulator's listeners", () => {
  it('are called in order of subscription, with the event', () => {
    const l = new Listeners<[string, number]>();
    const seen: string[] = [];
    l.add((e, n) => seen.push(`a:${e}:${n}`));
    l.add((e, n) => seen.push(`b:${e}:${n}`));
    l.emit('ready', 1);
    assert.deepEqual(seen, ['a:ready:1', 'b:ready:1']);
  });

  it('stop being called once unsubscribed, and unsubscribing twice is harmless', () => {
    const l = new Listeners<[]>();
    let calls = 0;
    const off = l.add(() => calls++);
    l.emit();
    off();
    off();
    l.emit();
    assert.equal(calls, 1);
  });

  it('may unsubscribe while being called without the others missing the event', () => {
    const l = new Listeners<[]>();
    const seen: string[] = [];
    const off = l.add(() => {
      seen.push('once');
      off();
    });
    l.add(() => seen.push('always'));
    l.emit();
    l.emit();
    assert.deepEqual(seen, ['once', 'always', 'always']);
  });
});
