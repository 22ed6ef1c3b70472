// The simulated hypervisors: the BMC fleet every local cluster carries
// defines each node's VMs as machines of kind "vm" (what a node's libvirt
// does for real), each a Redfish System of its own. Found through the
// fleet's published ConfigMap, kube-system/nodewarden-simulated-bmc.
import {
  BMC_SIMULATOR,
  FLEET_CA_KEY,
  type Machine,
  type MachineSpec,
} from '../../../../cluster/infra/bmc/protocol.ts';
import { findEndpoint } from '../../../../cluster/infra/kit/discovery.ts';
import type { KubeClient } from '../../../../runtime/client.ts';
import type {
  AgentRun,
  HeldVm,
  Hypervisor,
  HypervisorSource,
  Hypervisors,
  VmDefinition,
} from '../hypervisor.ts';
import { FleetConsole } from './fleet-console.ts';

const PAUSE: AgentRun = { kind: 'pause' };

/** How long a read of the published endpoint is trusted (a fleet restarted on another port is found within it). */
const REREAD_MS = 10_000;

/** The fleet's machine for a VM `node` runs. */
export function machineSpecOf(node: string, vm: VmDefinition): MachineSpec {
  return {
    id: vm.id,
    kind: 'vm',
    hypervisor: node,
    cpus: vm.flavor.cpus,
    memoryMiB: vm.flavor.memoryMiB,
    // The fleet's machines have one disk: the root disk.
    diskGB: vm.disks[0]?.sizeGB ?? 0,
    // The fleet has no networks: a NIC is its name, MAC and address.
    nics: vm.nics.map((n) => ({ name: n.name, mac: n.mac, ...(n.ip === undefined ? {} : { ip: n.ip }) })),
    credentials: { ...vm.credentials },
  };
}

const heldVm = (m: Machine): HeldVm => ({ id: m.id, power: m.power, redfishAddress: m.bmcAddress });

/** One node's VMs on the fleet. */
class SimulatedHypervisor implements Hypervisor {
  readonly node: string;
  private readonly fleet: FleetConsole;
  constructor(fleet: FleetConsole, node: string) {
    this.fleet = fleet;
    this.node = node;
  }
  async define(vm: VmDefinition): Promise<HeldVm> {
    return heldVm(await this.fleet.define(machineSpecOf(this.node, vm)));
  }
  remove(id: string): Promise<void> {
    return this.fleet.remove(id);
  }
  async list(): Promise<HeldVm[]> {
    return (await this.fleet.list()).filter((m) => m.kind === 'vm' && m.hypervisor === this.node).map(heldVm);
  }
}

/** Every node's hypervisor on one fleet. */
export class SimulatedHypervisors implements Hypervisors {
  /** The fleet acts for every node: the pool's pods only mark its nodes. */
  readonly agent = PAUSE;
  readonly fleet: FleetConsole;
  constructor(endpoint: string, caPem: string) {
    this.fleet = new FleetConsole(endpoint, caPem);
  }
  of(node: string): Hypervisor {
    return new SimulatedHypervisor(this.fleet, node);
  }
  close(): void {
    this.fleet.close();
  }
}

/**
 * The fleet the cluster publishes, or none when it publishes none. Kept while
 * the endpoint and CA stay the same; a fleet restarted on another port is
 * picked up on the next call.
 */
export function publishedHypervisors(client: KubeClient): HypervisorSource {
  let current: { key: string; hypervisors: SimulatedHypervisors } | undefined;
  let read: { at: number; published: Awaited<ReturnType<typeof findEndpoint>> } | undefined;
  const find = async () => {
    // One read of the ConfigMap per REREAD_MS, not one per reconcile.
    if (!read || Date.now() - read.at > REREAD_MS)
      read = { at: Date.now(), published: await findEndpoint(client, BMC_SIMULATOR) };
    const published = read.published;
    const ca = published?.[FLEET_CA_KEY];
    if (!published || !ca) return undefined;
    const key = `${published.endpoint}\n${ca}`;
    if (current?.key !== key) {
      current?.hypervisors.close();
      current = { key, hypervisors: new SimulatedHypervisors(published.endpoint, ca) };
    }
    return current.hypervisors;
  };
  return {
    name: 'the BMC fleet',
    agentWhenNone: PAUSE,
    missing:
      'no BMC fleet to define VMs on: kube-system/nodewarden-simulated-bmc publishes none (is the local cluster up?)',
    find,
  };
}
