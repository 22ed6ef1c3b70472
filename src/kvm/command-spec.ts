// The `kvm` command as its capability declares it, in a module of its own so
// that running it loads its CLI and nothing else of the capability (its CRD
// schemas, webhooks, controllers): src/cmd/command-index.ts points here.
import type { CommandSpec } from '../cli/command.ts';

export const kvmCommandSpec: CommandSpec = {
  name: 'kvm',
  summary: 'workload clusters in VMs: list them, show one with its nodes and drains (list|status)',
  run: async (args) => (await import('./cli.ts')).kvmCommand(args),
};
