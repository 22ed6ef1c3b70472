import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import failureDigest, { errorLines } from '../../harness/failure-digest.ts';

describe('the failure digest', () => {
  const cases: { name: string; err: unknown; want: string[] }[] = [
    { name: 'one line', err: new Error('timed out'), want: ['timed out'] },
    {
      name: "a test's wrapper and its cause, blank lines and repeats dropped, four lines at most",
      err: new Error('test failed', { cause: new Error('a\n\n  b  \ntest failed\nc\nd') }),
      want: ['test failed', 'a', 'b', 'c'],
    },
    { name: 'not an Error', err: 'plain', want: ['plain'] },
    { name: 'a long line is cut', err: new Error('x'.repeat(400)), want: ['x'.repeat(300)] },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(errorLines(c.err), c.want));

  async function* events(list: unknown[]) {
    for (const e of list) yield e as never;
  }
  const fail = (name: string, type: 'suite' | 'test', message: string) => ({
    type: 'test:fail',
    data: { name, file: '/x/test/integration/a.test.ts', details: { type, error: new Error(message) } },
  });

  it('one paragraph per failed test, suites left out, nothing when all passed', async () => {
    const out: string[] = [];
    for await (const s of failureDigest(
      events([
        fail('t1', 'test', 'boom'),
        fail('s', 'suite', '1 subtest failed'),
        { type: 'test:pass', data: {} },
      ]),
    ))
      out.push(s);
    assert.equal(
      out.join(''),
      "\n== 1 failed (each test's first error lines) ==\n✖ test/integration/a.test.ts: t1\n    boom\n",
    );
    const none: string[] = [];
    for await (const s of failureDigest(events([{ type: 'test:pass', data: {} }]))) none.push(s);
    assert.deepEqual(none, []);
  });
});
