// nodewarden's own commands. Each loads its code when it runs, and the
// capabilities only if it needs them: `version` or `cluster kubeconfig` then
// cost a bare Node process, not every controller's code (~50 MiB, ~0.5 s).
import type { CommandSpec } from '../capability.ts';

async function simulators() {
  const { capabilities, simulatorsOf } = await import('../capabilities.ts');
  return simulatorsOf(capabilities);
}

/**
 * `cluster kubeconfig [--name N]` of a cluster that exists: the path, read without the
 * cluster command's modules or finding the control-plane binaries (~0.2 s, ~30 MiB).
 * Anything else (other flags, --help, no such cluster) is left to the cluster command,
 * so its usage and errors stay the only ones.
 */
async function kubeconfigFastPath(args: string[]): Promise<string | undefined> {
  const [verb, ...rest] = args;
  if (verb !== 'kubeconfig') return undefined;
  let name: string | undefined;
  if (rest.length === 2 && rest[0] === '--name') name = rest[1];
  else if (rest.length === 1 && rest[0]!.startsWith('--name=')) name = rest[0]!.slice('--name='.length);
  else if (rest.length) return undefined;
  name ??= process.env.NODEWARDEN_CLUSTER ?? 'nodewarden';
  if (!name || name.startsWith('-')) return undefined;
  return (await import('../cli/local-paths.ts')).localKubeconfig(name);
}

export const builtins: CommandSpec[] = [
  {
    name: 'cluster',
    summary: 'local clusters: a real control plane with simulated nodes',
    run: async (args) => {
      // Internal, left out of --help: the real nodes' relays load nothing but node:net.
      if (args[0] === 'relay')
        return (await import('../cluster/real-nodes/relay-command.ts')).relayCommand(args.slice(1));
      const path = await kubeconfigFastPath(args);
      if (path) {
        console.log(path);
        return 0;
      }
      const { clusterCommand } = await import('../cluster/cli.ts');
      // Printing a kubeconfig's path needs none of the simulators' `up` flags.
      const help = args.some((a) => a === '--help' || a === '-h');
      if (args[0] === 'kubeconfig' && !help) return clusterCommand(args, []);
      return clusterCommand(args, await simulators());
    },
  },
  {
    name: 'manifests',
    summary:
      'generate CRDs, RBAC and webhook configuration into config/ and charts/ (--check: fail if stale)',
    run: async (args) => (await import('../manifests/generate.ts')).manifestsCommand(args),
  },
  {
    name: 'operator',
    summary: 'run the controllers against a cluster (in-cluster or by kubeconfig)',
    run: async (args) => (await import('../operator/cli.ts')).operatorCommand(args),
  },
  {
    name: 'version',
    summary: 'print the versions of nodewarden and its control plane',
    run: async (args) => (await import('./version.ts')).versionCommand(args),
  },
];

/** Every command: ours and the capabilities' (loading them). */
export async function allCommands(): Promise<Map<string, CommandSpec>> {
  const { capabilities, commandsOf } = await import('../capabilities.ts');
  const all = [...builtins, ...(await commandsOf(capabilities))];
  const byName = new Map<string, CommandSpec>();
  for (const c of all.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (byName.has(c.name)) throw new Error(`command "${c.name}" is declared twice`);
    byName.set(c.name, c);
  }
  return byName;
}
