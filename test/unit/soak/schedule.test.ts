import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAULT_KINDS, faultLengthMs, planFaults } from '../../soak/schedule.ts';

const base = { durationMs: 300_000, leaseMs: 15_000, replicas: 2 };

describe('the soak fault schedule', () => {
  it('is the same for the same seed and differs for another', () => {
    assert.deepEqual(planFaults({ ...base, seed: 42 }), planFaults({ ...base, seed: 42 }));
    assert.notDeepEqual(planFaults({ ...base, seed: 42 }), planFaults({ ...base, seed: 43 }));
  });

  for (const seed of [1, 7, 42, 1234, 99991]) {
    it(`seed ${seed}: every kind at least once, in time, never overlapping, within the run`, () => {
      const faults = planFaults({ ...base, seed });
      assert.deepEqual(new Set(faults.map((f) => f.kind)), new Set(FAULT_KINDS));
      for (let i = 1; i < faults.length; i++) {
        const prev = faults[i - 1]!;
        assert.ok(
          faults[i]!.at >= prev.at + faultLengthMs(prev) + 4_000,
          `fault ${i} starts after ${i - 1} ends`,
        );
      }
      assert.ok(faults.every((f) => f.at >= 10_000 && f.at < base.durationMs));
    });
  }

  it('keeps every partition longer than the lease, and kills only existing replicas', () => {
    for (let seed = 0; seed < 50; seed++) {
      for (const f of planFaults({ ...base, seed })) {
        if (f.kind === 'partition') assert.ok(f.durationMs > base.leaseMs);
        if (f.kind === 'operatorKill') assert.ok(f.replica >= 0 && f.replica < base.replicas);
      }
    }
  });

  it('a short run holds fewer faults than a long one, and none when it ends before they start', () => {
    assert.ok(
      planFaults({ ...base, seed: 3, durationMs: 60_000 }).length < planFaults({ ...base, seed: 3 }).length,
    );
    assert.deepEqual(planFaults({ ...base, seed: 3, durationMs: 5_000 }), []);
  });
});
