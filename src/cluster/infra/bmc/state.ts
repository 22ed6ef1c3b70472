// The BMC fleet's state: its machines (spec, power, boot override, virtual
// media) and faults, persisted as one snapshot. Power follows the clock: a
// power-on with a delay reads PoweringOn until tick() finds it due. Sessions
// are not here: a BMC forgets them when it restarts (src/redfish/sessions.ts).
import {
  type BootSettings,
  patchedBoot,
  RedfishBackendError,
  type ResetType,
} from '../../../redfish/backend.ts';
import { Listeners } from '../kit/listeners.ts';
import { hasFault, type MachineFault, mergeBmcFaults, noBmcFaults } from './faults.ts';
import { checkMachineSpec, sameMachineSpec } from './machine-spec.ts';
import type {
  BmcFaults,
  BmcFaultsPatch,
  Machine,
  MachineCredentials,
  MachineSpec,
  PowerState,
} from './protocol.ts';

// The Redfish vocabulary is the Redfish floor's; named here too for the fleet's own files.
export {
  BOOT_ENABLED,
  BOOT_MODES,
  BOOT_TARGETS,
  type BootSettings,
  RESET_TYPES,
  type ResetType,
} from '../../../redfish/backend.ts';

/** One machine as the fleet keeps it. */
export interface MachineRecord {
  spec: MachineSpec;
  power: PowerState;
  /** While PoweringOn: when it reads On. */
  onAt?: number;
  boot: BootSettings;
  virtualMedia?: string;
  boots: number;
  lastBootTarget?: string;
}

export interface BmcSnapshot {
  version: 1;
  machines: MachineRecord[];
  faults: BmcFaults;
}

/** A refusal with the status the console or Redfish answers it with. */
export class BmcStateError extends RedfishBackendError {
  constructor(status: number, message: string) {
    super(status, message);
    this.name = 'BmcStateError';
  }
}

export class BmcState {
  private readonly machines = new Map<string, MachineRecord>();
  private faults: BmcFaults = noBmcFaults();
  private readonly changes = new Listeners<[]>();

  static restore(s: BmcSnapshot): BmcState {
    const state = new BmcState();
    for (const m of s.machines) state.machines.set(m.spec.id, structuredClone(m));
    state.faults = mergeBmcFaults(noBmcFaults(), s.faults);
    return state;
  }

  snapshot(): BmcSnapshot {
    return { version: 1, machines: this.records().map((m) => structuredClone(m)), faults: this.getFaults() };
  }

  onChange(listener: () => void): () => void {
    return this.changes.add(listener);
  }

  // ---- machines ----

  /** Defines a machine; the same spec again is a no-op, another spec for the id a 409. */
  define(input: unknown): { created: boolean; record: MachineRecord } {
    let spec: MachineSpec;
    try {
      spec = checkMachineSpec(input);
    } catch (err) {
      throw new BmcStateError(400, (err as Error).message);
    }
    const existing = this.machines.get(spec.id);
    if (existing) {
      if (sameMachineSpec(existing.spec, spec)) return { created: false, record: existing };
      throw new BmcStateError(409, `machine "${spec.id}" exists with another spec; remove it first`);
    }
    const mac = spec.nics.map((n) => n.mac).find((m) => this.macOwner(m));
    if (mac) throw new BmcStateError(409, `MAC ${mac} belongs to machine "${this.macOwner(mac)}"`);
    // A machine arrives switched off, as a racked server or a defined (not started) VM does.
    const record: MachineRecord = {
      spec,
      power: 'Off',
      boot: { target: 'None', enabled: 'Disabled', mode: 'UEFI' },
      boots: 0,
    };
    this.machines.set(spec.id, record);
    this.changed();
    return { created: true, record };
  }

  private macOwner(mac: string): string | undefined {
    for (const m of this.machines.values()) if (m.spec.nics.some((n) => n.mac === mac)) return m.spec.id;
    return undefined;
  }

  remove(id: string): MachineRecord | undefined {
    const m = this.machines.get(id);
    if (!m) return undefined;
    this.machines.delete(id);
    this.changed();
    return m;
  }

  get(id: string): MachineRecord | undefined {
    return this.machines.get(id);
  }

  /** Every machine, by id. */
  records(): MachineRecord[] {
    return [...this.machines.values()].sort((a, b) =>
      a.spec.id < b.spec.id ? -1 : a.spec.id > b.spec.id ? 1 : 0,
    );
  }

  /** The machines these credentials log in to (whatever their faults). */
  machinesFor(c: MachineCredentials): MachineRecord[] {
    return this.records().filter(
      (m) => m.spec.credentials.username === c.username && m.spec.credentials.password === c.password,
    );
  }

