// A tar writer whose output depends on the entries alone: the order they are
// given in, fixed owners and times, no user or group names. Our own rather
// than node-tar: node-tar walks folders in the order the disk returns them and
// keeps each file's owner, mode and times from the machine, and an image
// layer that must have the same digest on every machine needs every byte fixed.
// POSIX ustar headers, with a PAX record for a name or link too long for them.

export type TarEntry =
  | { kind: 'dir'; path: string; mode: number }
  | { kind: 'file'; path: string; mode: number; data: Uint8Array }
  | { kind: 'symlink'; path: string; target: string };

const BLOCK = 512;
const encoder = new TextEncoder();

/** The whole archive: each entry's header and data, then two empty blocks. */
export function writeTar(entries: readonly TarEntry[], mtimeSeconds: number): Buffer {
  const parts: Uint8Array[] = [];
  for (const entry of entries) parts.push(...entryBlocks(entry, mtimeSeconds));
  parts.push(new Uint8Array(BLOCK * 2));
  return Buffer.concat(parts);
}

function entryBlocks(entry: TarEntry, mtime: number): Uint8Array[] {
  const name = entry.kind === 'dir' && !entry.path.endsWith('/') ? `${entry.path}/` : entry.path;
  const link = entry.kind === 'symlink' ? entry.target : '';
  const data = entry.kind === 'file' ? entry.data : new Uint8Array(0);
  const blocks: Uint8Array[] = [];
  const pax = paxRecords(name, link);
  if (pax) {
    const body = encoder.encode(pax);
    blocks.push(header({ name: 'PaxHeader', type: 'x', mode: 0o644, size: body.length, mtime, link: '' }));
    blocks.push(...padded(body));
  }
  const type = entry.kind === 'dir' ? '5' : entry.kind === 'symlink' ? '2' : '0';
  const mode = entry.kind === 'symlink' ? 0o777 : entry.mode;
  blocks.push(header({ name: fit(name, 100), type, mode, size: data.length, mtime, link: fit(link, 100) }));
  blocks.push(...padded(data));
  return blocks;
}

/** PAX records for what a ustar header cannot hold (over 100 bytes), or undefined. */
function paxRecords(name: string, link: string): string | undefined {
  const records = [
    ...(encoder.encode(name).length > 100 ? [record('path', name)] : []),
    ...(encoder.encode(link).length > 100 ? [record('linkpath', link)] : []),
  ];
  return records.length > 0 ? records.join('') : undefined;
}

/** "<length> key=value\n", where the length counts itself. */
function record(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  let length = encoder.encode(rest).length;
  while (String(length).length + encoder.encode(rest).length !== length) {
    length = String(length).length + encoder.encode(rest).length;
  }
  return `${length}${rest}`;
}

/** The name as a ustar field holds it; the PAX record carries the whole. */
function fit(text: string, max: number): string {
  const bytes = encoder.encode(text);
  return bytes.length <= max
    ? text
    : new TextDecoder().decode(bytes.subarray(0, max)).replace(/\uFFFD+$/, '');
}

interface HeaderFields {
  name: string;
  type: string;
  mode: number;
  size: number;
  mtime: number;
  link: string;
}

function header(h: HeaderFields): Uint8Array {
  const block = new Uint8Array(BLOCK);
  const put = (offset: number, text: string) => block.set(encoder.encode(text), offset);
  put(0, h.name);
  put(100, octal(h.mode, 8));
  put(108, octal(0, 8)); // uid: root
  put(116, octal(0, 8)); // gid: root
  put(124, octal(h.size, 12));
  put(136, octal(h.mtime, 12));
  put(148, '        '); // the checksum counts its own field as spaces
  put(156, h.type);
  put(157, h.link);
  put(257, 'ustar\u000000');
  let sum = 0;
  for (const byte of block) sum += byte;
  put(148, `${sum.toString(8).padStart(6, '0')}\u0000 `);
  return block;
}

/** A zero-padded octal number ending in NUL, `width` bytes in all. */
function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\u0000`;
}

function padded(data: Uint8Array): Uint8Array[] {
  if (data.length === 0) return [];
  const rest = data.length % BLOCK;
  return rest === 0 ? [data] : [data, new Uint8Array(BLOCK - rest)];
}
