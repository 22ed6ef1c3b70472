// A one-line progress renderer for long-running CLI commands. On a terminal it
// redraws a single line in place; anywhere else (CI logs, pipes, files) it
// prints a new line only when the text changed, so logs stay short and readable.

/** The stream a progress line goes to: stderr, or any writable in tests. */
export interface ProgressStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressOptions {
  stream?: ProgressStream;
  /** Redraw in place; defaults to whether the stream is a terminal. */
  isTTY?: boolean;
}

export interface Progress {
  /** Shows `text` as the current state. */
  update(text: string): void;
  /** Leaves `finalText` (or the last state) on its own line; later updates are ignored. */
  done(finalText?: string): void;
}

// Carriage return, then erase the whole line (ANSI EL2).
const CLEAR_LINE = '\r\x1b[2K';

export function createProgress(opts: ProgressOptions = {}): Progress {
  const stream = opts.stream ?? process.stderr;
  const tty = opts.isTTY ?? stream.isTTY ?? false;
  let last: string | undefined;
  let drawn = false;
  let finished = false;

  // A line wider than the terminal wraps, and \r then only returns to the
  // wrapped tail: cut it to fit so the redraw really replaces it.
  const fit = (text: string) => {
    const line = text.replace(/\s*\n\s*/g, ' ');
    const width = stream.columns ?? 0;
    return width > 1 && line.length > width - 1 ? `${line.slice(0, width - 2)}…` : line;
  };

  return {
    update(text) {
      if (finished || text === last) return;
      last = text;
      if (tty) {
        stream.write(`${CLEAR_LINE}${fit(text)}`);
        drawn = true;
      } else {
        stream.write(`${text}\n`);
      }
    },
    done(finalText) {
      if (finished) return;
      finished = true;
      const text = finalText ?? last;
      if (tty) {
        // The final line is kept whole: it is the one people scroll back to.
        if (text !== undefined) stream.write(`${drawn ? CLEAR_LINE : ''}${text}\n`);
        else if (drawn) stream.write('\n');
      } else if (text !== undefined && text !== last) {
        stream.write(`${text}\n`);
      }
    },
  };
}

/**
 * A text bar `width` cells wide, filled in proportion to `percent` (clamped to
 * 0..100; NaN counts as 0). Rounds down, so the bar is full only at 100%.
 */
export function bar(percent: number, width: number): string {
  const cells = Math.max(0, Math.floor(width));
  const p = Number.isFinite(percent) ? Math.min(100, Math.max(0, percent)) : percent > 0 ? 100 : 0;
  const filled = Math.floor((p / 100) * cells);
  return '#'.repeat(filled) + '-'.repeat(cells - filled);
}

// Two small table helpers every `list`-like command needs, kept beside the
// progress line so all CLI output shares one look.

/** Rows padded into columns three spaces apart, as `kubectl get` prints them; one line per row. */
export function columns(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) for (const [i, c] of r.entries()) widths[i] = Math.max(widths[i] ?? 0, c.length);
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd((widths[i] ?? 0) + 3))
      .join('')
      .trimEnd();
  return rows.map((r) => `${line(r)}\n`).join('');
}

/** Time since `since` (an RFC 3339 timestamp) the way kubectl shows AGE: 45s, 3m20s, 45m, 5h10m, 30h, 3d4h, 12d. */
export function age(since: string | undefined, now = Date.now()): string {
  const t = since ? Date.parse(since) : Number.NaN;
  if (Number.isNaN(t)) return '<unknown>';
  const s = Math.max(0, Math.floor((now - t) / 1000));
  const [m, h, d] = [Math.floor(s / 60), Math.floor(s / 3600), Math.floor(s / 86400)];
  const pair = (a: number, ua: string, b: number, ub: string) => `${a}${ua}${b ? `${b}${ub}` : ''}`;
  if (s < 120) return `${s}s`;
  if (m < 10) return pair(m, 'm', s % 60, 's');
  if (h < 3) return `${m}m`;
  if (h < 8) return pair(h, 'h', m % 60, 'm');
  if (d < 2) return `${h}h`;
  if (d < 8) return pair(d, 'd', h % 24, 'h');
  return `${d}d`;
}

// CSI: cursor up N lines, then erase from there to the end of the screen.
const up = (n: number) => `\x1b[${n}A\r\x1b[J`;

/**
 * A multi-line display that redraws in place on a terminal, and elsewhere
 * prints each new version after a blank line (so logs read as snapshots).
 */
export function createScreen(stream: ProgressStream): { show(text: string): void } {
  let last: string | undefined;
  let drawn = 0;
  return {
    show(text) {
      if (text === last) return;
      if (!stream.isTTY) {
        stream.write(`${last === undefined ? '' : '\n'}${text}`);
        last = text;
        return;
      }
      last = text;
      // A line wider than the terminal wraps and the cursor-up count goes wrong: cut it to fit.
      const width = stream.columns ?? 0;
      const lines = text
        .trimEnd()
        .split('\n')
        .map((l) => (width > 1 && l.length > width - 1 ? `${l.slice(0, width - 2)}…` : l));
      stream.write(`${drawn ? up(drawn) : ''}${lines.join('\n')}\n`);
      drawn = lines.length;
    },
  };
}
