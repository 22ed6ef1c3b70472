// The cgroup subtree of a cluster's real nodes, in every hierarchy the host
// has: made before a node starts (kubelet refuses a cgroupRoot missing from any
// hierarchy), emptied on `down` (freeze, kill every pid, thaw), and removed on
// `delete`. Every process of a node joins its cgroup before it starts, so no
// child escapes the subtree and the subtree is all teardown needs to know.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup';

/** The v1 hierarchies a node's cgroups are made in, plus the named systemd one and v2's `unified`. */
export function hierarchies(root = ROOT): string[] {
  if (existsSync(join(root, 'cgroup.controllers'))) return [root]; // a pure v2 host
  const v1 = [
    'cpu',
    'cpuacct',
    'cpuset',
    'memory',
    'devices',
    'freezer',
    'blkio',
    'pids',
    'systemd',
    'unified',
  ];
  return v1.map((h) => join(root, h)).filter((dir) => existsSync(dir) && statSync(dir).isDirectory());
}

/** Makes `path` (e.g. nodewarden/c/node-000/node) in every hierarchy; cpusets are filled top-down. */
export function makeCgroup(path: string, root = ROOT): void {
  for (const h of hierarchies(root)) {
    let dir = h;
    for (const part of path.split('/')) {
      dir = join(dir, part);
      mkdirSync(dir, { recursive: true });
      // A fresh v1 cpuset is empty and refuses tasks: copy the parent's.
      if (h.endsWith('/cpuset')) for (const f of ['cpuset.cpus', 'cpuset.mems']) inherit(dir, f);
    }
  }
}

function inherit(dir: string, file: string): void {
  if (readFileSync(join(dir, file), 'utf8').trim() !== '') return;
  writeFileSync(join(dir, file), readFileSync(join(dir, '..', file), 'utf8'));
}

/** The shell lines that move the running shell into `path` in every hierarchy (then it execs). */
export function joinCgroupLines(path: string, root = ROOT): string[] {
  return hierarchies(root).map((h) => `echo $$ > ${join(h, path, 'cgroup.procs')}`);
}

/** Every pid in `path` and below, in any hierarchy. */
export function pidsIn(path: string, root = ROOT): number[] {
  const pids = new Set<number>();
  for (const h of hierarchies(root)) {
    const walk = (dir: string): void => {
      if (!existsSync(dir)) return;
      for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n'))
        if (line.trim()) pids.add(Number(line));
      for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) walk(join(dir, e.name));
    };
    walk(join(h, path));
  }
  return [...pids];
}

/**
 * Kills every process under `path`: the freezer holds them still while each gets SIGKILL (so none
 * forks meanwhile), then thaws to let the kill land; again until none is left. Returns how many rounds.
 */
export async function killAll(path: string, timeoutMs = 20_000, root = ROOT): Promise<number> {
  const freezer = join(root, 'freezer', path, 'freezer.state');
  const canFreeze = existsSync(freezer);
  const deadline = Date.now() + timeoutMs;
  for (let round = 1; ; round++) {
    const pids = pidsIn(path, root);
    if (pids.length === 0) return round - 1;
    if (Date.now() > deadline)
      throw new Error(
        `processes still running in cgroup ${path} after ${timeoutMs / 1000}s: ${pids.join(' ')}`,
      );
    if (canFreeze) writeFileSync(freezer, 'FROZEN');
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    if (canFreeze) writeFileSync(freezer, 'THAWED');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Removes `path` and everything below it in every hierarchy, deepest first; it must hold no process. */
export function removeCgroup(path: string, root = ROOT): void {
  for (const h of hierarchies(root)) {
    const remove = (dir: string): void => {
      if (!existsSync(dir)) return;
      for (const e of readdirSync(dir, { withFileTypes: true }))
        if (e.isDirectory()) remove(join(dir, e.name));
      rmdirSync(dir);
    };
    remove(join(h, path));
  }
}

/** Removes `path`'s parents from the bottom up while they are empty (e.g. `nodewarden` after the last cluster). */
export function removeEmptyParents(path: string, root = ROOT): void {
  const parts = path.split('/');
  for (let n = parts.length - 1; n > 0; n--) {
    const rel = parts.slice(0, n).join('/');
    for (const h of hierarchies(root)) {
      const dir = join(h, rel);
      if (existsSync(dir) && !readdirSync(dir, { withFileTypes: true }).some((e) => e.isDirectory())) {
        try {
          rmdirSync(dir);
        } catch {
          // another cluster's processes joined meanwhile: leave it
        }
      }
    }
  }
}
