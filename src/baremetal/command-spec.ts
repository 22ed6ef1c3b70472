// The `baremetal` command as its capability declares it, in a module of its own so
// that running it loads its CLI and nothing else of the capability (its CRD
// schemas, webhooks, controllers): src/cmd/command-index.ts points here.
import type { CommandSpec } from '../cli/command.ts';

export const baremetalCommandSpec: CommandSpec = {
  name: 'baremetal',
  summary: 'bare-metal hosts: list them, power them on, off or cycle (hosts|power)',
  run: async (args) => (await import('./cli.ts')).baremetalCommand(args),
};
