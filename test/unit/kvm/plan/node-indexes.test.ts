import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allocateIndex,
  indexesPatch,
  nodeIndexes,
  sameIndexes,
} from '../../../../src/kvm/plan/node-indexes.ts';

describe('nodeIndexes (anchor nodeindexstatus)', () => {
  const cases: Array<{
    name: string;
    current: Record<string, number>;
    ids: string[];
    want: Record<string, number>;
  }> = [
    {
      name: 'a–d on an empty status get 1–4',
      current: {},
      ids: ['a', 'b', 'c', 'd'],
      want: { a: 1, b: 2, c: 3, d: 4 },
    },
    {
      name: 'adding e to a–d gives it 5',
      current: { a: 1, b: 2, c: 3, d: 4 },
      ids: ['a', 'b', 'c', 'd', 'e'],
      want: { a: 1, b: 2, c: 3, d: 4, e: 5 },
    },
    {
      name: 'adding e and f to {a1,b2,c4,d5} fills the hole with e and appends f',
      current: { a: 1, b: 2, c: 4, d: 5 },
      ids: ['a', 'b', 'c', 'd', 'e', 'f'],
      want: { a: 1, b: 2, c: 4, d: 5, e: 3, f: 6 },
    },
    {
      name: 'removing c and f keeps the others where they are',
      current: { a: 1, b: 2, c: 4, d: 5, e: 3, f: 6 },
      ids: ['a', 'b', 'd', 'e'],
      want: { a: 1, b: 2, e: 3, d: 5 },
    },
    { name: 'no nodes, no indexes', current: { a: 1 }, ids: [], want: {} },
    {
      name: 'an index freed in this pass is not given to a node added in the same pass',
      current: { a: 1, b: 2, c: 3 },
      ids: ['a', 'c', 'd'],
      want: { a: 1, c: 3, d: 4 },
    },
    {
      name: 'an index freed in the previous pass is reused in the next',
      current: { a: 1, c: 3, d: 4 },
      ids: ['a', 'c', 'd', 'e'],
      want: { a: 1, c: 3, d: 4, e: 2 },
    },
    {
      name: 'new nodes are numbered in the order given (masters first)',
      current: {},
      ids: ['m1', 'w2', 'w1'],
      want: { m1: 1, w2: 2, w1: 3 },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(nodeIndexes(c.current, c.ids), c.want);
    });
  }

  it('leaves the current status untouched', () => {
    const current = Object.freeze({ a: 1, b: 2 });
    nodeIndexes(current, ['b', 'c']);
    assert.deepEqual(current, { a: 1, b: 2 });
  });

  it('two passes of a removal and an addition end with the hole reused', () => {
    const first = nodeIndexes({ a: 1, b: 2, c: 3 }, ['a', 'c', 'x']);
    assert.equal(first.x, 4);
    const second = nodeIndexes(first, ['a', 'c', 'x', 'y']);
    assert.equal(second.y, 2);
  });
});

describe('allocateIndex', () => {
  const cases: Array<[number[], number]> = [
    [[], 1],
    [[1], 2],
    [[1, 2], 3],
    [[3], 1],
    [[1, 3], 2],
    [[2, 1, 4], 3],
  ];
  for (const [used, want] of cases) {
    it(`[${used.join(',')}] → ${want}`, () => {
      assert.equal(allocateIndex(used), want);
    });
  }
});

describe('sameIndexes: whether the status already holds the indexes', () => {
  const cases: Array<[string, Record<string, number>, Record<string, number>, boolean]> = [
    ['equal', { a: 1, b: 2 }, { a: 1, b: 2 }, true],
    [
      'equal in another key order (as the API server may hand them back)',
      { a: 1, b: 2 },
      { b: 2, a: 1 },
      true,
    ],
    ['an id added', { a: 1, b: 2 }, { a: 1 }, false],
    ['an id gone', { a: 1 }, { a: 1, b: 2 }, false],
    ['an index moved', { a: 1, b: 3 }, { a: 1, b: 2 }, false],
    ['both empty', {}, {}, true],
  ];
  for (const [what, a, b, want] of cases) {
    it(`${what}: ${want}`, () => assert.equal(sameIndexes(a, b), want));
  }
});

describe('indexesPatch: the merge patch that writes the indexes', () => {
  it('names every kept and new id, and writes gone ids as null (a merge patch keeps keys it does not name)', () => {
    assert.deepEqual(indexesPatch({ a: 1, b: 2 }, { a: 1, c: 3 }), { nodeIndexes: { b: null, a: 1, c: 3 } });
  });
  it('from an empty status: the indexes alone', () => {
    assert.deepEqual(indexesPatch({}, { a: 1 }), { nodeIndexes: { a: 1 } });
  });
});
