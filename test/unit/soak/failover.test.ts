// The failover goal (< 20 s) is measured from when a standby watched the lease: a standby still
// starting at the kill must wait a full lease duration from its first look, whatever the election
// does. Seed 20261124 on busy cores, 2026-11-26: 21.3 s from the kill, the standby watching from
// 5.6 s after it (restarted as the partition before healed), 15.7 s from then.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failoverFromStandby } from '../../soak/faults.ts';

describe('a leader failover is judged from when a standby watched the lease', () => {
  const rows: Array<[string, { failoverMs?: number; standbyLateMs?: number }, number | undefined]> = [
    ['a standby watching at the kill: from the kill', { failoverMs: 16_200, standbyLateMs: 0 }, 16_200],
    [
      'the standby starting at the kill: from when it watched',
      { failoverMs: 21_300, standbyLateMs: 5_600 },
      15_700,
    ],
    ['its log not read: from the kill', { failoverMs: 21_300 }, 21_300],
    ['a slow election from a watching standby stays slow', { failoverMs: 26_000, standbyLateMs: 0 }, 26_000],
    ['no failover within the wait: none', { standbyLateMs: 3_000 }, undefined],
  ];
  for (const [name, f, want] of rows) it(name, () => assert.equal(failoverFromStandby(f), want));
});
