// The VM image's preStop (`shutdownVm`) against a real QEMU whose guest never
// answers the ACPI power button (no OS: the firmware finds nothing to boot):
// once the grace period less its margin is over, QEMU is stopped over QMP and
// the hook says so; and a QEMU already gone is nothing to do. The clean
// power-off of a guest that answers is vm-image.test.ts's.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { VmEnv } from '../../src/api/vm-image.ts';
import { DEFAULT_PATHS, type VmPaths } from '../../src/kvm/vm/config.ts';
import { shutdownVm } from '../../src/kvm/vm/main.ts';
import { vmFiles } from '../../src/kvm/vm/qemu-args.ts';

const QEMU = 'qemu-system-x86_64';
const skip =
  spawnSync(QEMU, ['--version']).status === 0 ? false : `no ${QEMU} (hack/debian-packages.sh installs it)`;
if (skip) console.log(`# preStop against QEMU: skipped: ${skip}`);

const dir = mkdtempSync(join(tmpdir(), 'nw-vm-shutdown-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const paths: VmPaths = { ...DEFAULT_PATHS, run: join(dir, 'run'), state: join(dir, 'state') };
mkdirSync(paths.run, { recursive: true });
const files = vmFiles(paths);

/** A QEMU with nothing to boot, its QMP socket and pid file where the hook looks. */
async function startQemu(): Promise<ReturnType<typeof spawn>> {
  const qemu = spawn(
    QEMU,
    [
      ...['-machine', 'pc,accel=tcg', '-m', '64', '-display', 'none', '-nodefaults', '-no-reboot'],
      ...['-qmp', `unix:${files.qmp},server=on,wait=off`, '-pidfile', files.pid],
    ],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 10_000;
  while (!(existsSync(files.qmp) && existsSync(files.pid)) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 100));
  assert.ok(existsSync(files.qmp), 'QEMU made no QMP socket within 10 s');
  return qemu;
}

describe("the VM image's preStop against QEMU", { skip }, () => {
  it('stops QEMU over QMP once the grace period less its margin is over, when the guest ignores the power button', async () => {
    const qemu = await startQemu();
    const exited = new Promise<number | null>((resolve) => qemu.once('exit', (code) => resolve(code)));
    const t = Date.now();
    // 12 s of grace, less the 10 s left to the kubelet: 2 s for the guest.
    const code = await shutdownVm({ [VmEnv.graceSeconds]: '12' }, paths);
    const waited = (Date.now() - t) / 1000;
    assert.equal(code, 1, 'the hook says the guest did not power off by itself');
    assert.equal(await exited, 0, 'QEMU ends on quit');
    assert.ok(waited >= 2, `the hook waited ${waited.toFixed(1)} s, not the 2 s it had`);
    assert.ok(!existsSync(join(paths.run, 'shutdown.running')), 'the hook leaves no mark behind');
    console.log(
      `# preStop on a guest that ignores the power button: QEMU stopped after ${waited.toFixed(1)} s`,
    );
  });

  it('has nothing to do once QEMU is gone', async () => {
    rmSync(files.pid, { force: true });
    assert.equal(await shutdownVm({ [VmEnv.graceSeconds]: '12' }, paths), 0);
  });
});
