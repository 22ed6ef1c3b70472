// The seam between the Redfish service (service.ts) and what holds the
// machines it speaks for: the simulated BMC fleet's state, or a VM host
// agent's libvirt domains. The service owns the protocol (routes, auth,
// sessions, documents, error bodies); a backend owns the machines.
// Arrows point down: this floor imports the runtime only, so both the
// simulator (src/cluster/) and a capability may serve through it.

export const RESET_TYPES = ['On', 'ForceOff', 'GracefulShutdown', 'GracefulRestart', 'ForceRestart'] as const;
export type ResetType = (typeof RESET_TYPES)[number];

export const BOOT_TARGETS = ['None', 'Pxe', 'Cd', 'Hdd', 'BiosSetup'] as const;
export const BOOT_ENABLED = ['Disabled', 'Once', 'Continuous'] as const;
export const BOOT_MODES = ['UEFI', 'Legacy'] as const;

export interface BootSettings {
  target: (typeof BOOT_TARGETS)[number];
  enabled: (typeof BOOT_ENABLED)[number];
  mode: (typeof BOOT_MODES)[number];
}

export interface SystemCredentials {
  username: string;
  password: string;
}

export type SystemPower = 'On' | 'Off' | 'PoweringOn' | 'PoweringOff';

/** What a machine is made of, as its Redfish documents describe it. */
export interface SystemSpec {
  /** The Redfish System (and Manager, Chassis) id. */
  id: string;
  kind: 'physical' | 'vm';
  cpus: number;
  memoryMiB: number;
  diskGB: number;
  nics: { name: string; mac: string; ip?: string }[];
  /** The login its BMC takes. */
  credentials: SystemCredentials;
}

/** One machine as the service reads it. */
export interface RedfishSystem {
  spec: SystemSpec;
  power: SystemPower;
  boot: BootSettings;
  /** The image in its virtual CD, if any. */
  virtualMedia?: string;
  /** What its System calls its model; by default a simulated one. */
  model?: string;
}

/** How a BMC we did not write behaves, per machine (the simulator's faults; a real backend has none). */
export interface SystemQuirks {
  /** The connection is closed without a reply. */
  unreachable?: boolean;
  /** Every login is refused. */
  badCredentials?: boolean;
  /** Its System answers 404. */
  vanished?: boolean;
  /** A System addressed by id answers 307 to its UUID path (as sushy-tools does). */
  redirectToUuid?: boolean;
  /** Its virtual CD sits under the System rather than the Manager. */
  mediaUnderSystem?: boolean;
}

/** The boot fields a PATCH of a System sets, unchecked (the backend checks them). */
export interface BootPatch {
  target?: unknown;
  enabled?: unknown;
  mode?: unknown;
}

/** What holds the machines. Every call may be slow (a backend may drive a real hypervisor). */
export interface RedfishBackend {
  /** The machine with this id, or undefined. */
  system(id: string): Promise<RedfishSystem | undefined>;
  /** Every machine, by id. */
  systems(): Promise<RedfishSystem[]>;
  /** How the machine's BMC misbehaves; none when omitted. */
  quirks?(id: string): SystemQuirks;
  reset(id: string, type: ResetType): Promise<void>;
  /** Sets the boot override; answers the machine as it now is. */
  setBoot(id: string, patch: BootPatch): Promise<RedfishSystem>;
  insertMedia(id: string, image: string): Promise<void>;
  ejectMedia(id: string): Promise<void>;
}

/** A refusal the service answers with this HTTP status and a Redfish error body. */
export class RedfishBackendError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = 'RedfishBackendError';
    this.status = status;
  }
}

/**
 * The boot settings after a PATCH, or a 400 naming the allowed values.
 * Setting a target without saying how long means once, as most BMCs take it.
 */
export function patchedBoot(current: BootSettings, patch: BootPatch): BootSettings {
  const next = { ...current };
  if (patch.target !== undefined) next.target = oneOf(patch.target, BOOT_TARGETS, 'BootSourceOverrideTarget');
  if (patch.enabled !== undefined)
    next.enabled = oneOf(patch.enabled, BOOT_ENABLED, 'BootSourceOverrideEnabled');
  if (patch.mode !== undefined) next.mode = oneOf(patch.mode, BOOT_MODES, 'BootSourceOverrideMode');
  if (
    patch.target !== undefined &&
    patch.enabled === undefined &&
    next.target !== 'None' &&
    next.enabled === 'Disabled'
  )
    next.enabled = 'Once';
  return next;
}

function oneOf<T extends string>(v: unknown, allowed: readonly T[], what: string): T {
  if (typeof v !== 'string' || !allowed.includes(v as T))
    throw new RedfishBackendError(400, `${what} ${JSON.stringify(v)} is not one of ${allowed.join(', ')}`);
  return v as T;
}
