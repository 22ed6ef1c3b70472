// The nodewarden command: a thin dispatcher. Each capability owns its own
// subcommand in <capability>/cli.ts; this file only routes to them.
import { clusterCommand } from '../cluster/cli.ts';
import { cloudCommand } from '../cluster/infra/cloud/cli.ts';
import { maintenanceCommand } from '../maintenance/cli.ts';
import { manifestsCommand } from '../manifests/generate.ts';
import { operatorCommand } from '../operator/cli.ts';
import { upgradeCommand } from '../upgrade/cli.ts';
import { versionCommand } from './version.ts';

export type Command = (args: string[]) => Promise<number>;

const commands: Record<string, { run: Command; summary: string }> = {
  cluster: { run: clusterCommand, summary: 'local clusters: a real control plane with simulated nodes' },
  cloud: {
    run: cloudCommand,
    summary: "a local cluster's simulated cloud: groups, instances, faults, settings",
  },
  maintenance: {
    run: maintenanceCommand,
    summary: 'put nodes into maintenance and follow the drain (start|stop|status|list)',
  },
  manifests: {
    run: manifestsCommand,
    summary: 'generate CRDs and RBAC into config/ and charts/ (--check: fail if stale)',
  },
  operator: {
    run: operatorCommand,
    summary: 'run the controllers against a cluster (in-cluster or by kubeconfig)',
  },
  upgrade: {
    run: upgradeCommand,
    summary: 'roll nodes onto a new image and follow the rollout (start|status|pause|resume|list)',
  },
  version: { run: versionCommand, summary: 'print the versions of nodewarden and its control plane' },
};

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`);
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
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    console.error(`nodewarden: unknown command "${name}"\n\n${usage()}`);
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
