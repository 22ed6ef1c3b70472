// The `tenant` command as its capability declares it, in a module of its own so
// that running it loads its CLI and nothing else of the capability (its CRD
// schemas, webhooks, controllers): src/cmd/command-index.ts points here.
import type { CommandSpec } from '../cli/command.ts';

export const tenantCommandSpec: CommandSpec = {
  name: 'tenant',
  summary: 'tenant clusters on bare metal: list them, show one, convert a SIPCluster (list|status|convert)',
  run: async (args) => (await import('./cli.ts')).tenantCommand(args),
};
