// The `maintenance` command as its capability declares it, in a module of its own so
// that running it loads its CLI and nothing else of the capability (its CRD
// schemas, webhooks, controllers): src/cmd/command-index.ts points here.
import type { CommandSpec } from '../cli/command.ts';

export const maintenanceCommandSpec: CommandSpec = {
  name: 'maintenance',
  summary: 'put nodes into maintenance and follow the drain (start|stop|status|list)',
  run: async (args) => (await import('./cli.ts')).maintenanceCommand(args),
};
