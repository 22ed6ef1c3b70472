// The KVM capability as one value (see src/capability.ts): KVMCluster, the
// controllers that run workload clusters whose nodes are VMs in pods (the
// cluster reconciler and the VM drain), their webhook, the `kvm` command, and
// the simulated hypervisor every local cluster carries for it. Code loads when
// it runs. Parity anchor: giantswarm kvm-operator
// (../shared/reference/kvm-workload-clusters.md).
import type { AnyCustomResource } from '../api/index.ts';
import { KVMClusters } from '../api/kvm.ts';
import type { Capability, ControllerSpec } from '../capability.ts';
import { onCreateOrUpdate } from '../runtime/webhook-config.ts';
import { kvmCommandSpec } from './command-spec.ts';
import { type KvmOptions, kvmFlags, kvmOptions } from './options.ts';
import { kvmClusterRbac, vmDrainRbac } from './rbac.ts';
import { KVM_WEBHOOK_NAME, KVM_WEBHOOK_PATH } from './webhook-endpoint.ts';

export const kvmClusterController: ControllerSpec<KvmOptions> = {
  name: 'kvmcluster',
  description:
    'KVMCluster: a workload cluster of VM pods — create, scale, upgrade one node at a time, replace unhealthy VMs, delete in order',
  rbac: kvmClusterRbac,
  setup: async (host, options) => (await import('./controllers/setup.ts')).setupKVMClusters(host, options),
};

export const vmDrainController: ControllerSpec<KvmOptions> = {
  name: 'kvm-vm-drain',
  description: 'VM pods of KVMClusters: drain the workload node (PDBs honoured, bounded) before the VM goes',
  rbac: vmDrainRbac,
  setup: async (host) => (await import('./controllers/setup.ts')).setupVmDrains(host),
};

export const kvm: Capability<KvmOptions> = {
  name: 'kvm',
  flags: kvmFlags,
  options: (flags, ctx) => kvmOptions(flags, ctx.runsIn),
  customResources: [KVMClusters as unknown as AnyCustomResource],
  controllers: [kvmClusterController, vmDrainController],
  webhooks: [
    {
      name: KVM_WEBHOOK_NAME,
      path: KVM_WEBHOOK_PATH,
      rules: [onCreateOrUpdate(KVMClusters.type)],
      handler: async (host) => (await import('./webhook.ts')).kvmClusterAdmission(host.cache),
    },
  ],
  commands: [kvmCommandSpec],
  infrastructure: async () => [(await import('../cluster/infra/hypervisor/addon.ts')).simulatedHypervisor],
};
