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

/** One injected fault as the report lists it. */
export interface TrackRecord {
  at: number;
  what: string;
  error?: string;
}

export interface FaultTrack<F extends { at: number; durationMs: number }> {
  schedule: readonly F[];
  /** The run's start (ms since the epoch): each fault is due at started + f.at. */
  started: number;
  /** The run has ended: no further fault is applied. */
  stopped: () => boolean;
  describe: (f: F) => string;
  /** Applies the fault; `note` adds to its description (the VMs a fault chose, say). */
  apply: (f: F, note: (detail: string) => void) => Promise<void>;
  /** Clears every fault of this kind; called after each, held or failed. */
  clear: () => Promise<void>;
  log: (m: string) => void;
  /** Where each fault's record goes once it is cleared. */
  records: TrackRecord[];
  /** Log the fault before applying it (else once applied). */
  logFirst?: boolean;
}

/** Applies each fault of a schedule when its time comes, holds it, and always clears it, recording any error. */
export async function runFaultTrack<F extends { at: number; durationMs: number }>(
  t: FaultTrack<F>,
): Promise<void> {
  for (const f of t.schedule) {
    const wait = t.started + f.at - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (t.stopped()) return;
    const rec: TrackRecord = { at: Date.now() - t.started, what: t.describe(f) };
    const logIt = () => t.log(`fault @${(rec.at / 1000).toFixed(1)}s: ${rec.what}`);
    if (t.logFirst) logIt();
    try {
      await t.apply(f, (detail) => {
        rec.what += detail;
      });
      if (!t.logFirst) logIt();
      await new Promise((r) => setTimeout(r, f.durationMs));
    } catch (err) {
      rec.error = (err as Error).message;
    } finally {
      await t.clear().catch((err: unknown) => {
        rec.error ??= `clearing: ${(err as Error).message}`;
      });
    }
    t.records.push(rec);
  }
}
