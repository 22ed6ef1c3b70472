// strategyOf fills the rollout strategy's defaults by hand (the status command must
// not load TypeBox); here it is held to what the schema's own defaulting gives.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Value } from 'typebox/value';
import { type NodeVersion, NodeVersions, RolloutStrategy } from '../../../src/api/upgrade.ts';
import { strategyOf } from '../../../src/upgrade/rollout/observe.ts';

type Strategy = NonNullable<NodeVersion['spec']['strategy']>;

const cases: [string, Strategy | undefined][] = [
  ['no strategy', undefined],
  ['an empty one', {}],
  ['a count surge', { maxSurge: 3 }],
  ['percent budgets', { maxSurge: '25%', maxUnavailable: '10%' }],
  ['surge-only', { maxUnavailable: 0 }],
  [
    'every field set',
    {
      maxSurge: 2,
      maxUnavailable: 0,
      controlPlaneFirst: false,
      drainTimeout: '0',
      nodeReadyTimeout: '5m',
      paused: true,
    },
  ],
  ['paused with a drain bound', { paused: true, drainTimeout: '1h' }],
];

describe('strategyOf: the schema defaults, without the schema', () => {
  for (const [name, strategy] of cases) {
    it(name, () => {
      const nv = NodeVersions.make({ name: 'default' }, { image: 'i', ...(strategy ? { strategy } : {}) });
      const bySchema = Value.Default(RolloutStrategy, structuredClone(strategy ?? {}));
      assert.deepEqual(strategyOf(nv), bySchema);
    });
  }
});
