// The capabilities' commands (and their simulators' consoles): name and summary for
// `nodewarden --help` and the "did you mean" hint, and how to load each one alone.
// Importing the capabilities (controllers, CRD schemas, metrics) costs ~50 MiB RSS and
// ~0.5 s that a command printing text should not, and `maintenance status` needs
// nothing but its own CLI. test/unit/cmd/command-index.test.ts fails, naming the line
// to change, whenever this list and commandsOf(capabilities) differ, and checks that
// each load() gives the very command its capability declares.
import type { CommandSpec } from '../capability.ts';

export interface CommandSummary {
  name: string;
  summary: string;
}

export interface IndexedCommand extends CommandSummary {
  load(): Promise<CommandSpec>;
}

/** A simulator's console: its add-on module, loaded only for it (~15 MiB). */
const consoleOf = async (addon: Promise<{ command?: CommandSpec }>) => {
  const { command } = await addon;
  if (!command) throw new Error('the simulator has no console command');
  return command;
};

export const commandIndex: readonly IndexedCommand[] = [
  {
    name: 'baremetal',
    summary: 'bare-metal hosts: list them, power them on, off or cycle (hosts|power)',
    load: async () => (await import('../baremetal/command-spec.ts')).baremetalCommandSpec,
  },
  {
    name: 'bmc',
    summary: "a local cluster's simulated BMC fleet: machines, power, faults",
    load: () => consoleOf(import('../cluster/infra/bmc/addon.ts').then((m) => m.simulatedBmcFleet)),
  },
  {
    name: 'cloud',
    summary: "a local cluster's simulated cloud: groups, instances, faults, settings",
    load: () => consoleOf(import('../cluster/infra/cloud/addon.ts').then((m) => m.simulatedCloud)),
  },
  {
    name: 'hypervisor',
    summary: "a local cluster's simulated hypervisor: VMs, workload clusters, faults, settings",
    load: () => consoleOf(import('../cluster/infra/hypervisor/addon.ts').then((m) => m.simulatedHypervisor)),
  },
  {
    name: 'kvm',
    summary: 'workload clusters in VMs: list them, show one with its nodes and drains (list|status)',
    load: async () => (await import('../kvm/command-spec.ts')).kvmCommandSpec,
  },
  {
    name: 'maintenance',
    summary: 'put nodes into maintenance and follow the drain (start|stop|status|list)',
    load: async () => (await import('../maintenance/command-spec.ts')).maintenanceCommandSpec,
  },
  {
    name: 'tenant',
    summary: 'tenant clusters on bare metal: list them, show one, convert a SIPCluster (list|status|convert)',
    load: async () => (await import('../tenant/command-spec.ts')).tenantCommandSpec,
  },
  {
    name: 'upgrade',
    summary: 'roll nodes onto a new image and follow the rollout (start|status|pause|resume|list)',
    load: async () => (await import('../upgrade/command-spec.ts')).upgradeCommandSpec,
  },
];
