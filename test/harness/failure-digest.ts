// A test reporter that prints, once the run is over, one short paragraph per failed
// test: its file, its name and the first lines of its error (the cause's too).
// WHY: CI keeps only the tail of a run's output, and the spec reporter's list of
// failures ends with the last one's whole diff; a red seen there must say what
// failed in every test, not only in the last.
import type { TestEvent } from 'node:test/reporters';

const LINES = 4;
const WIDTH = 300;

interface Failed {
  file: string;
  name: string;
  error: string[];
}

/** The first lines of an error and of its cause, each cut to WIDTH characters. */
export function errorLines(err: unknown): string[] {
  const out: string[] = [];
  let e: unknown = err;
  // A test's failure wraps the assertion's error as its cause.
  for (let depth = 0; e !== undefined && depth < 3 && out.length < LINES; depth++) {
    const message = e instanceof Error ? e.message : String(e);
    for (const line of message.split('\n')) {
      const t = line.trim();
      if (t && !out.includes(t) && out.length < LINES) out.push(t.slice(0, WIDTH));
    }
    e = e instanceof Error ? e.cause : undefined;
  }
  return out;
}

export default async function* failureDigest(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const failed: Failed[] = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const d = event.data;
    // A suite fails when a test in it fails: its own line adds nothing.
    if (d.details.type === 'suite') continue;
    failed.push({ file: d.file ?? '', name: d.name, error: errorLines(d.details.error) });
  }
  if (failed.length === 0) return;
  yield `\n== ${failed.length} failed (each test's first error lines) ==\n`;
  for (const f of failed)
    yield `✖ ${f.file.replace(/^.*\/test\//, 'test/')}: ${f.name}\n${f.error.map((l) => `    ${l}\n`).join('')}`;
}
