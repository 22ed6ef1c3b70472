// IPv4, IPv6 and MAC addresses as bigints, so ranges of either family are
// counted the same way and IPv6 uses all 128 bits (the anchor's IPAM only
// counted the first 64). Pure: parsing, formatting and CIDR arithmetic.

export type Family = 4 | 6;

export interface Address {
  family: Family;
  value: bigint;
}

export interface Cidr {
  family: Family;
  /** The network address (host bits cleared). */
  base: bigint;
  prefix: number;
}

const BITS: Record<Family, number> = { 4: 32, 6: 128 };

function parseV4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let v = 0n;
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p) || Number(p) > 255) return undefined;
    v = (v << 8n) | BigInt(p);
  }
  return v;
}

function parseGroups(text: string): number[] | undefined {
  if (text === '') return [];
  const groups = text.split(':');
  const out: number[] = [];
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    out.push(Number.parseInt(g, 16));
  }
  return out;
}

function parseV6(text: string): bigint | undefined {
  let body = text;
  // An embedded IPv4 tail (::ffff:10.0.0.1) is the last two groups written another way.
  const lastColon = body.lastIndexOf(':');
  if (body.includes('.')) {
    const v4 = parseV4(body.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    body = `${body.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0] ?? '');
  const rest = halves.length === 2 ? parseGroups(halves[1] ?? '') : [];
  if (!head || !rest) return undefined;
  const given = head.length + rest.length;
  if (halves.length === 1 && given !== 8) return undefined;
  if (halves.length === 2 && given > 7) return undefined;
  const groups = [...head, ...Array<number>(8 - given).fill(0), ...rest];
  return groups.reduce((v, g) => (v << 16n) | BigInt(g), 0n);
}

/** Parses an address of either family, or undefined when it is not one. */
export function parseAddress(text: string): Address | undefined {
  const v4 = parseV4(text);
  if (v4 !== undefined) return { family: 4, value: v4 };
  if (!text.includes(':')) return undefined;
  const v6 = parseV6(text);
  return v6 === undefined ? undefined : { family: 6, value: v6 };
}

/** The canonical text: dotted quad, or RFC 5952 (lower case, longest zero run as ::). */
export function formatAddress(a: Address): string {
  if (a.family === 4) return [24n, 16n, 8n, 0n].map((s) => String((a.value >> s) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => Number((a.value >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len && j - i > 1) best = { at: i, len: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`;
}

/** Parses "a.b.c.d/n" or "x::/n"; the host bits are cleared. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const a = parseAddress(text.slice(0, slash));
  const p = text.slice(slash + 1);
  if (!a || !/^(0|[1-9][0-9]{0,2})$/.test(p)) return undefined;
  const prefix = Number(p);
  const bits = BITS[a.family];
  if (prefix > bits) return undefined;
  const hostBits = BigInt(bits - prefix);
  return { family: a.family, base: (a.value >> hostBits) << hostBits, prefix };
}

export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt(BITS[c.family] - c.prefix);
}

export function cidrContains(c: Cidr, a: Address): boolean {
  return a.family === c.family && a.value >= c.base && a.value < c.base + cidrSize(c);
}

/** The dotted netmask of an IPv4 prefix ("255.255.255.0"); IPv6 uses the prefix length itself. */
export function netmaskOf(c: Cidr): string {
  if (c.family === 6) return String(c.prefix);
  const mask = ((1n << 32n) - 1n) ^ ((1n << BigInt(32 - c.prefix)) - 1n);
  return formatAddress({ family: 4, value: mask });
}

// ---------------------------------------------------------------------- MACs

const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;
export const MAC_SPACE = 1n << 48n;

export function parseMac(text: string): bigint | undefined {
  const t = text.toLowerCase();
  return MAC.test(t) ? BigInt(`0x${t.replaceAll(':', '')}`) : undefined;
}

export function formatMac(value: bigint): string {
  const hex = value.toString(16).padStart(12, '0');
  return hex.match(/../g)!.join(':');
}
