import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deletionRequestedAt } from '../../../../src/kvm/controllers/vm-drain.ts';

describe('deletionRequestedAt: when a VM pod deletion was asked for', () => {
  const now = Date.parse('2026-11-24T01:00:00Z');
  const pod = (deletionTimestamp?: string, deletionGracePeriodSeconds?: number) => ({
    metadata: {
      name: 'worker-w1-abc',
      ...(deletionTimestamp ? { deletionTimestamp } : {}),
      ...(deletionGracePeriodSeconds !== undefined ? { deletionGracePeriodSeconds } : {}),
    },
  });
  const cases: Array<[string, ReturnType<typeof pod>, number]> = [
    // The API server stamps deletion time + grace: a 600 s grace asked for at 00:59:00 reads 01:09:00.
    [
      'the grace period is taken off the stamp',
      pod('2026-11-24T01:09:00Z', 600),
      Date.parse('2026-11-24T00:59:00Z'),
    ],
    ['no grace period: the stamp itself', pod('2026-11-24T00:58:00Z', 0), Date.parse('2026-11-24T00:58:00Z')],
    ['never later than now', pod('2026-11-24T01:20:00Z', 60), now],
    ['not being deleted: now', pod(), now],
  ];
  for (const [what, p, want] of cases) {
    it(what, () => assert.equal(deletionRequestedAt(p as never, now), want));
  }
});
