// The seam between the VirtualHostPool controller and what runs VMs: a
// Hypervisor runs one node's VMs, each answering Redfish at its own address
// with the credentials it was defined with (as the anchor's agent does with
// libvirt and sushy-tools). Its implementations sit beside this file by name:
// simulated/ (the simulated BMC fleet acting for every node) and libvirt/ (a
// VM host agent per node); unit tests pass a fake. Each says what the pool's
// per-node agent DaemonSet runs for it (AgentRun). Nothing here knows how an
// implementation reaches its VMs.

/** A NIC of a VM: its name inside the VM, its MAC and the address it is given. */
export interface VmNic {
  /** e.g. "enp1s0". */
  name: string;
  /** Lower-case, colon-separated. */
  mac: string;
  ip?: string;
  /** The pool network it is on (spec.networks[].name): a real hypervisor puts it on that network's bridge. */
  network?: string;
}

/** The login a VM's Redfish endpoint takes. */
export interface RedfishCredentials {
  username: string;
  password: string;
}

/** What defining a VM takes. */
export interface VmDefinition {
  /** Unique among every node's VMs, a DNS label (see machineId in ../objects.ts). */
  id: string;
  /** The pool flavor it is made from, and what that flavor gives it. */
  flavor: { name: string; cpus: number; memoryMiB: number };
  /** Its disks, the root disk first. */
  disks: { sizeGB: number }[];
  nics: VmNic[];
  credentials: RedfishCredentials;
}

export type VmPower = 'On' | 'Off' | 'PoweringOn' | 'PoweringOff';

/** A VM as its hypervisor holds it. */
export interface HeldVm {
  id: string;
  power: VmPower;
  /** Its Redfish System in metal3's URL form, e.g. redfish://10.0.0.1:8000/redfish/v1/Systems/<id>: its BareMetalHost's spec.bmc.address. */
  redfishAddress: string;
}

/** What runs one node's VMs. */
export interface Hypervisor {
  /** The node whose VMs it runs. */
  readonly node: string;
  /** Defines the VM, or finds it defined the same way (idempotent); answers with its Redfish address. One defined with the same id another way is a HypervisorError with status 409. */
  define(vm: VmDefinition): Promise<HeldVm>;
  /** Removes the VM; one that is not there is no error. */
  remove(id: string): Promise<void>;
  /** The VMs the node holds. */
  list(): Promise<HeldVm[]>;
}

/**
 * What a pool's per-node agent DaemonSet runs, one way per backend: `pause`
 * where the simulated fleet acts for every node (the pod only marks the node
 * as the pool's), the VM host agent (a command of the operator's `image`)
 * against the node's own libvirtd where VMs are real libvirt domains.
 */
export type AgentRun =
  | { kind: 'pause' }
  /** libvirtDir: the folder of the nodes' libvirt sockets; `$(NODE_NAME)` in it stands for each node's name. */
  | { kind: 'vm-host-agent'; image: string; libvirtDir?: string };

/** Every node's hypervisor, as one backend reaches them. */
export interface Hypervisors {
  /** What runs on the nodes beside these hypervisors. */
  readonly agent: AgentRun;
  of(node: string): Hypervisor;
}

/** Where the hypervisors are found, looked up each round (a backend may come up after the operator). */
export interface HypervisorSource {
  /** What is looked for, as logs name it. */
  readonly name: string;
  /** Why there are none, as the pool's Ready=False/NoHypervisor condition says it. */
  readonly missing: string;
  /** What the DaemonSet runs while none is found (VM host agents publish themselves only once it runs them). */
  readonly agentWhenNone: AgentRun;
  /** The hypervisors, or undefined when there are none to reach. */
  find(): Promise<Hypervisors | undefined>;
}

/** A hypervisor call that failed in a way retrying later may mend (unreachable, 5xx) or not (409: another definition). */
export class HypervisorError extends Error {
  readonly retryable: boolean;
  /** The HTTP status, when the hypervisor answered. */
  readonly status: number | undefined;
  constructor(message: string, retryable: boolean, status?: number) {
    super(message);
    this.name = 'HypervisorError';
    this.retryable = retryable;
    this.status = status;
  }
}
