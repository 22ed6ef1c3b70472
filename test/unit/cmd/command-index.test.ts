import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { capabilities, commandsOf } from '../../../src/capabilities.ts';
import { allCommands, builtins } from '../../../src/cmd/builtins.ts';
import { commandIndex } from '../../../src/cmd/command-index.ts';

describe('the command index nodewarden --help prints from', () => {
  it('lists every capability command with its summary, as src/capabilities.ts declares them', async () => {
    const real = (await commandsOf(capabilities))
      .map((c) => ({ name: c.name, summary: c.summary }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    const indexed = [...commandIndex].sort((a, b) => (a.name < b.name ? -1 : 1));
    assert.deepEqual(indexed, real, 'update src/cmd/command-index.ts to the capabilities commands');
  });

  it('names no builtin twice and every command once', async () => {
    const all = await allCommands();
    assert.equal(all.size, builtins.length + commandIndex.length);
  });
});
