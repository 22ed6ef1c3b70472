// What each of the soak's loads does once set up: one seeded step at a time,
// a pause between, until the run's end stops it.
export class SteppedLoad {
  protected stopped = false;

  stop(): void {
    this.stopped = true;
  }

  /** Runs `step` every `everyMs` until stop(); a step that fails is passed over. */
  protected async stepEvery(everyMs: number, step: () => Promise<void>): Promise<void> {
    while (!this.stopped) {
      await step().catch(() => {}); // the API server may be restarting
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }
}
