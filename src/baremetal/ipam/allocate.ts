// IPAM decisions on one IPPool's spec, pure: each function takes the pool as
// read and returns the pool as it should be written (or why it cannot be),
// so the store can retry on a conflict by simply deciding again.
// Parity anchor: ViNO's pkg/ipam (baremetal.md §4): idempotent per owner, the
// first free address, MACs counted up from an immutable prefix, per-node DHCP
// blocks of 2^bits addresses. Unlike the anchor: IPv6 over all 128 bits,
// DHCP blocks for IPv6 too, and addresses (MACs included) are released.
import type { IPAllocationType, IPPoolSpecType, RangeAllocationType } from '../../api/virtualhosts.ts';
import {
  type Address,
  type Cidr,
  cidrContains,
  formatAddress,
  formatMac,
  MAC_SPACE,
  parseAddress,
  parseCidr,
  parseMac,
} from './address.ts';

export type PoolSpec = IPPoolSpecType;

export interface AddressRange {
  start: string;
  stop: string;
}

/** Why an allocation cannot be made: typed, for conditions and events to switch on. */
export type IpamCause =
  | 'badSubnet'
  | 'badRange'
  | 'rangeNotRegistered'
  | 'macPrefixChanged'
  | 'exhausted'
  | 'macsExhausted'
  | 'noDhcpRange';

export interface IpamFailure {
  ok: false;
  cause: IpamCause;
  message: string;
}

export type IpamResult<T> = { ok: true; spec: PoolSpec; value: T } | IpamFailure;

const fail = (cause: IpamCause, message: string): IpamFailure => ({ ok: false, cause, message });

interface ParsedRange {
  start: Address;
  stop: Address;
  text: AddressRange;
}

/** A range checked against its subnet: both ends inside it, same family, start not after stop. */
export function checkRange(subnet: Cidr, r: AddressRange): ParsedRange | IpamFailure {
  const start = parseAddress(r.start);
  const stop = parseAddress(r.stop);
  if (!start || !stop) return fail('badRange', `range ${r.start}-${r.stop} is not two IP addresses`);
  if (!cidrContains(subnet, start) || !cidrContains(subnet, stop))
    return fail('badRange', `range ${r.start}-${r.stop} is not inside the subnet`);
  if (start.value > stop.value) return fail('badRange', `range ${r.start}-${r.stop} starts after it stops`);
  return { start, stop, text: r };
}

const isFailure = (x: object): x is IpamFailure => 'ok' in x && x.ok === false;
const sameRange = (a: AddressRange, b: AddressRange) =>
  parseAddress(a.start)?.value === parseAddress(b.start)?.value &&
  parseAddress(a.stop)?.value === parseAddress(b.stop)?.value;

/** A new pool of one subnet and one range (the anchor's NewRange). */
export function newPool(subnet: string, range: AddressRange, macPrefix: string): IpamResult<undefined> {
  const cidr = parseCidr(subnet);
  if (!cidr) return fail('badSubnet', `subnet ${subnet} is not a CIDR`);
  if (parseMac(macPrefix) === undefined) return fail('badRange', `MAC prefix ${macPrefix} is not a MAC`);
  const r = checkRange(cidr, range);
  if (isFailure(r)) return r;
  const spec: PoolSpec = { subnet, macPrefix, ranges: [range], nextMAC: macPrefix, allocations: [] };
  return { ok: true, spec, value: undefined };
}

/**
 * Adds a range to the pool (the anchor's AddSubnetRange): a no-op when it is
 * there already; refused when the MAC prefix differs from the pool's, which
 * addresses were handed out under.
 */
export function addRange(spec: PoolSpec, range: AddressRange, macPrefix: string): IpamResult<undefined> {
  if (parseMac(macPrefix) !== parseMac(spec.macPrefix))
    return fail(
      'macPrefixChanged',
      `MAC prefix ${macPrefix} differs from the pool's ${spec.macPrefix}, which cannot change`,
    );
  const cidr = parseCidr(spec.subnet);
  if (!cidr) return fail('badSubnet', `subnet ${spec.subnet} is not a CIDR`);
  const r = checkRange(cidr, range);
  if (isFailure(r)) return r;
  if (spec.ranges.some((x) => sameRange(x, range))) return { ok: true, spec, value: undefined };
  return { ok: true, spec: { ...spec, ranges: [...spec.ranges, range] }, value: undefined };
}

function used(spec: PoolSpec): Set<bigint> {
  const out = new Set<bigint>();
  for (const a of spec.allocations ?? []) {
    const v = parseAddress(a.ip)?.value;
    if (v !== undefined) out.add(v);
  }
  return out;
}

/**
 * The first address no one holds, in `only` or else in the pool's ranges in
 * order (the anchor's findFreeIP). Looks at most one address past the
 * allocations per range, so a /64 costs no more than a /28.
 */
export function findFreeIP(spec: PoolSpec, only?: AddressRange): Address | undefined {
  const cidr = parseCidr(spec.subnet);
  if (!cidr) return undefined;
  const taken = used(spec);
  for (const range of only ? [only] : spec.ranges) {
    const r = checkRange(cidr, range);
    if (isFailure(r)) continue;
    for (let v = r.start.value; v <= r.stop.value; v++)
      if (!taken.has(v)) return { family: r.start.family, value: v };
  }
  return undefined;
}

