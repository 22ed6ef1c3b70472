// The last step of giving up a pool's VM, once its host is gone: the machine
// at its hypervisor, then at once its addresses, then its Secrets. WHY the
// addresses at once rather than after every VM of the round: through a
// partition the 200-node soak's leaders held the lease 10–30 s each, and each
// lost it part way down the list of VMs to give up; every VM it had removed
// kept its addresses, and the next leader began the list again from the top,
// so a VM low on it held its address 165 s after it was gone.
// WHY nothing at all while the hypervisors are unknown: the addresses and
// Secrets are all that remembers the VM. Freed while its machine stayed (the
// soak, seed 424242: the lookup of the hypervisors met an API server
// restarting), the machine was left on the fleet for good, still holding its
// IP and MAC, and the next VM handed them was refused by the hypervisor
// (409, the MAC belongs to another machine): the pool stayed in
// HypervisorError and that VM's address was held with no VM.
import type { KubeClient } from '../../runtime/client.ts';
import { Secrets } from '../../runtime/resources.ts';
import type { PoolAddresses } from './addresses.ts';
import type { Hypervisors } from './hypervisors/hypervisor.ts';
import { credentialsSecret, machineId, networkDataSecret, vmOwnerPrefix } from './objects.ts';
import type { VmRef } from './plan.ts';

/**
 * Where the round's VMs are: the hypervisors found; `none` when the source
 * publishes none (there is no machine to reach); `unknown` when looking them
 * up failed (an API error): they may well hold the VM.
 */
export type FoundHypervisors = Hypervisors | 'none' | 'unknown';

export interface ReleaseVmDeps {
  client: KubeClient;
  hv: FoundHypervisors;
  addresses: PoolAddresses;
}

/** Whether the VM was released; while the hypervisors are unknown nothing is touched (a later round releases it). */
export async function releaseVm(
  d: ReleaseVmDeps,
  namespace: string,
  vm: VmRef & { name: string },
): Promise<boolean> {
  if (d.hv === 'unknown') return false;
  if (d.hv !== 'none') await d.hv.of(vm.node).remove(machineId(namespace, vm.name));
  const prefix = vmOwnerPrefix(vm);
  await d.addresses.release((owner) => owner.startsWith(prefix));
  for (const s of [credentialsSecret(vm.name), networkDataSecret(vm.name)])
    await d.client.delete(Secrets, s, namespace, { ignoreNotFound: true });
  return true;
}
