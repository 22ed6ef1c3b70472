// The process of an add-on that runs on its own (a server the CLI leaves
// behind when `cluster up` returns): started detached with its output in a
// log file, found again from a pid file by a later CLI invocation, stopped
// with SIGTERM, then SIGKILL if it does not go.
import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface AddonProcess {
  pidFile: string;
  logFile: string;
  /**
   * A string the process's command line contains (e.g. its folder), so a pid
   * reused by an unrelated process after a reboot is never taken for ours.
   */
  marker: string;
}

/** The pid of the add-on's process if it runs, else undefined. */
export function runningPid(p: AddonProcess): number | undefined {
  if (!existsSync(p.pidFile)) return undefined;
  const pid = Number(readFileSync(p.pidFile, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return isOurs(pid, p.marker) ? pid : undefined;
}

function isOurs(pid: number, marker: string): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const proc = `/proc/${pid}`;
  if (!existsSync(proc)) return true; // no procfs (macOS): the signal check is all we have
  try {
    // A zombie (exited, not yet reaped by its parent) answers signals but is gone.
    const stat = readFileSync(`${proc}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
    return readFileSync(`${proc}/cmdline`, 'utf8')
      .split('\0')
      .some((a) => a.includes(marker));
  } catch {
    return false;
  }
}

/** Starts the process detached from ours, output appended to the log file; returns its pid. */
export function startDetached(
  p: AddonProcess,
  command: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): number {
  const log = openSync(p.logFile, 'a');
  try {
    const child = spawn(command, args, {
      detached: true,
      stdio: ['ignore', log, log],
      cwd: opts.cwd,
      env: opts.env ?? process.env,
    });
    if (child.pid === undefined) throw new Error(`cannot start ${command}: see ${p.logFile}`);
    child.on('error', () => {}); // reported through the pid check and the log instead
    child.unref();
    writeFileSync(p.pidFile, `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(log);
  }
}

/** Stops the process: SIGTERM, up to `graceMs` to exit, then SIGKILL. Returns whether it was running. */
export async function stopProcess(p: AddonProcess, graceMs = 5000): Promise<boolean> {
  const pid = runningPid(p);
  if (pid === undefined) {
    rmSync(p.pidFile, { force: true });
    return false;
  }
  signal(pid, 'SIGTERM');
  if (!(await exited(p, graceMs))) {
    signal(pid, 'SIGKILL');
    if (!(await exited(p, 2000))) throw new Error(`process ${pid} did not stop, even on SIGKILL`);
  }
  rmSync(p.pidFile, { force: true });
  return true;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

async function exited(p: AddonProcess, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (runningPid(p) !== undefined) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

// Node options worth passing on (how TypeScript is loaded, source maps); not the
// test runner's, watch mode's or the inspector's, which would change what the child is.
const INHERITED_NODE_OPTION =
  /^--(experimental-strip-types|no-experimental-strip-types|experimental-transform-types|enable-source-maps|disable-warning=.+|import=.+|conditions=.+|max-old-space-size=\d+)$/;

/**
 * How to run `script`, a module next to the caller named without its extension,
 * in a new Node process the way this one runs: from src/ (.ts, types stripped)
 * or from dist/ (.js), as bin/nodewarden decides — and from dist/ also when this
 * process runs from src/ but an up-to-date build is there (see builtTwin).
 */
export function nodeScript(callerUrl: string, script: string): { command: string; args: string[] } {
  let fromSource = callerUrl.endsWith('.ts');
  let path = fileURLToPath(new URL(`${script}${fromSource ? '.ts' : '.js'}`, callerUrl));
  const built = fromSource ? builtTwin(path) : undefined;
  if (built) [path, fromSource] = [built, false];
  const flags = process.execArgv.filter((a) => INHERITED_NODE_OPTION.test(a));
  const wanted = fromSource ? '--disable-warning=ExperimentalWarning' : '--enable-source-maps';
  if (!flags.includes(wanted)) flags.push(wanted);
  // A long-running daemon with little garbage: small young-generation semi-spaces
  // (default 16 MiB, x3) keep ~10 MiB of RSS off each simulator.
  flags.push('--max-semi-space-size=1');
  return { command: process.execPath, args: [...flags, path] };
}

// The repository root, from src/cluster/infra/kit/ (or dist/cluster/infra/kit/).
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * The compiled twin in dist/ of a module under src/, when it is up to date (no
 * file under src/ is newer) and NODEWARDEN_FROM_SOURCE is not set. A daemon run
 * from src/ pays ~35 MiB RSS for Node's type stripping: the simulators then stay
 * under 80 MiB in tests and benches too, never on stale code.
 */
export function builtTwin(source: string, root = ROOT): string | undefined {
  const src = join(root, 'src');
  if (process.env.NODEWARDEN_FROM_SOURCE || !source.startsWith(src + sep)) return undefined;
  const built = join(root, 'dist', relative(src, source)).replace(/\.ts$/, '.js');
  if (!existsSync(built)) return undefined;
  const builtAt = statSync(built).mtimeMs;
  for (const e of readdirSync(src, { recursive: true, withFileTypes: true }))
    if (e.isFile() && statSync(join(e.parentPath, e.name)).mtimeMs > builtAt) return undefined;
  return built;
}
