// The `upgrade` command as its capability declares it, in a module of its own so
// that running it loads its CLI and nothing else of the capability (its CRD
// schemas, webhooks, controllers): src/cmd/command-index.ts points here.
import type { CommandSpec } from '../cli/command.ts';

export const upgradeCommandSpec: CommandSpec = {
  name: 'upgrade',
  summary: 'roll nodes onto a new image and follow the rollout (start|status|pause|resume|list)',
  run: async (args) => (await import('./cli.ts')).upgradeCommand(args),
};
