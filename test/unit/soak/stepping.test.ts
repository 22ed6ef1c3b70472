import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SteppedLoad } from '../../soak/stepping.ts';

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
