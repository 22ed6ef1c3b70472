// A simulator's own process, as `cluster up` leaves it running behind the CLI:
// the add-on writes its config into the simulator's folder and starts the
// entry script detached (see process.ts); the process publishes its URL in an
// endpoint file once it answers, which the add-on waits for; a later CLI
// invocation finds it again by that folder and stops it.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AddonProcess, runningPid, startDetached, stopProcess } from './process.ts';

const CONFIG = 'config.json';
const ENDPOINT = 'endpoint';

/** The files in a simulator's folder. */
export interface DaemonFiles {
  /** What the add-on tells the process (JSON). */
  config: string;
  /** The simulator's snapshot (see snapshot.ts). */
  state: string;
  /** The base URL, written by the process once it answers. */
  endpoint: string;
  pid: string;
  log: string;
}

/** `name` names the pid and log files, e.g. cloud.pid and cloud.log. */
export function daemonFiles(dir: string, name: string): DaemonFiles {
  return {
    config: join(dir, CONFIG),
    state: join(dir, 'state.json'),
    endpoint: join(dir, ENDPOINT),
    pid: join(dir, `${name}.pid`),
    log: join(dir, `${name}.log`),
  };
}

export interface Daemon {
  /** The simulator's folder, unique to its cluster; it is on the process's command line. */
  dir: string;
  /** Short name: the pid and log files' name. */
  name: string;
  /** For messages, e.g. "the simulated cloud". */
  title: string;
}

function processOf(d: Daemon): AddonProcess {
  const files = daemonFiles(d.dir, d.name);
  return { pidFile: files.pid, logFile: files.log, marker: d.dir };
}

/** The endpoint of the simulator if its process runs. */
export function runningEndpoint(d: Daemon): string | undefined {
  const { endpoint } = daemonFiles(d.dir, d.name);
  if (runningPid(processOf(d)) === undefined || !existsSync(endpoint)) return undefined;
  return readFileSync(endpoint, 'utf8').trim() || undefined;
}

/** The port the last run listened on, so a restart can keep its endpoint when the port is free. */
export function previousPort(d: Daemon): number | undefined {
  const { endpoint } = daemonFiles(d.dir, d.name);
  if (!existsSync(endpoint)) return undefined;
  const port = Number(new URL(readFileSync(endpoint, 'utf8').trim()).port);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

export interface StartOptions {
  /** How to run the entry script (see nodeScript); `--dir DIR` is appended. */
  entry: { command: string; args: string[] };
  /** Written to config.json for the process to read. */
  config: unknown;
  /** How long the process may take to restore its state and answer. Default 30 s. */
  timeoutMs?: number;
}

/** Starts the simulator's process and resolves to its endpoint once it published one. */
export async function startDaemon(d: Daemon, opts: StartOptions): Promise<string> {
  const files = daemonFiles(d.dir, d.name);
  rmSync(files.endpoint, { force: true });
  writeFileSync(files.config, `${JSON.stringify(opts.config, null, 2)}\n`);
  // A test runner's marker in the environment would make the child report to it.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const { command, args } = opts.entry;
  startDetached(processOf(d), command, [...args, '--dir', d.dir], { cwd: d.dir, env });
  return waitForEndpoint(d, opts.timeoutMs ?? 30_000);
}

async function waitForEndpoint(d: Daemon, timeoutMs: number): Promise<string> {
  const files = daemonFiles(d.dir, d.name);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(files.endpoint)) return readFileSync(files.endpoint, 'utf8').trim();
    if (runningPid(processOf(d)) === undefined) {
      throw new Error(`${d.title} exited while starting:\n${logTail(files.log)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await stopProcess(processOf(d)).catch(() => {});
  throw new Error(`${d.title} did not start within ${timeoutMs / 1000}s; see ${files.log}`);
}

/**
 * Stops the simulator's process (SIGTERM, then SIGKILL after `graceMs`, default 5 s);
 * a no-op when it does not run. A simulator that stops processes of its own on
 * SIGTERM (the hypervisor's workload control planes) asks for longer.
 */
export async function stopDaemon(d: Daemon, graceMs?: number): Promise<void> {
  await stopProcess(processOf(d), graceMs);
}

function logTail(path: string): string {
  if (!existsSync(path)) return '(no log)';
  return readFileSync(path, 'utf8').trim().split('\n').slice(-8).join('\n');
}

// ---- inside the simulator's process ----

/** The config the add-on wrote. */
export function readDaemonConfig<T>(dir: string): T {
  return JSON.parse(readFileSync(join(dir, CONFIG), 'utf8')) as T;
}

/** Publishes the endpoint whole (write, then rename), once the API answers: the add-on waits for it. */
export function publishEndpointFile(dir: string, url: string): void {
  const path = join(dir, ENDPOINT);
  writeFileSync(`${path}.tmp`, `${url}\n`);
  renameSync(`${path}.tmp`, path);
}

/**
 * The entry script's body: reads `--dir DIR` from the command line and runs
 * `serve`, which resolves once the simulator serves; the process then lives on
 * its server until a signal. A failure is logged and exits 1.
 */
export function runDaemon(title: string, serve: (dir: string) => Promise<void>): void {
  const args = process.argv.slice(2);
  const at = args.indexOf('--dir');
  const dir = at >= 0 ? args[at + 1] : undefined;
  const run = dir ? serve(dir) : Promise.reject(new Error('needs --dir (the simulator folder)'));
  run.catch((err: unknown) => {
    console.error(`${title}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  });
}
