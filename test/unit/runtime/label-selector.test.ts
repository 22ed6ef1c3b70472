import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  isEmptySelector,
  type LabelSelector,
  matchesLabelSelector,
  matchesSelector,
  parseSelector,
  toLabelSelector,
} from '../../../src/runtime/label-selector.ts';

const hostLabels = { rack: 'r1', role: 'worker' };
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
    it(name, () => assert.equal(matchesLabelSelector(selector, hostLabels), want));
  it('knows an empty selector', () => {
    assert.equal(isEmptySelector({}), true);
    assert.equal(isEmptySelector({ matchLabels: {}, matchExpressions: [] }), true);
    assert.equal(isEmptySelector({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }), false);
  });
});

describe('a label selector string read as the API server reads it', () => {
  const labels = { app: 'web', tier: 'front', env: 'prod' };
  for (const [selector, want] of [
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app=db', false],
    ['app!=db', true],
    ['app!=web', false],
    ['missing!=x', true],
    ['app', true],
    ['missing', false],
    ['!missing', true],
    ['!app', false],
    ['env in (prod, staging)', true],
    ['env in (dev)', false],
    ['env notin (dev,staging)', true],
    ['env notin (prod)', false],
    ['missing notin (x)', true],
    ['missing in (x)', false],
    ['app=web,tier in (front,back),!canary', true],
    ['app=web,tier=back', false],
  ] as const) {
    it(`"${selector}" ${want ? 'matches' : 'does not match'} ${JSON.stringify(labels)}`, () => {
      assert.equal(matchesSelector(labels, selector), want);
    });
  }

  it('treats absent labels as an empty set', () => {
    assert.equal(matchesSelector(undefined, '!app'), true);
    assert.equal(matchesSelector(undefined, 'app'), false);
  });

  for (const bad of ['a=b,', 'in (x)x', '=x', 'a=b=c']) {
    it(`rejects the malformed selector "${bad}"`, () => {
      assert.throws(() => parseSelector(bad), /invalid label selector/);
    });
  }
});

describe('a label selector string means a structured selector', () => {
  const rows: [string, LabelSelector][] = [
    ['', { matchExpressions: [] }],
    ['app=web', { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] }],
    ['app==web', { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] }],
    ['app!=web', { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }],
    ['app', { matchExpressions: [{ key: 'app', operator: 'Exists' }] }],
    ['!app', { matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }],
    [
      'env in (prod, staging)',
      { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'staging'] }] },
    ],
    ['env notin (dev)', { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] }],
    [
      'app=web,!canary',
      {
        matchExpressions: [
          { key: 'app', operator: 'In', values: ['web'] },
          { key: 'canary', operator: 'DoesNotExist' },
        ],
      },
    ],
  ];
  for (const [text, want] of rows)
    it(`"${text}"`, () => {
      assert.deepEqual(toLabelSelector(text), want);
      assert.deepEqual(toLabelSelector(parseSelector(text)), want);
    });

  it('keeps how each requirement was written, for messages that quote it', () => {
    assert.deepEqual(parseSelector('a=b,c!=d,e,!f,g in (h),i notin (j)'), [
      { key: 'a', op: 'eq', values: ['b'] },
      { key: 'c', op: 'neq', values: ['d'] },
      { key: 'e', op: 'exists', values: [] },
      { key: 'f', op: 'notexists', values: [] },
      { key: 'g', op: 'in', values: ['h'] },
      { key: 'i', op: 'notin', values: ['j'] },
    ]);
  });

  it('selects what the same selector written as matchLabels and matchExpressions selects', () => {
    const text = 'app=web,tier in (front,back),!canary,env!=dev';
    const structured: LabelSelector = {
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['front', 'back'] },
        { key: 'canary', operator: 'DoesNotExist' },
        { key: 'env', operator: 'NotIn', values: ['dev'] },
      ],
    };
    const labelSets: Record<string, string>[] = [
      {},
      { app: 'web', tier: 'front' },
      { app: 'web', tier: 'back', env: 'dev' },
      { app: 'web', tier: 'front', canary: 'yes' },
      { app: 'db', tier: 'front' },
    ];
    for (const labels of labelSets)
      assert.equal(
        matchesSelector(labels, text),
        matchesLabelSelector(structured, labels),
        JSON.stringify(labels),
      );
  });
});
