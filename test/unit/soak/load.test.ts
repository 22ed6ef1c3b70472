import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { freeWorkers } from '../../soak/load.ts';

describe('the maintenance churn names only nodes no maintenance names', () => {
  type Nm = { metadata?: { deletionTimestamp?: string }; spec: { nodeName: string } };
  const m = (nodeName: string, deleting = false): Nm => ({
    ...(deleting ? { metadata: { deletionTimestamp: '2026-11-26T07:33:53Z' } } : {}),
    spec: { nodeName },
  });
  const table: Array<[string, string[], Nm[], string[]]> = [
    ['none named: all, sorted', ['w2', 'w1'], [], ['w1', 'w2']],
    ['a live one takes its node', ['w1', 'w2'], [m('w1')], ['w2']],
    // Seed 20261124 (2026-11-26): the churn named worker-014 again while its last maintenance
    // waited for a leader to finish it; the webhook would have refused it.
    ['one being deleted still takes its node', ['w1', 'w2'], [m('w2', true)], ['w1']],
    ['all taken: none', ['w1'], [m('w1'), m('w1')], []],
  ];
  for (const [name, workers, nms, want] of table)
    it(name, () => assert.deepEqual(freeWorkers(workers, nms), want));
});
