// The bare-metal capability's operator flags and the options they give.
import type { FlagValues, OperatorFlag } from '../capability.ts';
import { parseDuration } from '../runtime/duration.ts';

export interface BaremetalOptions {
  /** metal3's own operator manages the BareMetalHosts: ours stands aside. */
  metal3ManagesHosts: boolean;
  /** How often every host's BMC is read again (power drift, a BMC that came back). */
  resyncMs: number;
  /** Where VirtualHostPools define their VMs. */
  vmHypervisors: VmHypervisorChoice;
  /** The image a pool's DaemonSet runs the VM host agent from, where the pool names none. */
  vmHostAgentImage: string;
  /** The folder of the nodes' libvirt sockets the agents mount; `$(NODE_NAME)` in it stands for each node. */
  vmHostLibvirtDir: string;
}

export const VM_HYPERVISORS = ['auto', 'libvirt', 'simulated'] as const;
export type VmHypervisorChoice = (typeof VM_HYPERVISORS)[number];

export const baremetalFlags: OperatorFlag[] = [
  {
    name: 'metal3-manages-hosts',
    type: 'boolean',
    default: false,
    help: "metal3's own operator manages the BareMetalHosts here:\nnodewarden's host controller does not run (VM hosts still do)",
  },
  {
    name: 'baremetal-resync',
    type: 'string',
    placeholder: 'D',
    default: '60s',
    help: "how often every host's BMC is read again: power drift is noticed\nand corrected within this",
  },
  {
    name: 'vm-hypervisors',
    type: 'string',
    placeholder: 'KIND',
    default: 'auto',
    help: 'where VirtualHostPools define VMs: libvirt (the VM host agents that\npublish themselves), simulated (the local BMC fleet), or auto (the\nagents where any is published, else the fleet)',
  },
  {
    name: 'vm-host-agent-image',
    type: 'string',
    placeholder: 'IMAGE',
    default: 'nodewarden:latest',
    help: "the image VirtualHostPools' DaemonSets run `nodewarden vm-host agent` from\n(the operator's own; a pool's spec.daemonSet.image overrides it)",
  },
  {
    name: 'vm-host-libvirt-dir',
    type: 'string',
    placeholder: 'DIR',
    default: '/run/libvirt',
    help: "the folder of the nodes' libvirtd sockets the VM host agents mount; $(NODE_NAME)\nin it stands for each node's name (nodes that share one file system)",
  },
];

export async function baremetalOptions(flags: FlagValues): Promise<BaremetalOptions> {
  const resync = String(flags['baremetal-resync'] ?? '60s');
  const resyncMs = parseDuration(resync);
  if (!(resyncMs > 0))
    throw new Error(`--baremetal-resync: "${resync}" is not a duration above 0 (e.g. 30s)`);
  const vmHypervisors = String(flags['vm-hypervisors'] ?? 'auto') as VmHypervisorChoice;
  if (!VM_HYPERVISORS.includes(vmHypervisors))
    throw new Error(`--vm-hypervisors: "${vmHypervisors}" is not one of ${VM_HYPERVISORS.join(', ')}`);
  return {
    metal3ManagesHosts: flags['metal3-manages-hosts'] === true,
    resyncMs,
    vmHypervisors,
    vmHostAgentImage: String(flags['vm-host-agent-image'] ?? 'nodewarden:latest'),
    vmHostLibvirtDir: libvirtDirOption(String(flags['vm-host-libvirt-dir'] ?? '/run/libvirt')),
  };
}

/** An absolute folder; `$(NODE_NAME)` only after its first component, as a hostPath needs a fixed folder to start from. */
function libvirtDirOption(dir: string): string {
  if (!dir.startsWith('/') || dir.indexOf('$(NODE_NAME)') === 1)
    throw new Error(`--vm-host-libvirt-dir: "${dir}" is not an absolute folder with a fixed first component`);
  return dir;
}
