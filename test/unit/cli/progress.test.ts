import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { age, bar, columns, createProgress } from '../../../src/cli/progress.ts';

/** A stream that records every write, with an optional terminal width. */
function recorder(opts: { isTTY?: boolean; columns?: number } = {}) {
  const writes: string[] = [];
  return { writes, stream: { ...opts, write: (c: string) => writes.push(c) } };
}

describe('bar', () => {
  it('is all empty at 0% and all full at 100%, always `width` cells wide', () => {
    assert.equal(bar(0, 10), '----------');
    assert.equal(bar(100, 10), '##########');
    assert.equal(bar(50, 10), '#####-----');
  });

  it('rounds down, so it fills the last cell only when the work is done', () => {
    assert.equal(bar(99, 10), '#########-');
    assert.equal(bar(5, 10), '----------');
  });

  it('clamps values out of range and treats NaN as nothing done', () => {
    assert.equal(bar(-20, 4), '----');
    assert.equal(bar(250, 4), '####');
    assert.equal(bar(Number.NaN, 4), '----');
    assert.equal(bar(Number.POSITIVE_INFINITY, 4), '####');
  });

  it('gives an empty string for a zero or negative width', () => {
    assert.equal(bar(50, 0), '');
    assert.equal(bar(50, -3), '');
  });
});

describe('createProgress off a terminal (CI logs, pipes)', () => {
  it('prints a line only when the text changes', () => {
    const { writes, stream } = recorder();
    const p = createProgress({ stream });
    p.update('10% Running');
    p.update('10% Running');
    p.update('50% Running');
    p.update('50% Running');
    assert.deepEqual(writes, ['10% Running\n', '50% Running\n']);
  });

  it('prints the final text unless it is the line already printed, and ignores later updates', () => {
    const { writes, stream } = recorder();
    const p = createProgress({ stream });
    p.update('50% Running');
    p.done('100% Succeeded');
    p.update('late');
    p.done('again');
    assert.deepEqual(writes, ['50% Running\n', '100% Succeeded\n']);

    const same = recorder();
    const q = createProgress({ stream: same.stream });
    q.update('100% Succeeded');
    q.done('100% Succeeded');
    assert.deepEqual(same.writes, ['100% Succeeded\n']);
  });

  it('follows the stream: a stream that is not a TTY gets plain lines', () => {
    const { writes, stream } = recorder({ isTTY: false });
    createProgress({ stream }).update('x');
    assert.deepEqual(writes, ['x\n']);
  });
});

describe('createProgress on a terminal', () => {
  it('redraws one line in place, and ends it with a newline when done', () => {
    const { writes, stream } = recorder({ isTTY: true });
    const p = createProgress({ stream });
    p.update('10%');
    p.update('10%');
    p.update('50%');
    p.done('100% done');
    assert.deepEqual(writes, ['\r\x1b[2K10%', '\r\x1b[2K50%', '\r\x1b[2K100% done\n']);
  });

  it('cuts a line wider than the terminal so the redraw does not wrap, but keeps the final line whole', () => {
    const { writes, stream } = recorder({ isTTY: true, columns: 10 });
    const p = createProgress({ stream });
    p.update('0123456789abcdef');
    p.done('0123456789abcdef');
    assert.equal(writes[0], '\r\x1b[2K01234567…');
    assert.equal(writes[1], '\r\x1b[2K0123456789abcdef\n');
  });

  it('lets isTTY override what the stream says', () => {
    const { writes, stream } = recorder({ isTTY: true });
    createProgress({ stream, isTTY: false }).update('x');
    assert.deepEqual(writes, ['x\n']);
  });
});

describe('columns', () => {
  it('pads every column to its widest cell, three spaces apart, without trailing blanks', () => {
    const text = columns([
      ['NAME', 'AGE'],
      ['worker-004', '5s'],
    ]);
    assert.equal(text, 'NAME         AGE\nworker-004   5s\n');
  });
});

describe('age', () => {
  const now = Date.parse('2030-01-10T00:00:00Z');
  const ago = (s: number) => new Date(now - s * 1000).toISOString();
  for (const [seconds, want] of [
    [5, '5s'],
    [119, '119s'],
    [200, '3m20s'],
    [300, '5m'],
    [45 * 60, '45m'],
    [5 * 3600 + 600, '5h10m'],
    [30 * 3600, '30h'],
    [3 * 86400 + 4 * 3600, '3d4h'],
    [12 * 86400, '12d'],
  ] as const) {
    it(`shows ${seconds}s as ${want}`, () => assert.equal(age(ago(seconds), now), want));
  }

  it('says <unknown> without a timestamp, and 0s for a clock slightly ahead', () => {
    assert.equal(age(undefined, now), '<unknown>');
    assert.equal(age('not a date', now), '<unknown>');
    assert.equal(age(ago(-3), now), '0s');
  });
});
