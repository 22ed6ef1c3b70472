// The command index (src/cmd/command-index.json) `nodewarden --help` prints from and
// dispatches by, generated from the commands src/capabilities.ts declares: each one's
// name and summary, and the module it can be imported from alone. A capability's
// command lives in its command-spec.ts, a simulator's console in the simulator's
// add-on; a command declared anywhere else would load its whole capability to run,
// so it is refused here, naming where it belongs.
import { existsSync, readdirSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { capabilities, commandsOf } from '../capabilities.ts';
import type { CommandSpec } from '../capability.ts';

export const COMMAND_INDEX = 'src/cmd/command-index.json';

/** One command as the index holds it. */
export interface CommandIndexEntry {
  name: string;
  summary: string;
  /** The module declaring it, as src/cmd/ imports it: '../kvm/command-spec.ts'. */
  module: string;
  /** The export holding it; with `console`, the simulator whose console it is. */
  export: string;
  console?: true;
}

/** src/ (or dist/, when run from a build): the folder above this one. */
const SOURCES = new URL('../', import.meta.url);
// The modules are named as in the source tree, whichever tree runs; a build rewrites
// the index's imports as it does every other (rewriteRelativeImportExtensions).
const EXT = extname(fileURLToPath(import.meta.url));

/** The modules that may declare commands, under src/: each capability's command-spec, each simulator's add-on. */
export function declaringModules(sources: URL = SOURCES): string[] {
  const under = (dir: string, file: string) =>
    readdirSync(new URL(dir, sources), { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(new URL(`${dir}${d.name}/${file}${EXT}`, sources)))
      .map((d) => `${dir}${d.name}/${file}`);
  return [...under('', 'command-spec'), ...under('cluster/infra/', 'addon')].sort();
}

type Exports = Readonly<Record<string, unknown>>;

/** Where, in these modules (path under src/ without extension → exports), a command is declared. */
function sourceOf(command: CommandSpec, modules: ReadonlyMap<string, Exports>): CommandIndexEntry {
  for (const [module, exports] of modules) {
    for (const [name, value] of Object.entries(exports)) {
      const at = { name: command.name, summary: command.summary, module: `../${module}.ts`, export: name };
      if (value === command) return at;
      if ((value as { command?: unknown } | undefined)?.command === command) return { ...at, console: true };
    }
  }
  throw new Error(
    `command "${command.name}" is declared outside src/<capability>/command-spec.ts (or a simulator's ` +
      'add-on), so running it would load its whole capability: declare it there',
  );
}

/** The index of these commands, found in these modules (path under src/ without extension → exports). */
export function commandIndexOf(
  commands: readonly CommandSpec[],
  modules: ReadonlyMap<string, Exports>,
): CommandIndexEntry[] {
  return commands.map((c) => sourceOf(c, modules)).sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** The index as a file, keyed by its path under the repository (loads every capability and simulator). */
export async function generateCommandIndex(): Promise<Map<string, string>> {
  const modules = new Map<string, Exports>();
  for (const m of declaringModules()) modules.set(m, await import(new URL(`${m}${EXT}`, SOURCES).href));
  const index = {
    generated: 'by `nodewarden manifests` from the commands in src/capabilities.ts; do not edit',
    commands: commandIndexOf(await commandsOf(capabilities), modules),
  };
  return new Map([[COMMAND_INDEX, `${JSON.stringify(index, null, 2)}\n`]]);
}
