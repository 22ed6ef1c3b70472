import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isEmptySelector,
  type LabelSelector,
  matchesLabelSelector,
} from '../../../src/runtime/label-selector.ts';

const labels = { rack: 'r1', role: 'worker' };
const rows: [string, LabelSelector, boolean][] = [
  ['an empty selector selects everything', {}, true],
  ['matchLabels must all hold', { matchLabels: { rack: 'r1', role: 'worker' } }, true],
  ['one matchLabel off fails', { matchLabels: { rack: 'r2' } }, false],
  [
    'In holds for a listed value',
    { matchExpressions: [{ key: 'rack', operator: 'In', values: ['r0', 'r1'] }] },
    true,
  ],
  [
    'In fails when the key is missing',
    { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
    false,
  ],
  [
    'NotIn holds when the key is missing',
    { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] },
    true,
  ],
  [
    'NotIn fails for a listed value',
    { matchExpressions: [{ key: 'rack', operator: 'NotIn', values: ['r1'] }] },
    false,
  ],
  ['Exists', { matchExpressions: [{ key: 'role', operator: 'Exists' }] }, true],
  ['DoesNotExist', { matchExpressions: [{ key: 'role', operator: 'DoesNotExist' }] }, false],
  [
    'labels and expressions together must all hold',
    { matchLabels: { role: 'worker' }, matchExpressions: [{ key: 'rack', operator: 'In', values: ['r9'] }] },
    false,
  ],
];

describe('a LabelSelector read as the API server reads it', () => {
  for (const [name, selector, want] of rows)
    it(name, () => assert.equal(matchesLabelSelector(selector, labels), want));
  it('knows an empty selector', () => {
    assert.equal(isEmptySelector({}), true);
    assert.equal(isEmptySelector({ matchLabels: {}, matchExpressions: [] }), true);
    assert.equal(isEmptySelector({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }), false);
  });
});
