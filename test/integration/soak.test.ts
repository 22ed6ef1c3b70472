// The short fault soak inside `make test`: a fixed seed and every seed that once
// failed (test/soak/failing-seeds.txt), each on a small cluster of its own with
// the whole fault schedule and the BMC fleet's, asserting no invariant violated
// and convergence.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { formatReport } from '../soak/report.ts';
import { runSoak } from '../soak/run.ts';

const FIXED_SEED = 20261124;

/** The seeds in failing-seeds.txt (comments and blank lines skipped). */
function failingSeeds(text: string): number[] {
  return text
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter(Boolean)
    .map(Number)
    .filter(Number.isInteger);
}

const seeds = [
  FIXED_SEED,
  ...failingSeeds(readFileSync(new URL('../soak/failing-seeds.txt', import.meta.url), 'utf8')),
];

describe('the fault soak (short)', () => {
  for (const seed of seeds) {
    // WHY 420 s: above the longest run the soak itself allows (~15 s setup, the schedule's last
    // fault ending by ~130 s, up to 30 s each to clear the BMC and hypervisor faults and the churn,
    // the 150 s convergence bound the KVM clusters state, teardown), so a slow convergence is
    // judged by the soak's bound, with its report and dumps, not cut short. At 240 s seed 424242
    // once timed out with no report.
    it(`seed ${seed}: ~30 nodes, every kind of fault, no invariant violated, converges`, {
      timeout: 420_000,
    }, async () => {
      const report = await runSoak({
        seed,
        durationMs: 100_000,
        nodes: 30,
        gapsMs: [2_000, 5_000],
        name: `soak-${seed % 100_000}`,
      });
      console.log(formatReport(report));
      // WHY 2/s, not 3: the sampler reads the whole cluster each time, and on cores kept busy by
      // two spinning loops and a guest under emulation it made 2.98/s (2026-11-26) with every
      // invariant held. Fewer samples only lower the chance to catch a short violation; the floor
      // keeps one every 500 ms.
      assert.ok(report.samples > 0 && report.samplesPerSecond >= 2, `sampled ${report.samplesPerSecond}/s`);
      assert.ok(report.faults.length >= 7, 'every kind of fault injected');
      assert.ok(report.kvm.faults.length >= 3, "every kind of the hypervisor's faults injected");
      assert.deepEqual(
        [...report.faults, ...report.bareMetal.faults, ...report.kvm.faults]
          .filter((f) => f.error)
          .map((f) => `${f.what}: ${f.error}`),
        [],
      );
      const violated = report.violations.map((v) => `${v.invariant}: ${v.message}`);
      // The first of each kind in the message: CI's digest shows a failure's first lines.
      const firsts = [...new Map(report.violations.map((v) => [v.invariant, v.message])).entries()];
      assert.deepEqual(
        violated,
        [],
        `seed ${seed}: ${firsts.map(([k, m]) => `${k}: ${m.slice(0, 200)}`).join(' | ')}`,
      );
      assert.notEqual(report.convergeMs, undefined, 'converged within the bound');
      assert.ok(report.watchesGone > 0, 'the compaction made watches resume 410 Gone');
      // From a standby watching the lease: one itself starting at the kill adds its start-up (failoverFromStandby).
      assert.ok(
        report.failoversFromStandbyMs.every((ms) => ms < 20_000),
        `failover ${report.failoversFromStandbyMs} under 20 s (${report.failoversMs} from the kill)`,
      );
    });
  }
});
