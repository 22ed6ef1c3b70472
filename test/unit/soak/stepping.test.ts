import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runFaultTrack, SteppedLoad, type TrackRecord } from '../../soak/stepping.ts';

/** Steps that fail every other time; stops itself after `until` steps. */
class Counting extends SteppedLoad {
  steps = 0;
  private readonly until: number;
  constructor(until: number) {
    super();
    this.until = until;
  }
  run(): Promise<void> {
    return this.stepEvery(1, async () => {
      this.steps++;
      if (this.steps >= this.until) this.stop();
      if (this.steps % 2) throw new Error('the API server is restarting');
    });
  }
}

describe("a soak load's steps", () => {
  it('go on past a step that fails, until stopped', async () => {
    const load = new Counting(5);
    await load.run();
    assert.equal(load.steps, 5);
  });
  it('are not taken once stopped', async () => {
    const load = new Counting(5);
    load.stop();
    await load.run();
    assert.equal(load.steps, 0);
  });
});

describe("a soak's fault track", () => {
  const fault = (at: number, name: string) => ({ at, durationMs: 1, name });
  const track = (over: Partial<Parameters<typeof runFaultTrack<ReturnType<typeof fault>>>[0]> = {}) => {
    const calls: string[] = [];
    const records: TrackRecord[] = [];
    const run = runFaultTrack({
      schedule: [fault(0, 'a'), fault(1, 'b')],
      started: Date.now(),
      stopped: () => false,
      describe: (f) => f.name,
      apply: async (f, note) => {
        calls.push(`apply ${f.name}`);
        note(' (chosen)');
        if (f.name === 'a') throw new Error('the fleet said no');
      },
      clear: async () => {
        calls.push('clear');
        if (calls.length > 3) throw new Error('gone');
      },
      log: (m) => calls.push(`log ${m.replace(/@[\d.]+s/, '@')}`),
      records,
      ...over,
    });
    return { calls, records, run };
  };

  it('clears after every fault, failed or held, and records what went wrong', async () => {
    const t = track();
    await t.run;
    assert.deepEqual(t.calls, ['apply a', 'clear', 'apply b', 'log fault @: b (chosen)', 'clear']);
    assert.deepEqual(
      t.records.map((r) => [r.what, r.error]),
      [
        ['a (chosen)', 'the fleet said no'],
        ['b (chosen)', 'clearing: gone'],
      ],
    );
  });
  it('logs a fault before applying it when asked, and applies none once stopped', async () => {
    const first = track({ logFirst: true });
    await first.run;
    assert.deepEqual(first.calls.slice(0, 2), ['log fault @: a', 'apply a']);
    const stopped = track({ stopped: () => true });
    await stopped.run;
    assert.deepEqual(stopped.calls, []);
    assert.deepEqual(stopped.records, []);
  });
});
