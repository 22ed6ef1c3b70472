// The capabilities' commands (and their simulators' consoles): name and summary for
// `nodewarden --help` and the "did you mean" hint, and how to load each one alone.
// Importing the capabilities (controllers, CRD schemas, metrics) costs ~50 MiB RSS and
// ~0.5 s that a command printing text should not, and `maintenance status` needs
// nothing but its own CLI. So the list is data, command-index.json, which `nodewarden
// manifests` generates from src/capabilities.ts (src/manifests/command-index.ts) and
// `make manifests-check` keeps current; nothing about a command is written here.
import type { CommandSpec } from '../capability.ts';
import index from './command-index.json' with { type: 'json' };

export interface CommandSummary {
  name: string;
  summary: string;
}

export interface IndexedCommand extends CommandSummary {
  load(): Promise<CommandSpec>;
}

/** A line of command-index.json: see CommandIndexEntry in src/manifests/command-index.ts. */
interface Entry extends CommandSummary {
  module: string;
  export: string;
  /** A simulator's console: `export` is the simulator (its add-on, ~15 MiB, loaded only for it). */
  console?: boolean;
}

async function load(entry: Entry): Promise<CommandSpec> {
  const declared: unknown = (await import(entry.module))[entry.export];
  const command = entry.console ? (declared as { command?: CommandSpec } | undefined)?.command : declared;
  if (!command)
    throw new Error(`${entry.module} declares no "${entry.name}" command: run \`make manifests\``);
  return command as CommandSpec;
}

export const commandIndex: readonly IndexedCommand[] = (index.commands as Entry[]).map((entry) => ({
  name: entry.name,
  summary: entry.summary,
  load: () => load(entry),
}));
