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

  it('one paragraph per failed test, suites failed only by their tests left out, nothing when all passed', async () => {
    const out: string[] = [];
    for await (const s of failureDigest(
      events([
        fail('t1', 'test', 'boom'),
        fail('s', 'suite', '1 subtest failed'),
        fail('s2', 'suite', 'before hook broke'),
        { type: 'test:pass', data: {} },
      ]),
    ))
      out.push(s);
    assert.equal(
      out.join(''),
      "\n== failed tests, each with its error's first lines ==\n✖ test/integration/a.test.ts: t1\n    boom\n✖ test/integration/a.test.ts: s2\n    before hook broke\n",
    );
    const none: string[] = [];
    for await (const s of failureDigest(events([{ type: 'test:pass', data: {} }]))) none.push(s);
    assert.deepEqual(none, []);
  });

  it('an event it cannot read is said, and the digest goes on', async () => {
    const out: string[] = [];
    for await (const s of failureDigest(
      events([{ type: 'test:fail', data: { name: 'odd' } }, fail('t2', 'test', 'x')]),
    ))
      out.push(s);
    assert.match(out.join(''), /✖ odd \(not described: TypeError/);
    assert.match(out.join(''), /✖ test\/integration\/a\.test\.ts: t2\n {4}x\n$/);
  });
});
