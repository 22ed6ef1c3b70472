// The nodewarden command: a thin dispatcher. Its own commands run the operator,
// the local clusters and the manifests; every other command is a capability's
// (or its simulator's console), taken from src/capabilities.ts.
import { capabilities, commandsOf, simulatorsOf } from '../capabilities.ts';
import type { CommandSpec } from '../capability.ts';
import { closest } from '../cli/verbs.ts';
import { clusterCommand } from '../cluster/cli.ts';
import { manifestsCommand } from '../manifests/generate.ts';
import { operatorCommand } from '../operator/cli.ts';
import { versionCommand } from './version.ts';

export type Command = (args: string[]) => Promise<number>;

const builtins: CommandSpec[] = [
  {
    name: 'cluster',
    summary: 'local clusters: a real control plane with simulated nodes',
    run: (args) => clusterCommand(args, simulatorsOf(capabilities)),
  },
  {
    name: 'manifests',
    summary:
      'generate CRDs, RBAC and webhook configuration into config/ and charts/ (--check: fail if stale)',
    run: manifestsCommand,
  },
  {
    name: 'operator',
    summary: 'run the controllers against a cluster (in-cluster or by kubeconfig)',
    run: (args) => operatorCommand(args),
  },
  { name: 'version', summary: 'print the versions of nodewarden and its control plane', run: versionCommand },
];

function allCommands(): Map<string, CommandSpec> {
  const all = [...builtins, ...commandsOf(capabilities)];
  const byName = new Map<string, CommandSpec>();
  for (const c of all.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (byName.has(c.name)) throw new Error(`command "${c.name}" is declared twice`);
    byName.set(c.name, c);
  }
  return byName;
}

function usage(commands: Map<string, CommandSpec>): string {
  const lines = [...commands.values()].map((c) => `  ${c.name.padEnd(12)} ${c.summary}`);
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
  const commands = allCommands();
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage(commands));
    return name ? 0 : 2;
  }
  // kubectl's habit: `--version` is the version command.
  if (name === '--version') return versionCommand(rest);
  const command = commands.get(name);
  if (!command) {
    const near = closest(name, [...commands.keys()]);
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
