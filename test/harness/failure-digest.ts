// A test reporter that prints, once the run is over, one short paragraph per failed
// test: its file, its name and the first lines of its error (the cause's too).
// WHY: CI keeps only the tail of a run's output, and the spec reporter's list of
// failures ends with the last one's whole diff; a red seen there must say what
// failed in every test, not only in the last.
import type { TestEvent } from 'node:test/reporters';

const LINES = 4;
const WIDTH = 300;

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

/** A failure's paragraph, or undefined for a suite that failed only because a test in it did. */
export function describeFailure(d: {
  name: string;
  file?: string;
  details: { type?: string; error?: unknown };
}): string | undefined {
  const error = errorLines(d.details.error);
  if (d.details.type === 'suite' && error.every((l) => /^'?\d+ subtests? failed'?$/.test(l)))
    return undefined;
  const file = (d.file ?? '').replace(/^.*\/test\//, 'test/');
  return `✖ ${file}: ${d.name}\n${error.map((l) => `    ${l}\n`).join('')}`;
}

/**
 * Each failure is written as it comes, and an event it cannot read is said, not fatal: a digest
 * held back to the end came out empty after a 40-minute run once (cause not found).
 */
export default async function* failureDigest(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  let said = 0;
  try {
    for await (const event of source) {
      if (event.type !== 'test:fail') continue;
      let text: string | undefined;
      try {
        text = describeFailure(event.data);
      } catch (err) {
        text = `✖ ${String(event.data?.name)} (not described: ${String(err)})\n`;
      }
      if (!text) continue;
      if (said++ === 0) yield "\n== failed tests, each with its error's first lines ==\n";
      yield text;
    }
  } catch (err) {
    yield `(the digest stopped: ${String(err)})\n`;
  }
}
