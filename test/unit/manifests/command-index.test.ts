// The command index `nodewarden --help` reads (src/cmd/command-index.json), generated
// from the commands the capabilities declare and where each can be loaded alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { capabilities } from '../../../src/capabilities.ts';
import type { CommandSpec } from '../../../src/capability.ts';
import { commandIndexOf, declaringModules } from '../../../src/manifests/command-index.ts';
import { checkManifests, generatedFiles } from '../../../src/manifests/generate.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const command = (name: string): CommandSpec => ({ name, summary: `the ${name} command`, run: async () => 0 });

describe('the command index', () => {
  const widgets = command('widgets');
  const fleet = command('fleet');
  const modules = new Map<string, Record<string, unknown>>([
    ['widgets/command-spec', { widgetsCommandSpec: widgets, unrelated: 1 }],
    ['cluster/infra/fleet/addon', { FLEET_FLAG: 'fleet', simulatedFleet: { name: 'fleet', command: fleet } }],
  ]);

  it("names each command's module and export, a simulator's console by the simulator, sorted by name", () => {
    assert.deepEqual(commandIndexOf([widgets, fleet], modules), [
      {
        name: 'fleet',
        summary: 'the fleet command',
        module: '../cluster/infra/fleet/addon.ts',
        export: 'simulatedFleet',
        console: true,
      },
      {
        name: 'widgets',
        summary: 'the widgets command',
        module: '../widgets/command-spec.ts',
        export: 'widgetsCommandSpec',
      },
    ]);
  });

  it('refuses a command declared outside a command-spec module or add-on, saying where it belongs', () => {
    assert.throws(
      () => commandIndexOf([widgets, command('gadgets')], modules),
      /command "gadgets" is declared outside src\/<capability>\/command-spec.ts .*declare it there/,
    );
  });

  it("looks in every capability's command-spec module and every simulator's add-on", () => {
    const found = declaringModules();
    for (const c of capabilities.filter((c) => c.commands?.length))
      assert.ok(found.includes(`${c.name}/command-spec`), `${c.name}/command-spec`);
    assert.ok(found.includes('cluster/infra/bmc/addon'));
  });

  it('is checked in as generated (run `make manifests` if this fails)', async () => {
    assert.deepEqual(checkManifests(ROOT, await generatedFiles()), []);
  });
});
