// The capabilities' commands (and their simulators' consoles), name and summary, for
// `nodewarden --help` and the "did you mean" hint without loading the capabilities: importing them all (controllers, CRD
// schemas, metrics) costs ~50 MiB RSS and ~0.5 s that a command printing text
// should not. test/unit/cmd/command-index.test.ts fails, naming the line to change,
// whenever this list and commandsOf(capabilities) differ.
export interface CommandSummary {
  name: string;
  summary: string;
}

export const commandIndex: readonly CommandSummary[] = [
  { name: 'baremetal', summary: 'bare-metal hosts: list them, power them on, off or cycle (hosts|power)' },
  { name: 'bmc', summary: "a local cluster's simulated BMC fleet: machines, power, faults" },
  { name: 'cloud', summary: "a local cluster's simulated cloud: groups, instances, faults, settings" },
  {
    name: 'hypervisor',
    summary: "a local cluster's simulated hypervisor: VMs, workload clusters, faults, settings",
  },
  {
    name: 'kvm',
    summary: 'workload clusters in VMs: list them, show one with its nodes and drains (list|status)',
  },
  {
    name: 'maintenance',
    summary: 'put nodes into maintenance and follow the drain (start|stop|status|list)',
  },
  {
    name: 'tenant',
    summary: 'tenant clusters on bare metal: list them, show one, convert a SIPCluster (list|status|convert)',
  },
  {
    name: 'upgrade',
    summary: 'roll nodes onto a new image and follow the rollout (start|status|pause|resume|list)',
  },
];
