// The nodewarden command itself, through the real binary: what a user types first.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodewarden } from '../../harness/binary.ts';

describe('nodewarden', () => {
  it('prints its version with --version, like kubectl version', async () => {
    const { code, out } = await nodewarden(['--version']);
    assert.equal(code, 0);
    assert.match(out, /^nodewarden \d+\.\d+\.\d+/);
  });

  it('suggests the closest command for a typo, exit 2', async () => {
    const { code, err } = await nodewarden(['clustr']);
    assert.equal(code, 2);
    assert.match(err, /unknown command "clustr"; did you mean "cluster"\?/);
    assert.match(err, /Run "nodewarden --help" for usage/);
  });
});
