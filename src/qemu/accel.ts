// Whether guests run under KVM or under QEMU's software emulation (TCG), the
// one probe both the VM hosts' libvirt domains and the VM image's QEMU use:
// detected, never assumed. A nested, pagetable-based /dev/kvm (kvm-pvm) opens
// and runs a trivial guest, yet a stock Linux kernel hangs on it right after
// "KASLR disabled". So a kernel is booted on it once with a tiny initramfs
// that prints a marker; only a marker within the time limit means KVM.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildInitramfs } from './initramfs.ts';

export interface AccelChoice {
  type: 'kvm' | 'qemu';
  /** Why, as the caller logs it. */
  reason: string;
}

const MARKER = 'NODEWARDEN-KVM-PROBE-OK';
/** A stock kernel reaches init in about a second under KVM; one that hangs never does. */
export const KVM_PROBE_MS = 20_000;

/** The newest kernel under /boot, if any. */
export function bootKernel(): string | undefined {
  if (!existsSync('/boot')) return undefined;
  const k = readdirSync('/boot')
    .filter((f) => f.startsWith('vmlinuz-'))
    .sort()
    .pop();
  return k ? join('/boot', k) : undefined;
}

/**
 * KVM if /dev/kvm is there and `kernel` boots on it; TCG otherwise. `kvmOffered`
 * lets a caller say KVM is out before the probe (libvirt offering no kvm domains).
 */
export async function detectAccel(
  kernel: string | undefined,
  kvmOffered: () => Promise<boolean> = async () => true,
): Promise<AccelChoice> {
  if (!existsSync('/dev/kvm')) return { type: 'qemu', reason: 'no /dev/kvm: software emulation (TCG)' };
  if (!(await kvmOffered()))
    return { type: 'qemu', reason: 'libvirt offers no kvm domains here: software emulation (TCG)' };
  if (!kernel) return { type: 'qemu', reason: 'no kernel to prove KVM with: software emulation (TCG)' };
  const ok = await kernelBootsUnderKvm(kernel);
  return ok
    ? { type: 'kvm', reason: `a kernel (${kernel}) booted under KVM in the probe` }
    : {
        type: 'qemu',
        reason: `/dev/kvm is there, but a kernel (${kernel}) did not reach init under KVM in ${KVM_PROBE_MS / 1000} s: software emulation (TCG)`,
      };
}

/** Boots `kernel` under `qemu-system-x86_64 -accel kvm` with an initramfs that prints MARKER; true if it does in time. */
export async function kernelBootsUnderKvm(kernel: string, timeoutMs = KVM_PROBE_MS): Promise<boolean> {
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
