import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { capabilities, commandsOf } from '../../../src/capabilities.ts';
import { allCommands, builtins } from '../../../src/cmd/builtins.ts';
import { commandIndex } from '../../../src/cmd/command-index.ts';

describe('the command index nodewarden --help prints from and dispatches by', () => {
  it('lists every capability command with its summary, as src/capabilities.ts declares them', async () => {
    const real = (await commandsOf(capabilities))
      .map((c) => ({ name: c.name, summary: c.summary }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    const indexed = [...commandIndex]
      .map((c) => ({ name: c.name, summary: c.summary }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    assert.deepEqual(indexed, real, 'src/cmd/command-index.json is stale: run `make manifests`');
  });

  it('loads, for each name, the very command its capability or simulator declares', async () => {
    const declared = new Map((await commandsOf(capabilities)).map((c) => [c.name, c]));
    for (const entry of commandIndex) {
      assert.equal(await entry.load(), declared.get(entry.name), `src/cmd/command-index.json: ${entry.name}`);
    }
  });

  it('names no builtin twice and every command once', async () => {
    const all = await allCommands();
    assert.equal(all.size, builtins.length + commandIndex.length);
  });
});
