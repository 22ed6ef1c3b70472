// A tiny initramfs: Debian's static busybox (busybox-static) and an init that
// runs a script. Written as a gzip'd "newc" cpio archive here (the format the
// kernel unpacks), so nothing but busybox itself has to be installed.
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

export const BUSYBOX = '/bin/busybox';

interface Entry {
  name: string;
  mode: number;
  data?: Buffer;
}

const hex8 = (n: number) => n.toString(16).padStart(8, '0');
const pad4 = (n: number) => Buffer.alloc((4 - (n % 4)) % 4);

/** One newc record: header, NUL-terminated name and data, each padded to 4 bytes. */
function record(e: Entry, ino: number): Buffer {
  const name = Buffer.from(`${e.name}\0`);
  const data = e.data ?? Buffer.alloc(0);
  const fields = [ino, e.mode, 0, 0, 1, 0, data.length, 0, 0, 0, 0, name.length, 0];
  const header = Buffer.from(`070701${fields.map(hex8).join('')}`);
  return Buffer.concat([header, name, pad4(header.length + name.length), data, pad4(data.length)]);
}

/** The archive's bytes (uncompressed) for these entries and the trailer. */
export function newcArchive(entries: Entry[]): Buffer {
  const all = [...entries, { name: 'TRAILER!!!', mode: 0 }];
  return Buffer.concat(all.map((e, i) => record(e, i + 1)));
}

/** Writes an initramfs whose /init installs busybox's applets and runs `script` (sh). */
export async function buildInitramfs(path: string, script: string): Promise<void> {
  const init = `#!/bin/busybox sh\n/bin/busybox --install -s /bin\nexport PATH=/bin\n${script}`;
  const DIR = 0o040755;
  const EXEC = 0o100755;
  const archive = newcArchive([
    { name: 'bin', mode: DIR },
    { name: 'dev', mode: DIR },
    { name: 'proc', mode: DIR },
    { name: 'sys', mode: DIR },
    { name: 'bin/busybox', mode: EXEC, data: readFileSync(BUSYBOX) },
    { name: 'init', mode: EXEC, data: Buffer.from(init) },
  ]);
  writeFileSync(path, gzipSync(archive, { level: 1 }));
}
