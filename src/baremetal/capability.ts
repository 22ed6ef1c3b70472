// The bare-metal capability as one value (see src/capability.ts): metal3's
// BareMetalHost (installed only where metal3's own CRD is absent), the host
// controller that registers, inspects and powers hosts over Redfish, VM hosts
// carved from hypervisor nodes (VirtualHostPool with its IPAM), the
// `baremetal` command, the simulated BMC fleet every local cluster carries,
// and real VM hosts (libvirt) for the nodes `cluster up --vm-hosts` names.
import { BareMetalHosts } from '../api/baremetal.ts';
import type { AnyCustomResource } from '../api/index.ts';
import { IPPools, VirtualHostPools } from '../api/virtualhosts.ts';
import type { Capability, ControllerSpec } from '../capability.ts';
import { baremetalCommandSpec, vmHostCommandSpec } from './command-spec.ts';
import { type BaremetalOptions, baremetalFlags, baremetalOptions } from './options.ts';
import { hostControllerRbac, virtualHostPoolRbac } from './rbac.ts';
import { virtualHostsWebhook } from './virtualhosts/webhook.ts';

export type { BaremetalOptions };

export const hostController: ControllerSpec<BaremetalOptions> = {
  name: 'baremetalhost',
  description: 'BareMetalHost: register, inspect, power and provision hosts over their BMCs (Redfish)',
  unavailable: (o) =>
    o.metal3ManagesHosts ? "metal3's operator manages the hosts (--metal3-manages-hosts)" : undefined,
  rbac: hostControllerRbac,
  setup: async (host, o) =>
    (await import('./hosts/controller.ts')).setupBareMetalHosts(host, { resyncMs: o.resyncMs }),
};

export const virtualHostPoolController: ControllerSpec<BaremetalOptions> = {
  name: 'virtualhostpool',
  description:
    'VirtualHostPool: VMs on hypervisor nodes, each a BareMetalHost with its addresses, Secrets and BMC (ViNO parity)',
  rbac: virtualHostPoolRbac,
  setup: async (host, o) => {
    const setup = await import('./virtualhosts/setup.ts');
    setup.setupVirtualHostPools(host, {
      hypervisors: setup.hypervisorSource(
        host.client,
        o.vmHypervisors,
        o.vmHostAgentImage,
        o.vmHostLibvirtDir,
      ),
    });
  },
};

export const baremetal: Capability<BaremetalOptions> = {
  name: 'baremetal',
  customResources: [BareMetalHosts, VirtualHostPools, IPPools].map(
    (cr) => cr as unknown as AnyCustomResource,
  ),
  flags: baremetalFlags,
  options: baremetalOptions,
  controllers: [hostController, virtualHostPoolController],
  webhooks: [virtualHostsWebhook],
  commands: [baremetalCommandSpec, vmHostCommandSpec],
  infrastructure: async () => [
    (await import('../cluster/infra/bmc/addon.ts')).simulatedBmcFleet,
    (await import('../cluster/infra/vm-hosts/addon.ts')).vmHostsAddon,
  ],
};
