// The simulated BMC fleet's wire protocol, the one face of it a capability may
// see. Every machine (a physical host, or a VM a hypervisor node defines)
// answers Redfish at /redfish/v1/Systems/<id> on the fleet's one HTTPS
// listener, with its own credentials, as real BMCs do. Beside Redfish, a JSON
// console under CONSOLE_PREFIX defines and removes machines (what a hypervisor
// agent does through libvirt) and sets faults. The fleet publishes its
// endpoint and its self-signed CA in kube-system/nodewarden-simulated-bmc
// (see kit/discovery.ts): keys `endpoint` and `caCert`.

/** The simulator's name: its folder, its ConfigMap (nodewarden-simulated-bmc), its console command. */
export const BMC_SIMULATOR = 'bmc';

/** Where the JSON console lives on the fleet's listener. */
export const CONSOLE_PREFIX = '/nodewarden/v1';

/** The published ConfigMap's keys. */
export const FLEET_ENDPOINT_KEY = 'endpoint';
export const FLEET_CA_KEY = 'caCert';

export type MachineKind = 'physical' | 'vm';

export interface MachineNic {
  /** e.g. "eno1", "enp1s0". */
  name: string;
  /** Lower-case, colon-separated. */
  mac: string;
  /** The address the machine reports on this NIC (Redfish IPv4Addresses / IPv6Addresses). */
  ip?: string;
}

export interface MachineCredentials {
  username: string;
  password: string;
}

/**
 * What defining a machine takes. POST CONSOLE_PREFIX/machines with this body;
 * defining the same id again with the same spec is a no-op (200), with another
 * spec a 409.
 */
export interface MachineSpec {
  /** The Redfish System id, unique in the fleet: [a-z0-9]([-a-z0-9]*[a-z0-9])?. */
  id: string;
  kind: MachineKind;
  /** Physical hosts: the rack they stand in. */
  rack?: string;
  /** VMs: the hypervisor node that defines them. */
  hypervisor?: string;
  cpus: number;
  memoryMiB: number;
  diskGB: number;
  nics: MachineNic[];
  credentials: MachineCredentials;
}

export type PowerState = 'On' | 'Off' | 'PoweringOn' | 'PoweringOff';

/** A machine as the console shows it (GET CONSOLE_PREFIX/machines and /machines/<id>). */
export interface Machine extends MachineSpec {
  power: PowerState;
  /** The machine's BMC in metal3's URL form, e.g. redfish://127.0.0.1:PORT/redfish/v1/Systems/<id>. */
  bmcAddress: string;
  /** The image in the virtual CD drive, if any. */
  virtualMedia?: string;
  /** A one-time boot override not yet used ("Cd", "Pxe", "Hdd"), if any. */
  bootOverride?: string;
  /** How many times the machine has booted (powered on or restarted): a restart shows even though power reads On before and after. */
  boots?: number;
  /** The device the last boot was from ("Hdd", or an override's "Cd" / "Pxe"), once it has booted. */
  lastBootTarget?: string;
}

/**
 * Faults, set at run time (PUT CONSOLE_PREFIX/faults with a patch of these
 * keys; unknown keys are refused with 400 and nothing is set). Each list names
 * machine ids; "*" stands for every machine.
 */
export interface BmcFaults {
  /** The BMC does not answer (the connection is closed without a reply). */
  unreachable: string[];
  /** Every login is refused (401), whatever the credentials. */
  badCredentials: string[];
  /** Reset actions fail with a Redfish error (500). */
  failPower: string[];
  /** Machines that vanish: their System answers 404. */
  vanished: string[];
  /** How long a power-on takes (PowerState reads PoweringOn meanwhile). 0: at once. */
  powerOnDelayMs: number;
  /**
   * Behaviours of BMCs we did not write, each off unless a machine is named:
   * a System addressed by its id answers 307 to its UUID path (as sushy-tools does);
   */
  redirectToUuid: string[];
  /** the virtual CD sits under the System rather than the Manager (newer BMCs); */
  mediaUnderSystem: string[];
  /** an insert into a drive that holds an image is refused with 409 (iDRAC, iLO). */
  refuseBusyInsert: string[];
}

export type BmcFaultsPatch = Partial<BmcFaults>;

/** The console's routes, relative to the endpoint. */
export const consolePaths = {
  machines: `${CONSOLE_PREFIX}/machines`,
  machine: (id: string) => `${CONSOLE_PREFIX}/machines/${encodeURIComponent(id)}`,
  /** POST {"power": "On" | "Off"}: switches a machine at its BMC, behind the operator's back. */
  power: (id: string) => `${CONSOLE_PREFIX}/machines/${encodeURIComponent(id)}/power`,
  faults: `${CONSOLE_PREFIX}/faults`,
} as const;

// Beside the above: DELETE machine(id) removes a machine (200 with it, 404 if
// unknown); DELETE faults clears every fault. Errors answer {"error": "..."}.
