// The BMC fleet's faults (protocol.ts BmcFaults): which machines' BMCs do not
// answer, refuse every login, fail power actions or have vanished, and how
// long a power-on takes; and, each opt-in by machine, behaviours of BMCs we did
// not write (redirects to the System's UUID, virtual media under the System, a
// busy drive refusing an insert). Pure functions over the record; the state
// applies them.
import { checkFaultKeys, count } from '../kit/faults.ts';
import type { BmcFaults, BmcFaultsPatch } from './protocol.ts';

/** Every fault the fleet knows, as PUT /faults and `nodewarden bmc faults --set` name them. */
export const BMC_FAULT_KEYS: readonly (keyof BmcFaults)[] = [
  'unreachable',
  'badCredentials',
  'failPower',
  'vanished',
  'powerOnDelayMs',
  'redirectToUuid',
  'mediaUnderSystem',
  'refuseBusyInsert',
];

/** The machine-list faults, each naming machine ids or "*". */
export type MachineFault = Exclude<keyof BmcFaults, 'powerOnDelayMs'>;

const MACHINE_FAULTS: readonly MachineFault[] = [
  'unreachable',
  'badCredentials',
  'failPower',
  'vanished',
  'redirectToUuid',
  'mediaUnderSystem',
  'refuseBusyInsert',
];

export function noBmcFaults(): BmcFaults {
  return {
    unreachable: [],
    badCredentials: [],
    failPower: [],
    vanished: [],
    powerOnDelayMs: 0,
    redirectToUuid: [],
    mediaUnderSystem: [],
    refuseBusyInsert: [],
  };
}

/**
 * `f` with each key of `patch` replaced (a list given replaces the list).
 * Throws RangeError on unknown keys or bad values, before anything is set.
 */
export function mergeBmcFaults(f: BmcFaults, patch: BmcFaultsPatch): BmcFaults {
  checkFaultKeys(patch, BMC_FAULT_KEYS);
  const next: BmcFaults = { ...f };
  for (const key of MACHINE_FAULTS) {
    if (patch[key] !== undefined) next[key] = machineList(patch[key], key);
  }
  if (patch.powerOnDelayMs !== undefined) next.powerOnDelayMs = count(patch.powerOnDelayMs, 'powerOnDelayMs');
  return next;
}

function machineList(v: unknown, what: string): string[] {
  if (!Array.isArray(v) || !v.every((id) => typeof id === 'string' && id.length > 0)) {
    throw new RangeError(`${what} must be a list of machine ids (or "*" for every machine)`);
  }
  return [...new Set(v as string[])].sort();
}

/** Whether fault `key` holds for machine `id`. */
export function hasFault(f: BmcFaults, key: MachineFault, id: string): boolean {
  const list = f[key];
  return list.includes('*') || list.includes(id);
}

/** The faults in force, in a line; "none" when there are none. */
export function describeBmcFaults(f: BmcFaults): string {
  const parts: string[] = [];
  const names: Record<MachineFault, string> = {
    unreachable: 'unreachable',
    badCredentials: 'refusing logins',
    failPower: 'failing power actions',
    vanished: 'vanished',
    redirectToUuid: 'redirecting Systems to their UUID',
    mediaUnderSystem: 'virtual media under the System',
    refuseBusyInsert: 'refusing an insert into a busy drive',
  };
  for (const [key, name] of Object.entries(names) as [MachineFault, string][]) {
    if (f[key].length) parts.push(`${name}: ${f[key].join(',')}`);
  }
  if (f.powerOnDelayMs) parts.push(`power-on takes ${f.powerOnDelayMs}ms`);
  return parts.length ? parts.join('; ') : 'none';
}
