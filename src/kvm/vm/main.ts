// The VM image's entrypoint (src/api/vm-image.ts is its contract):
//   run        the container's process: the VM's disks, the pod's network handed
//              to the guest, QEMU with the Ignition config, /healthz; stops with QEMU
//   shutdown   the preStop hook (/qemu-shutdown): powers the guest off over QMP,
//              waits for QEMU, and stops it when the grace period runs out
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { VmEnv } from '../../api/vm-image.ts';
import { detectAccel } from '../../qemu/accel.ts';
import { DEFAULT_PATHS, type VmConfig, type VmPaths, vmConfigFromEnv } from './config.ts';
import { serveDhcp } from './dhcp-server.ts';
import { FLATCAR_IMAGE_SIGNING_KEY } from './flatcar-key.ts';
import { GuestState, serveHealth, watchGuest } from './guest.ts';
import { ensureFlatcarRelease } from './os-cache.ts';
import { bridgePodToVm, DHCP_SERVER_ID, readPodNetwork, TAP } from './pod-network.ts';
import { diskCommands, qemuArgs, vmFiles } from './qemu-args.ts';
import { qmpCommand } from './qmp.ts';

const log = (line: string) => console.error(`[vm] ${line}`);
/** What preStop leaves of the grace period for the kubelet to stop the container. */
const SHUTDOWN_MARGIN_S = 10;

/** The decoded Ignition config, written where QEMU's fw_cfg reads it. */
function writeIgnition(paths: VmPaths): void {
  const json = gunzipSync(Buffer.from(readFileSync(paths.userData, 'utf8').trim(), 'base64'));
  JSON.parse(json.toString()); // refuse anything but JSON before the guest sees it
  writeFileSync(vmFiles(paths).ignition, json);
}

/** OS_IMAGE=flatcar: the release of OS_VERSION in the host's cache, downloaded and verified if not yet there. */
async function prepareFlatcar(config: VmConfig, paths: VmPaths): Promise<void> {
  const { flatcar, osVersion } = config;
  if (!flatcar || !osVersion) return;
  const key = flatcar.keyring ? readFileSync(flatcar.keyring, 'utf8') : FLATCAR_IMAGE_SIGNING_KEY;
  const release = await ensureFlatcarRelease({
    cacheDir: paths.osCache,
    mirror: flatcar.mirror,
    version: osVersion,
    key,
    log,
  });
  log(
    `flatcar ${osVersion}: ${release.source === 'cache' ? 'from the host cache' : 'downloaded'}, signatures good`,
  );
}

async function prepare(config: VmConfig, paths: VmPaths): Promise<void> {
  await prepareFlatcar(config, paths);
  for (const dir of [paths.state, paths.run]) mkdirSync(dir, { recursive: true });
  writeIgnition(paths);
  for (const cmd of diskCommands(config, paths))
    execFileSync(cmd[0] ?? '', cmd.slice(1), { stdio: 'inherit' });
}

export async function runVm(env = process.env, paths = DEFAULT_PATHS): Promise<number> {
  const config = vmConfigFromEnv(env);
  await prepare(config, paths);
  // The probe boots the Debian kernel the image carries, whichever OS the VM runs: the one it is proven with.
  const accel = await detectAccel(vmFiles(paths).kernel);
  log(`accelerator: ${accel.type} (${accel.reason})`);
  const lease = readPodNetwork(config.hostname);
  bridgePodToVm(lease);
  const dhcp = serveDhcp(lease, DHCP_SERVER_ID, log);
  const state = new GuestState();
  const health = serveHealth(config.healthPort, state);
  const args = qemuArgs({ config, paths, accel: accel.type, mac: lease.mac, tap: TAP });
  log(`qemu-system-x86_64 ${args.join(' ')}`);
  const started = Date.now();
  const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'inherit', 'inherit'] });
  watchGuest(vmFiles(paths).guest, state, (l) =>
    log(state.ready ? `${l} after ${((Date.now() - started) / 1000).toFixed(1)} s` : l),
  );
  // SIGTERM without a preStop (or after it): the same clean power-off.
  process.once('SIGTERM', () => void shutdownVm(env, paths));
  const code = await new Promise<number>((resolve) => {
    qemu.on('error', (e) => {
      log(`qemu: ${e.message}`);
      resolve(127);
    });
    qemu.on('exit', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
  });
  state.running = false;
  log(`qemu exited (${code})`);
  dhcp.close();
  health.close();
  await shutdownReported(paths);
  return code;
}

/** The preStop hook's mark while it runs: the container ends only after it reported, or the runtime would kill it. */
const shutdownMark = (paths: VmPaths) => `${paths.run}/shutdown.running`;

async function shutdownReported(paths: VmPaths, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (existsSync(shutdownMark(paths)) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 100));
}

function qemuRunning(paths: VmPaths): boolean {
  const pidFile = vmFiles(paths).pid;
  if (!existsSync(pidFile)) return false;
  const pid = readFileSync(pidFile, 'utf8').trim();
  return pid !== '' && existsSync(`/proc/${pid}`);
}

/** preStop: ACPI power-off, then QEMU's own exit, or quit when the grace period (less a margin) is over. */
export async function shutdownVm(env = process.env, paths = DEFAULT_PATHS): Promise<number> {
  const grace = Number(env[VmEnv.graceSeconds] ?? 600);
  const deadline = Date.now() + Math.max(1, grace - SHUTDOWN_MARGIN_S) * 1000;
  const qmp = vmFiles(paths).qmp;
  if (!qemuRunning(paths)) {
    log('shutdown: QEMU is not running');
    return 0;
  }
  writeFileSync(shutdownMark(paths), String(process.pid));
  try {
    return await powerOff(qmp, paths, grace, deadline);
  } finally {
    rmSync(shutdownMark(paths), { force: true });
  }
}

async function powerOff(qmp: string, paths: VmPaths, grace: number, deadline: number): Promise<number> {
  const started = Date.now();
  await qmpCommand(qmp, 'system_powerdown').catch((e: Error) => log(`shutdown: ${e.message}`));
  log('shutdown: asked the guest to power off');
  while (qemuRunning(paths) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  if (qemuRunning(paths)) {
    log(`shutdown: the guest still runs after ${grace - SHUTDOWN_MARGIN_S} s: stopping QEMU`);
    await qmpCommand(qmp, 'quit').catch((e: Error) => log(`shutdown: ${e.message}`));
    return 1;
  }
  log(`shutdown: the guest powered off in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [verb] = argv;
  if (verb === 'run') return runVm();
  if (verb === 'shutdown') return shutdownVm();
  console.error('usage: main.js run | shutdown');
  return 2;
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: Error) => {
      log(`error: ${e.message}`);
      process.exit(1);
    },
  );
}
