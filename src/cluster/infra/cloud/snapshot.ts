// The simulated cloud on disk: its state as one JSON file in the add-on's
// folder, rewritten shortly after each change and once more on shutdown, so
// `cluster down` + `cluster up` brings back every group, instance and fault.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { CloudSnapshot, CloudState } from './state.ts';

export function readSnapshot(path: string): CloudSnapshot | undefined {
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8')) as CloudSnapshot;
}

/** Writes through a temporary file and a rename: a crash mid-write leaves the previous snapshot whole. */
export function writeSnapshot(path: string, snapshot: CloudSnapshot): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(snapshot)}\n`);
  renameSync(tmp, path);
}

export interface SnapshotWriterOptions {
  /** How long after a change to write; changes in between are written together. Default 200 ms. */
  debounceMs?: number;
  onError?: (err: unknown) => void;
}

/** Keeps a snapshot file up to date with a CloudState. */
export class SnapshotWriter {
  private readonly state: CloudState;
  private readonly path: string;
  private readonly debounceMs: number;
  private readonly onError: (err: unknown) => void;
  private timer: NodeJS.Timeout | undefined;
  private detach: (() => void) | undefined;

  constructor(state: CloudState, path: string, opts: SnapshotWriterOptions = {}) {
    this.state = state;
    this.path = path;
    this.debounceMs = opts.debounceMs ?? 200;
    this.onError = opts.onError ?? (() => {});
  }

  start(): void {
    this.detach ??= this.state.onChange(() => {
      this.timer ??= setTimeout(() => this.flush(), this.debounceMs);
    });
  }

  /** Writes now if a change is pending. */
  flush(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    try {
      writeSnapshot(this.path, this.state.snapshot());
    } catch (err) {
      this.onError(err);
    }
  }

  /** Writes what is pending and stops following the state. */
  stop(): void {
    this.detach?.();
    this.detach = undefined;
    this.flush();
  }
}
