// What a machine definition must hold before the fleet takes it (the console's
// POST /machines): checked whole, so a bad spec changes nothing, and compared
// field by field, so defining a machine again is a no-op or a conflict.
import type { MachineNic, MachineSpec } from './protocol.ts';

const ID = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;
const NIC_NAME = /^[A-Za-z0-9][-A-Za-z0-9_.]{0,14}$/;

/** A spec with only the protocol's fields, MACs lower-cased; RangeError saying what to fix otherwise. */
export function checkMachineSpec(input: unknown): MachineSpec {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new RangeError('a machine spec must be a JSON object');
  }
  const s = input as Record<string, unknown>;
  const id = s.id;
  if (typeof id !== 'string' || id.length > 63 || !ID.test(id)) {
    throw new RangeError(
      `id ${JSON.stringify(id)} must be a DNS label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63`,
    );
  }
  const at = (what: string) => `machine "${id}": ${what}`;
  if (s.kind !== 'physical' && s.kind !== 'vm') throw new RangeError(at('kind must be "physical" or "vm"'));
  const spec: MachineSpec = {
    id,
    kind: s.kind,
    cpus: positive(s.cpus, at('cpus')),
    memoryMiB: positive(s.memoryMiB, at('memoryMiB')),
    diskGB: positive(s.diskGB, at('diskGB')),
    nics: nics(s.nics, at),
    credentials: credentials(s.credentials, at),
  };
  if (s.rack !== undefined) spec.rack = text(s.rack, at('rack'));
  if (s.hypervisor !== undefined) spec.hypervisor = text(s.hypervisor, at('hypervisor'));
  return spec;
}

function positive(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    throw new RangeError(`${what} must be a whole number >= 1`);
  return v;
}

function text(v: unknown, what: string): string {
  if (typeof v !== 'string' || v.length === 0) throw new RangeError(`${what} must be a non-empty string`);
  return v;
}

function nics(v: unknown, at: (w: string) => string): MachineNic[] {
  if (!Array.isArray(v) || v.length === 0) throw new RangeError(at('nics must list at least one NIC'));
  const seen = new Set<string>();
  return v.map((n: unknown, i) => {
    const nic = (typeof n === 'object' && n !== null ? n : {}) as Record<string, unknown>;
    const name = nic.name;
    if (typeof name !== 'string' || !NIC_NAME.test(name))
      throw new RangeError(at(`nics[${i}].name must be an interface name like eno1`));
    const mac = typeof nic.mac === 'string' ? nic.mac.toLowerCase() : '';
    if (!MAC.test(mac))
      throw new RangeError(
        at(`nics[${i}].mac must be six colon-separated hex bytes, not ${JSON.stringify(nic.mac)}`),
      );
    if (seen.has(name) || seen.has(mac)) throw new RangeError(at(`nics[${i}] repeats a name or MAC`));
    seen.add(name).add(mac);
    const out: MachineNic = { name, mac };
    if (nic.ip !== undefined) out.ip = text(nic.ip, at(`nics[${i}].ip`));
    return out;
  });
}

function credentials(v: unknown, at: (w: string) => string): MachineSpec['credentials'] {
  const c = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  return {
    username: text(c.username, at('credentials.username')),
    password: text(c.password, at('credentials.password')),
  };
}

/** Whether two checked specs define the same machine. */
export function sameMachineSpec(a: MachineSpec, b: MachineSpec): boolean {
  return canonical(a) === canonical(b);
}

function canonical(s: MachineSpec): string {
  const { id, kind, rack, hypervisor, cpus, memoryMiB, diskGB, nics, credentials } = s;
  return JSON.stringify([
    id,
    kind,
    rack ?? null,
    hypervisor ?? null,
    cpus,
    memoryMiB,
    diskGB,
    nics.map((n) => [n.name, n.mac, n.ip ?? null]),
    credentials.username,
    credentials.password,
  ]);
}
