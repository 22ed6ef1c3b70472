import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Mulberry32, seededRandom, seedFromName } from '../../../src/cluster/infra/kit/random.ts';

describe('seeded randomness', () => {
  it('repeats exactly for the same seed, and differs for another', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const c = seededRandom(43);
    const first = [a(), a(), a()];
    assert.deepEqual([b(), b(), b()], first);
    assert.notDeepEqual([c(), c(), c()], first);
  });

  it('draws floats in [0, 1)', () => {
    const r = seededRandom(7);
    for (let i = 0; i < 1000; i++) {
      const v = r();
      assert.ok(v >= 0 && v < 1, String(v));
    }
  });

  it('resumes from a saved position as if it never stopped', () => {
    const g = new Mulberry32(9);
    g.next();
    g.next();
    const saved = JSON.parse(JSON.stringify({ position: g.position })) as { position: number };
    const resumed = new Mulberry32(0);
    resumed.position = saved.position;
    assert.deepEqual([resumed.next(), resumed.next()], [g.next(), g.next()]);
  });

  for (const [a, b] of [
    ['nodewarden', 'nwtest'],
    ['a', 'b'],
    ['cluster-1', 'cluster-2'],
  ] as const) {
    it(`seeds "${a}" and "${b}" apart, each the same every time`, () => {
      assert.notEqual(seedFromName(a), seedFromName(b));
      assert.equal(seedFromName(a), seedFromName(a));
      assert.ok(Number.isInteger(seedFromName(a)) && seedFromName(a) >= 0 && seedFromName(a) < 2 ** 32);
    });
  }
});
