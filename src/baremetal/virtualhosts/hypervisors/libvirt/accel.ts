// The libvirt domains' accelerator: the shared probe (src/qemu/accel.ts),
// asked only when libvirt offers kvm domains at all.
import { type AccelChoice, bootKernel, detectAccel as probeAccel } from '../../../../qemu/accel.ts';
import type { Virsh } from './virsh.ts';

export type { AccelChoice };

export async function detectAccel(virsh: Virsh, kernel = bootKernel()): Promise<AccelChoice> {
  return probeAccel(kernel, async () => (await virsh.domainCapabilities('kvm')) !== undefined);
}