function firstFreeMac(spec: PoolSpec, extra: readonly bigint[] = []): bigint | undefined {
  const prefix = parseMac(spec.macPrefix) ?? 0n;
  const taken = new Set<bigint>(extra);
  for (const a of spec.allocations ?? []) {
    const v = a.mac ? parseMac(a.mac) : undefined;
    if (v !== undefined) taken.add(v);
  }
  for (let v = prefix; v < MAC_SPACE; v++) if (!taken.has(v)) return v;
  return undefined;
}

function withNextMac(spec: PoolSpec): PoolSpec {
  const next = firstFreeMac(spec);
  return { ...spec, nextMAC: next === undefined ? undefined : formatMac(next) };
}

/**
 * An address and a MAC for `owner`: the ones it holds already (idempotent), or
 * the first free address and MAC. `range`, when given, must be one of the
 * pool's ranges and the address comes from it.
 */
export function allocateIP(
  spec: PoolSpec,
  owner: string,
  range?: AddressRange,
): IpamResult<IPAllocationType> {
  if (!parseCidr(spec.subnet)) return fail('badSubnet', `subnet ${spec.subnet} is not a CIDR`);
  if (range && !spec.ranges.some((r) => sameRange(r, range)))
    return fail('rangeNotRegistered', `range ${range.start}-${range.stop} is not one of the pool's ranges`);
  const held = (spec.allocations ?? []).find((a) => a.owner === owner);
  if (held) return { ok: true, spec, value: held };
  const ip = findFreeIP(spec, range);
  if (!ip) {
    const where = range
      ? `${range.start}-${range.stop}`
      : spec.ranges.map((r) => `${r.start}-${r.stop}`).join(', ');
    return fail('exhausted', `no free address left in ${where} (subnet ${spec.subnet})`);
  }
  const mac = firstFreeMac(spec);
  if (mac === undefined) return fail('macsExhausted', `no free MAC left after prefix ${spec.macPrefix}`);
  const allocation: IPAllocationType = { owner, ip: formatAddress(ip), mac: formatMac(mac) };
  const next = withNextMac({ ...spec, allocations: [...(spec.allocations ?? []), allocation] });
  return { ok: true, spec: next, value: allocation };
}

/** Every owner's address, or none of them: a VM never gets half its NICs. */
export function allocateAll(spec: PoolSpec, owners: readonly string[]): IpamResult<IPAllocationType[]> {
  let current = spec;
  const out: IPAllocationType[] = [];
  for (const owner of owners) {
    const r = allocateIP(current, owner);
    if (!r.ok) return r;
    current = r.spec;
    out.push(r.value);
  }
  return { ok: true, spec: current, value: out };
}

/**
 * A block of 2^dhcpBlockBits addresses of the pool's DHCP range for `owner`
 * (a hypervisor node's DHCP server): the one it holds, or the first free one.
 * Blocks are counted from the range's start; a partial block at the end is
 * not handed out.
 */
export function allocateDhcpRange(spec: PoolSpec, owner: string): IpamResult<RangeAllocationType> {
  const cidr = parseCidr(spec.subnet);
  if (!cidr) return fail('badSubnet', `subnet ${spec.subnet} is not a CIDR`);
  if (!spec.dhcpRange) return fail('noDhcpRange', 'the pool has no DHCP range');
  const held = (spec.dhcpAllocations ?? []).find((a) => a.owner === owner);
  if (held) return { ok: true, spec, value: held };
  const r = checkRange(cidr, spec.dhcpRange);
  if (isFailure(r)) return r;
  const size = 1n << BigInt(spec.dhcpBlockBits ?? 4);
  const taken = new Set(
    (spec.dhcpAllocations ?? []).map((a) => parseAddress(a.start)?.value).filter((v) => v !== undefined),
  );
  for (let start = r.start.value; start + size - 1n <= r.stop.value; start += size) {
    if (taken.has(start)) continue;
    const block: RangeAllocationType = {
      owner,
      start: formatAddress({ family: cidr.family, value: start }),
      stop: formatAddress({ family: cidr.family, value: start + size - 1n }),
    };
    return {
      ok: true,
      spec: { ...spec, dhcpAllocations: [...(spec.dhcpAllocations ?? []), block] },
      value: block,
    };
  }
  return fail(
    'exhausted',
    `no free block of ${size} addresses left in DHCP range ${spec.dhcpRange.start}-${spec.dhcpRange.stop}`,
  );
}

/** Frees everything the matching owners hold (addresses, MACs, DHCP blocks); what was freed comes back. */
export function release(
  spec: PoolSpec,
  owns: (owner: string) => boolean,
): { spec: PoolSpec; released: string[] } {
  const allocations = spec.allocations ?? [];
  const blocks = spec.dhcpAllocations ?? [];
  const released = [...allocations.filter((a) => owns(a.owner)), ...blocks.filter((b) => owns(b.owner))].map(
    (a) => a.owner,
  );
  if (released.length === 0) return { spec, released };
  const next: PoolSpec = {
    ...spec,
    allocations: allocations.filter((a) => !owns(a.owner)),
    ...(spec.dhcpAllocations ? { dhcpAllocations: blocks.filter((b) => !owns(b.owner)) } : {}),
  };
  return { spec: withNextMac(next), released };
}
