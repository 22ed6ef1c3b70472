// The nodewarden command: a thin dispatcher. Its own commands run the operator,
// the local clusters and the manifests; every other command is a capability's
// (or its simulator's console), taken from src/capabilities.ts.
import { enableCompileCache } from 'node:module';
import type { CommandSpec } from '../capability.ts';
import { builtins } from './builtins.ts';
import type { CommandSummary } from './command-index.ts';

export type Command = (args: string[]) => Promise<number>;

// The capabilities' commands, by name (no capability loaded). Read only past the builtins,
// so `nodewarden manifests`, which writes the index, runs whatever state the index is in.
const capabilityCommands = async () => (await import('./command-index.ts')).commandIndex;

// Help and the "did you mean" hint read the index: no capability is loaded to print text.
async function summaries(): Promise<CommandSummary[]> {
  return [...builtins, ...(await capabilityCommands())].sort((a, b) => (a.name < b.name ? -1 : 1));
}

function usage(commands: readonly CommandSummary[]): string {
  const lines = commands.map((c) => `  ${c.name.padEnd(12)} ${c.summary}`);
  return [
    'Usage: nodewarden <command> [flags]',
    '',
    'Commands:',
    ...lines,
    '',
    'Run "nodewarden <command> --help" for more.',
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  // V8's code for the modules a command loads, kept on disk between runs as npm and
  // tsc keep theirs: a status command spends more time compiling than asking the API
  // server (~0.025 s of ~0.13 s). Not for the operator, which starts once and may run
  // on a read-only file system; where the cache cannot be written, Node goes without.
  if (name !== 'operator') enableCompileCache();
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage(await summaries()));
    return name ? 0 : 2;
  }
  // kubectl's habit: `--version` is the version command.
  const builtin = builtins.find((c) => c.name === (name === '--version' ? 'version' : name));
  if (builtin) return builtin.run(rest);
  const indexed = (await capabilityCommands()).find((c) => c.name === name);
  const command: CommandSpec | undefined = await indexed?.load();
  if (!command) {
    const { closest } = await import('../cli/verbs.ts');
    const near = closest(
      name,
      (await summaries()).map((c) => c.name),
    );
    console.error(
      `nodewarden: unknown command "${name}"${near ? `; did you mean "${near}"?` : ''}\n` +
        'Run "nodewarden --help" for usage.',
    );
    return 2;
  }
  return command.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`nodewarden: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
