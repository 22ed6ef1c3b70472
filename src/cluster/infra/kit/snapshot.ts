// A simulator on disk: its whole state as one JSON file in its folder,
// rewritten shortly after each change and once more on shutdown, so
// `cluster down` + `cluster up` brings the simulator back as it was.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

/** What a simulator's state offers to be persisted: change events and a JSON picture of itself. */
export interface Snapshottable<S> {
  /** Called after anything the snapshot holds changed; returns a function that stops listening. */
  onChange(listener: () => void): () => void;
  snapshot(): S;
}

export function readSnapshot<S>(path: string): S | undefined {
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8')) as S;
}

/** Writes through a temporary file and a rename: a crash mid-write leaves the previous snapshot whole. */
export function writeSnapshot(path: string, snapshot: unknown): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(snapshot)}\n`);
  renameSync(tmp, path);
}

export interface SnapshotWriterOptions {
  /** How long after a change to write; changes in between are written together. Default 200 ms. */
  debounceMs?: number;
  onError?: (err: unknown) => void;
}

/** Keeps a snapshot file up to date with a state. */
export class SnapshotWriter<S> {
  private readonly state: Snapshottable<S>;
  private readonly path: string;
  private readonly debounceMs: number;
  private readonly onError: (err: unknown) => void;
  private timer: NodeJS.Timeout | undefined;
  private detach: (() => void) | undefined;

  constructor(state: Snapshottable<S>, path: string, opts: SnapshotWriterOptions = {}) {
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
