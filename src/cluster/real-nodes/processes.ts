// Starting a real node's long-lived processes so that they outlive the CLI
// that started them (as kwokctl's binary runtime does): each one detached,
// its output in a log file, its pid in a file, and in its cgroup before it
// runs (a shell joins the cgroup, then execs the program, keeping its pid).
import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { joinCgroupLines } from './cgroups.ts';

export interface Launch {
  /** Short name: the log is <logs>/<name>.log, the pid <pids>/<name>.pid. */
  name: string;
  command: string[];
  cgroup: string;
  logs: string;
  pids: string;
  env?: Record<string, string>;
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** Starts the program detached; returns its pid (the shell's, which the program replaces). */
export function launch(l: Launch): number {
  mkdirSync(l.logs, { recursive: true });
  mkdirSync(l.pids, { recursive: true });
  const log = openSync(join(l.logs, `${l.name}.log`), 'a');
  try {
    const script = [...joinCgroupLines(l.cgroup), `exec ${l.command.map(quote).join(' ')}`].join('\n');
    const child = spawn('/bin/sh', ['-c', script], {
      detached: true,
      stdio: ['ignore', log, log],
      env: { ...process.env, ...l.env },
    });
    if (child.pid === undefined) throw new Error(`could not start ${l.name}`);
    child.unref();
    writeFileSync(join(l.pids, `${l.name}.pid`), `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(log);
  }
}

/** The pid a launch recorded, when that process still runs the program (a pid may be reused). */
export function runningPid(pids: string, name: string, program: string): number | undefined {
  const file = join(pids, `${name}.pid`);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8'));
  return exeOf(pid) === program ? pid : undefined;
}

/** The program a pid runs now, or undefined when there is no such process. */
export function exeOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return undefined;
  }
}

/** Polls `ready` until it is true; throws with the log's last lines when `timeoutMs` passes. */
export async function waitFor(
  what: string,
  ready: () => boolean | Promise<boolean>,
  opts: { timeoutMs: number; log?: string },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  while (Date.now() < deadline) {
    if (await ready()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  const tail =
    opts.log && existsSync(opts.log)
      ? `\n${readFileSync(opts.log, 'utf8').trim().split('\n').slice(-10).join('\n')}`
      : '';
  throw new Error(
    `${what} not ready within ${opts.timeoutMs / 1000}s${opts.log ? ` (log: ${opts.log})` : ''}${tail}`,
  );
}
