// The bare-metal capability as one value (see src/capability.ts): metal3's
// BareMetalHost (installed only where metal3's own CRD is absent), the host
// controller that registers, inspects and powers hosts over Redfish, VM hosts
// carved from hypervisor nodes (VirtualHostPool with its IPAM), the
// `baremetal` command, and the simulated BMC fleet every local cluster carries.
import { BareMetalHosts } from '../api/baremetal.ts';
import type { AnyCustomResource } from '../api/index.ts';
import type { Capability } from '../capability.ts';
import { type BaremetalOptions, baremetalFlags, baremetalOptions } from './options.ts';

export type { BaremetalOptions };

export const baremetal: Capability<BaremetalOptions> = {
  name: 'baremetal',
  customResources: [BareMetalHosts as unknown as AnyCustomResource],
  flags: baremetalFlags,
  options: baremetalOptions,
  controllers: [],
};
