// Whether guests run under KVM or under QEMU's software emulation (TCG):
// detected, never assumed. libvirt saying it can do `kvm` is not enough: a
// nested, pagetable-based /dev/kvm (kvm-pvm) opens and runs a trivial guest,
// yet a stock Linux kernel hangs on it right after "KASLR disabled". So when
// libvirt offers kvm, a kernel is booted on it once with a tiny initramfs
// that prints a marker; only a marker within the time limit means KVM.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildInitramfs } from './initramfs.ts';
import type { Virsh } from './virsh.ts';

export interface AccelChoice {
  type: 'kvm' | 'qemu';
  /** Why, as the agent logs it. */
  reason: string;
}

const MARKER = 'NODEWARDEN-KVM-PROBE-OK';
/** A stock kernel reaches init in about a second under KVM; one that hangs never does. */
const PROBE_MS = 20_000;

/** The newest kernel under /boot, if any. */
export function bootKernel(): string | undefined {
  if (!existsSync('/boot')) return undefined;
  const k = readdirSync('/boot')
    .filter((f) => f.startsWith('vmlinuz-'))
    .sort()
    .pop();
  return k ? join('/boot', k) : undefined;
}

export async function detectAccel(virsh: Virsh, kernel = bootKernel()): Promise<AccelChoice> {
  if (!existsSync('/dev/kvm')) return { type: 'qemu', reason: 'no /dev/kvm: software emulation (TCG)' };
  const caps = await virsh.domainCapabilities('kvm');
  if (!caps) return { type: 'qemu', reason: 'libvirt offers no kvm domains here: software emulation (TCG)' };
  if (!kernel)
    return { type: 'qemu', reason: 'no kernel under /boot to prove KVM with: software emulation (TCG)' };
  const ok = await kernelBootsUnderKvm(kernel);
  return ok
    ? { type: 'kvm', reason: `a kernel (${kernel}) booted under KVM in the probe` }
    : {
        type: 'qemu',
        reason: `/dev/kvm is there, but a kernel (${kernel}) did not reach init under KVM in ${PROBE_MS / 1000} s: software emulation (TCG)`,
      };
}

/** Boots `kernel` under `qemu-system-x86_64 -accel kvm` with an initramfs that prints MARKER; true if it does in time. */
export async function kernelBootsUnderKvm(kernel: string, timeoutMs = PROBE_MS): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'nw-kvm-probe-'));
  try {
    const initrd = join(dir, 'probe.cpio.gz');
    await buildInitramfs(initrd, `echo ${MARKER}\npoweroff -f\n`);
    return await new Promise<boolean>((resolve) => {
      const q = spawn(
        'qemu-system-x86_64',
        [
          ...['-accel', 'kvm', '-machine', 'pc', '-m', '256', '-nodefaults', '-display', 'none'],
          ...['-kernel', kernel, '-initrd', initrd, '-append', 'console=ttyS0 panic=-1 quiet'],
          ...['-serial', 'stdio', '-no-reboot'],
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      const timer = setTimeout(() => q.kill('SIGKILL'), timeoutMs);
      q.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (out.includes(MARKER)) q.kill('SIGKILL');
      });
      q.on('error', () => undefined);
      q.on('close', () => {
        clearTimeout(timer);
        resolve(out.includes(MARKER));
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
