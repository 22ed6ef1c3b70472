// Files on disk as tar entries of a layer: walked in name order, modes reduced
// to 0755 or 0644, 1777 for a sticky folder (the umask and the machine must not
// show in a digest), every parent folder of a destination listed once, special
// files left out.
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, posix } from 'node:path';
import type { TarEntry } from './tar.ts';

/** A file or folder on disk and where it goes in the image (a path without a leading slash). */
export interface LayerSource {
  from: string;
  to: string;
  /** Leaves out a path (relative to the image root) and all below it. */
  skip?: (imagePath: string) => boolean;
}

/** The entries of one layer: every source, each folder once, in name order. */
export function layerEntries(sources: readonly LayerSource[]): TarEntry[] {
  const byPath = new Map<string, TarEntry>();
  for (const source of sources) {
    for (const dir of parentsOf(source.to)) byPath.set(dir, { kind: 'dir', path: dir, mode: 0o755 });
    walk(source.from, source.to, source.skip ?? (() => false), byPath);
  }
  return [...byPath.values()].sort((a, b) => compare(a.path, b.path));
}

function walk(from: string, to: string, skip: (p: string) => boolean, out: Map<string, TarEntry>): void {
  if (skip(to)) return;
  const st = lstatSync(from);
  if (st.isSymbolicLink()) {
    out.set(to, { kind: 'symlink', path: to, target: readlinkSync(from) });
  } else if (st.isDirectory()) {
    // A sticky folder (/tmp) keeps its 1777; every other folder is 0755.
    if (to !== '') out.set(to, { kind: 'dir', path: to, mode: st.mode & 0o1000 ? 0o1777 : 0o755 });
    for (const name of readdirSync(from).sort(compare))
      walk(join(from, name), posix.join(to, name), skip, out);
  } else if (st.isFile()) {
    out.set(to, { kind: 'file', path: to, mode: st.mode & 0o111 ? 0o755 : 0o644, data: readFileSync(from) });
  }
  // Devices, sockets and pipes: a container runtime makes its own /dev.
}

/** "a/b/c" → ["a", "a/b"]. */
function parentsOf(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** Byte order, so the result does not depend on the machine's locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
