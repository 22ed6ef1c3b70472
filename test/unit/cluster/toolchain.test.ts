// The build scripts print the folder they built into on their last line; a
// script that prints a lot first must still be read to its end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lastLineOf } from '../../../src/cluster/toolchain.ts';

// ~1 MiB of progress, then the folder: more than a pipe holds.
const chatty =
  'for i in $(seq 1 16384); do echo "building step $i of a long build......................"; done; echo /cache/dir';

describe('lastLineOf', () => {
  it('answers the last line of a script that prints it and exits at once, every time', async () => {
    // WHY three at a time: 'exit' often comes before the read of a line printed just before it
    // when the loop is busy (59 of 900 such runs read nothing here on the old 'exit' handler).
    for (let round = 0; round < 100; round++) {
      const lines = await Promise.all(
        [1, 2, 3].map(() => lastLineOf('bash', ['-c', 'echo /cache/dir'], true)),
      );
      assert.deepEqual(lines, ['/cache/dir', '/cache/dir', '/cache/dir'], `round ${round}`);
    }
  });

  it('answers the last line after a megabyte of output', async () => {
    assert.equal(await lastLineOf('bash', ['-c', chatty], true), '/cache/dir');
  });

  it('fails with the exit code, or when nothing was printed', async () => {
    await assert.rejects(lastLineOf('bash', ['-c', 'echo /x; exit 3'], true), /exit 3/);
    await assert.rejects(lastLineOf('bash', ['-c', 'true'], true), /nothing printed/);
  });
});
