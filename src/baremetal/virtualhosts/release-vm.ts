// The last step of giving up a pool's VM, once its host is gone: the machine
// at its hypervisor, then at once its addresses, then its Secrets. WHY the
// addresses at once rather than after every VM of the round: through a
// partition the 200-node soak's leaders held the lease 10–30 s each, and each
// lost it part way down the list of VMs to give up; every VM it had removed
// kept its addresses, and the next leader began the list again from the top,
// so a VM low on it held its address 165 s after it was gone.
import type { KubeClient } from '../../runtime/client.ts';
import { Secrets } from '../../runtime/resources.ts';
import type { PoolAddresses } from './addresses.ts';
import type { Hypervisors } from './hypervisors/hypervisor.ts';
import { credentialsSecret, machineId, networkDataSecret, vmOwnerPrefix } from './objects.ts';
import type { VmRef } from './plan.ts';

export interface ReleaseVmDeps {
  client: KubeClient;
  hv: Hypervisors | undefined;
  addresses: PoolAddresses;
}

export async function releaseVm(d: ReleaseVmDeps, namespace: string, vm: VmRef & { name: string }) {
  await d.hv?.of(vm.node).remove(machineId(namespace, vm.name));
  const prefix = vmOwnerPrefix(vm);
  await d.addresses.release((owner) => owner.startsWith(prefix));
  for (const s of [credentialsSecret(vm.name), networkDataSecret(vm.name)])
    await d.client.delete(Secrets, s, namespace, { ignoreNotFound: true });
}