  private must(id: string): MachineRecord {
    const m = this.machines.get(id);
    if (!m) throw new BmcStateError(404, `no machine "${id}"`);
    return m;
  }

  // ---- power ----

  /** Advances power-ons that are due; true if any changed. */
  tick(now: number): boolean {
    let changed = false;
    for (const m of this.machines.values()) {
      if (m.power === 'PoweringOn' && (m.onAt ?? 0) <= now) {
        m.power = 'On';
        delete m.onAt;
        changed = true;
      }
    }
    if (changed) this.changed();
    return changed;
  }

  /** A Redfish ComputerSystem.Reset; a failPower fault refuses it with 500. */
  reset(id: string, type: ResetType, now: number): MachineRecord {
    const m = this.must(id);
    if (this.hasFault('failPower', id))
      throw new BmcStateError(500, `power action ${type} failed (injected fault)`);
    switch (type) {
      case 'On':
        if (m.power === 'Off') this.boot(m, now);
        break;
      case 'ForceOff':
      case 'GracefulShutdown':
        this.switchOff(m);
        break;
      case 'GracefulRestart':
      case 'ForceRestart':
        // A restart of a machine that is off boots it, as the BMCs Ironic drives do.
        this.boot(m, now);
        break;
    }
    this.changed();
    return m;
  }

  /** Power switched at the BMC by hand (the console): no faults apply. */
  setPower(id: string, power: 'On' | 'Off', now: number): MachineRecord {
    const m = this.must(id);
    if (power === 'Off') this.switchOff(m);
    else if (m.power === 'Off') this.boot(m, now);
    this.changed();
    return m;
  }

  private switchOff(m: MachineRecord): void {
    m.power = 'Off';
    delete m.onAt;
  }

  /** Boots: uses a pending override (once), then reads On, or PoweringOn for the power-on delay. */
  private boot(m: MachineRecord, now: number): void {
    const override = m.boot.enabled !== 'Disabled' && m.boot.target !== 'None';
    m.lastBootTarget = override ? m.boot.target : 'Hdd';
    if (m.boot.enabled === 'Once') m.boot = { ...m.boot, target: 'None', enabled: 'Disabled' };
    m.boots++;
    const delay = this.faults.powerOnDelayMs;
    if (delay > 0) {
      m.power = 'PoweringOn';
      m.onAt = now + delay;
    } else {
      m.power = 'On';
      delete m.onAt;
    }
  }

  // ---- boot override and virtual media ----

  /** Sets the fields given (a Redfish PATCH of Boot); 400 naming the allowed values otherwise. */
  setBoot(id: string, patch: { target?: unknown; enabled?: unknown; mode?: unknown }): MachineRecord {
    const m = this.must(id);
    m.boot = patchedBoot(m.boot, patch);
    this.changed();
    return m;
  }

  /** A refuseBusyInsert fault refuses an insert into a drive that holds an image, with 409. */
  insertMedia(id: string, image: string): MachineRecord {
    const m = this.must(id);
    if (m.virtualMedia !== undefined && this.hasFault('refuseBusyInsert', id))
      throw new BmcStateError(409, `the virtual CD holds ${m.virtualMedia}; eject it first`);
    m.virtualMedia = image;
    this.changed();
    return m;
  }

  ejectMedia(id: string): MachineRecord {
    const m = this.must(id);
    delete m.virtualMedia;
    this.changed();
    return m;
  }

  // ---- faults ----

  getFaults(): BmcFaults {
    return structuredClone(this.faults);
  }

  /** Merges a patch; unknown keys or bad values throw RangeError and set nothing. */
  setFaults(patch: BmcFaultsPatch): BmcFaults {
    this.faults = mergeBmcFaults(this.faults, patch);
    this.changed();
    return this.getFaults();
  }

  clearFaults(): BmcFaults {
    this.faults = noBmcFaults();
    this.changed();
    return this.getFaults();
  }

  hasFault(key: MachineFault, id: string): boolean {
    return hasFault(this.faults, key, id);
  }

  private changed(): void {
    this.changes.emit();
  }
}

/** A machine as the console shows it; `address` is the fleet's host:port. */
export function machineView(m: MachineRecord, address: string): Machine {
  const view: Machine = {
    ...structuredClone(m.spec),
    power: m.power,
    bmcAddress: `redfish://${address}/redfish/v1/Systems/${m.spec.id}`,
    boots: m.boots,
  };
  if (m.virtualMedia !== undefined) view.virtualMedia = m.virtualMedia;
  if (m.boot.enabled !== 'Disabled' && m.boot.target !== 'None') view.bootOverride = m.boot.target;
  if (m.lastBootTarget !== undefined) view.lastBootTarget = m.lastBootTarget;
  return view;
}
