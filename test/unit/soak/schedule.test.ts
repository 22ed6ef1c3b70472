import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BMC_FAULT_KINDS,
  FAULT_KINDS,
  faultLengthMs,
  KVM_FAULT_KINDS,
  planBmcFaults,
  planFaults,
  planKvmFaults,
} from '../../soak/schedule.ts';

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

describe("the BMC fleet's fault track", () => {
  const hosts = ['bm-r0-00', 'bm-r0-01', 'bm-r1-00', 'bm-r1-01'];
  const bmc = { durationMs: 100_000, hosts };

  it('is the same for the same seed, and leaves the control-plane schedule as it was', () => {
    assert.deepEqual(planBmcFaults({ ...bmc, seed: 42 }), planBmcFaults({ ...bmc, seed: 42 }));
    assert.notDeepEqual(planBmcFaults({ ...bmc, seed: 42 }), planBmcFaults({ ...bmc, seed: 43 }));
    // A seed in failing-seeds.txt replays the faults it failed with.
    assert.deepEqual(
      planFaults({ ...base, seed: 424242 })
        .map((f) => [f.kind, f.at])
        .slice(0, 3),
      [
        ['etcdCompaction', 10_000],
        ['etcdRestart', 19_163],
        ['partition', 32_305],
      ],
    );
  });

  for (const seed of [1, 7, 42, 20261124, 424242]) {
    it(`seed ${seed}: every kind once, one after another, only named hosts, within the run`, () => {
      const faults = planBmcFaults({ ...bmc, seed });
      assert.deepEqual(new Set(faults.map((f) => f.kind)), new Set(BMC_FAULT_KINDS));
      for (let i = 1; i < faults.length; i++)
        assert.ok(
          faults[i]!.at >= faults[i - 1]!.at + faults[i - 1]!.durationMs,
          `fault ${i} after ${i - 1}`,
        );
      for (const f of faults) {
        assert.ok(f.at < bmc.durationMs);
        assert.ok(f.hosts.every((h) => hosts.includes(h)));
        assert.equal(new Set(f.hosts).size, f.hosts.length);
        if (f.kind === 'slowPower') assert.ok(f.hosts.length === 0 && (f.powerOnDelayMs ?? 0) > 0);
        else assert.ok(f.hosts.length >= 1 && f.hosts.length <= 2);
      }
    });
  }

  it('has nothing to fault without hosts', () => {
    assert.deepEqual(planBmcFaults({ ...bmc, seed: 1, hosts: [] }), []);
  });
});

describe("the hypervisor's fault track", () => {
  it('is the same for the same seed, and leaves the other tracks as they were', () => {
    const o = { seed: 42, durationMs: 100_000 };
    assert.deepEqual(planKvmFaults(o), planKvmFaults(o));
    assert.notDeepEqual(planKvmFaults(o), planKvmFaults({ ...o, seed: 43 }));
    assert.deepEqual(planFaults({ ...base, seed: 42 }), planFaults({ ...base, seed: 42 }));
  });

  for (const seed of [20261124, 424242, 1, 7]) {
    it(`seed ${seed}, the short soak's 100 s: every kind once, one after another, after the clusters had time to come up`, () => {
      const faults = planKvmFaults({ seed, durationMs: 100_000 });
      assert.deepEqual(new Set(faults.map((f) => f.kind)), new Set(KVM_FAULT_KINDS));
      for (let i = 1; i < faults.length; i++)
        assert.ok(faults[i]!.at >= faults[i - 1]!.at + faults[i - 1]!.durationMs + 3_000);
      assert.ok(faults.every((f) => f.at >= 25_000 && f.at < 100_000));
      for (const f of faults) {
        assert.equal(f.vms !== undefined, f.kind === 'die');
        assert.equal(f.bootDelayMs !== undefined, f.kind === 'slowBoot');
      }
    });
  }

  it('has nothing to fault in a run that ends before it starts', () => {
    assert.deepEqual(planKvmFaults({ seed: 1, durationMs: 20_000 }), []);
  });
});
