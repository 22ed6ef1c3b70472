// The soak's bare-metal load: physical machines racked behind the cluster's
// simulated BMC fleet, each a BareMetalHost, whose `online` is flipped, whose
// power is switched at the BMC behind the operator's back, and which are
// provisioned and deprovisioned; a VirtualHostPool scaled up and down, its
// hypervisor nodes leaving its selector and others joining; the BMC fleet's
// faults on a track of their own. Also what the sampler reads of it and what
// "converged" means for it. Everything goes through the API server or the
// fleet's console, as a user's tools would.
import { type BareMetalHost, BareMetalHosts } from '../../src/api/baremetal.ts';
import { type IPPool, IPPools, type VirtualHostPool, VirtualHostPools } from '../../src/api/virtualhosts.ts';
import { machineId, POOL_LABEL, vmOfOwner } from '../../src/baremetal/virtualhosts/objects.ts';
import { vmName } from '../../src/baremetal/virtualhosts/plan.ts';
import { type ConsoleTarget, consoleRequest } from '../../src/cluster/infra/bmc/api.ts';
import { applyPhysicalHosts } from '../../src/cluster/infra/bmc/cluster-hosts.ts';
import { hasFault, noBmcFaults } from '../../src/cluster/infra/bmc/faults.ts';
import { planPhysicalHosts } from '../../src/cluster/infra/bmc/physical-hosts.ts';
import { type BmcFaults, consolePaths, type Machine } from '../../src/cluster/infra/bmc/protocol.ts';
import { seededRandom } from '../../src/cluster/infra/kit/random.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { type K8sObject, Namespaces, Nodes } from '../../src/runtime/resources.ts';
import type { AddressView, HostView, VmView } from './invariants.ts';
import { type BmcFault, describeBmcFault } from './schedule.ts';
import { runFaultTrack, SteppedLoad, type TrackRecord } from './stepping.ts';

export const BM_NAMESPACE = 'soak-bm';
export const POOL = 'vhp';
export const HYPERVISOR_LABEL = 'soak.nodewarden.dev/hypervisor';
const IMAGE = { url: 'http://images.example/nwos-soak.iso', format: 'live-iso' };
const BMH = BareMetalHosts.type;
const VHP = VirtualHostPools.type;

export interface BareMetalOptions {
  seed: number;
  /** Physical machines, in `racks` racks. */
  hosts: number;
  racks: number;
  /** Fleet workers that host the pool's VMs at any time. */
  hypervisors: number;
  /** The pool's worker VMs per hypervisor node, scaled within 1..maxVmsPerNode. */
  maxVmsPerNode: number;
}

type Host = BareMetalHost & K8sObject;
const machineOf = (h: Host) => h.spec.bmc?.address.split('/').pop() ?? '';
const key = (o: K8sObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;

const network = {
  name: 'oam',
  subnet: '192.168.0.0/20',
  staticAllocationStart: '192.168.2.10',
  staticAllocationStop: '192.168.2.60',
  dhcpAllocationStart: '192.168.4.0',
  dhcpAllocationStop: '192.168.7.255',
  instanceSubnetBitStep: 4,
  routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '$vinobridge' }],
  dnsServers: ['192.168.0.2'],
};
const flavor = (count: number) => ({
  name: 'worker',
  count,
  cpus: 1,
  memoryMiB: 2048,
  diskGB: 10,
  networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
});

/**
 * The VM addresses a pool's IPPools hand out, each beside the id of the VM its owner key names:
 * the fleet's machine or the libvirt domain, both machineId of the VM's host name.
 */
export function poolAddressViews(pools: readonly IPPool[], namespace: string, pool: string): AddressView[] {
  return pools.flatMap((p) =>
    (p.spec.allocations ?? []).flatMap((a) => {
      const vm = vmOfOwner(a.owner);
      if (!vm) return [];
      return [
        {
          pool: `${namespace}/${pool}`,
          owner: a.owner,
          ip: a.ip,
          vm: machineId(namespace, vmName(pool, vm)),
        },
      ];
    }),
  );
}

/** The bare-metal side of the soak: setup, churn, BMC faults, samples and convergence. */
export class BareMetalLoad extends SteppedLoad {
  steps = 0;
  readonly did: Record<string, number> = {};
  /** The BMC faults injected, for the report. */
  readonly faults: TrackRecord[] = [];
  private readonly client: KubeClient;
  private readonly fleet: ConsoleTarget;
  private readonly o: BareMetalOptions;
  private readonly random: () => number;
  private readonly physical: string[] = [];
  private faultsNow: BmcFaults = noBmcFaults();

  constructor(client: KubeClient, fleet: ConsoleTarget, o: BareMetalOptions) {
    super();
    this.client = client;
    this.fleet = fleet;
    this.o = o;
    this.random = seededRandom(o.seed ^ 0xba5e);
  }

  /** The physical machine ids, once racked. */
  get hosts(): readonly string[] {
    return this.physical;
  }

  /** Racks the machines (as `cluster up --bare-metal-hosts` does), labels hypervisors, makes the pool. */
  async setUp(cluster: string): Promise<void> {
    for (const spec of planPhysicalHosts(cluster, { count: this.o.hosts, racks: this.o.racks }))
      await consoleRequest(this.fleet, 'POST', consolePaths.machines, spec);
    const machines = await consoleRequest<Machine[]>(
      this.fleet,
      'GET',
      `${consolePaths.machines}?kind=physical`,
    );
    await applyPhysicalHosts(this.client, machines);
    this.physical.push(...machines.filter((m) => m.kind === 'physical').map((m) => m.id));
    await this.client.create(Namespaces, { metadata: { name: BM_NAMESPACE } });
    for (const node of (await this.workers()).slice(0, this.o.hypervisors)) await this.label(node, true);
    await this.client.create(VHP, {
      apiVersion: VirtualHostPools.apiVersion,
      kind: 'VirtualHostPool',
      metadata: { name: POOL, namespace: BM_NAMESPACE },
      spec: {
        nodeSelector: { matchLabels: { [HYPERVISOR_LABEL]: 'true' } },
        networks: [network],
        nodes: [flavor(Math.min(2, this.o.maxVmsPerNode))],
        bmcCredentials: { username: 'admin', password: 'vm-secret' },
      },
    } as never);
  }

  /** Runs until stop(): one seeded step every `everyMs`. */
  run(everyMs: number): Promise<void> {
    return this.stepEvery(everyMs, () => this.step());
  }

  /** The BMC faults of the schedule, each when its time comes, until the run's end. */
  async injectFaults(
    schedule: readonly BmcFault[],
    started: number,
    log: (m: string) => void,
  ): Promise<void> {
    await runFaultTrack({
      schedule,
      started,
      stopped: () => this.stopped,
      describe: describeBmcFault,
      apply: async (f) => {
        await this.setFaults(
          f.kind === 'slowPower' ? { powerOnDelayMs: f.powerOnDelayMs ?? 0 } : { [f.kind]: f.hosts },
        );
      },
      clear: () => this.clearFaults(),
      log,
      records: this.faults,
      logFirst: true,
    });
  }

  /** Clears every BMC fault; a host counts as faulted until the fleet has answered. */
  async clearFaults(): Promise<void> {
    await consoleRequest(this.fleet, 'DELETE', consolePaths.faults);
    this.faultsNow = noBmcFaults();
  }

  private async setFaults(patch: Partial<BmcFaults>): Promise<void> {
    // Known as faulted before the fleet is asked: a host is never judged while it might be.
    this.faultsNow = { ...this.faultsNow, ...patch };
    await consoleRequest(this.fleet, 'PUT', consolePaths.faults, patch);
  }

  private faulted(id: string, f: BmcFaults): boolean {
    return (['unreachable', 'badCredentials', 'failPower', 'vanished'] as const).some((k) =>
      hasFault(f, k, id),
    );
  }

  /** What the invariants need: hosts beside their machines' power, the pool's addresses, then its VMs. */
  async sample(): Promise<{ hosts: HostView[]; vmAddresses: AddressView[]; vms: VmView[] }> {
    const faultsBefore = this.faultsNow;
    const [hosts, pools] = await Promise.all([
      this.client.list<Host>(BMH),
      this.client.list<IPPool & K8sObject>(IPPools.type, {
        namespace: BM_NAMESPACE,
        labelSelector: `${POOL_LABEL}=${POOL}`,
      }),
    ]);
    const machines = await consoleRequest<Machine[]>(this.fleet, 'GET', consolePaths.machines);
    const faultsAfter = this.faultsNow;
    const power = new Map(machines.map((m) => [m.id, m.power]));
    const poolKey = `${BM_NAMESPACE}/${POOL}`;
    return {
      hosts: hosts.items.map((h) => {
        const id = machineOf(h);
        return {
          name: key(h),
          online: h.spec.online === true,
          power: power.get(id) ?? 'Missing',
          faulted: this.faulted(id, faultsBefore) || this.faulted(id, faultsAfter),
          errorCount: h.status?.errorCount ?? 0,
          deleting: !!h.metadata.deletionTimestamp,
        };
      }),
      vmAddresses: poolAddressViews(pools.items, BM_NAMESPACE, POOL),
      vms: machines
        .filter((m) => m.kind === 'vm' && m.id.startsWith(`${BM_NAMESPACE}-${POOL}-`))
        .map((m) => ({ id: m.id, pool: poolKey, ips: m.nics.flatMap((n) => (n.ip ? [n.ip] : [])) })),
    };
  }

  /** What still differs from the settled state; '' when converged. */
  async unconverged(): Promise<string> {
    const out: string[] = [];
    const machines = await consoleRequest<Machine[]>(this.fleet, 'GET', consolePaths.machines);
    const power = new Map(machines.map((m) => [m.id, m.power]));
    const hosts = (await this.client.list<Host>(BMH)).items;
    for (const h of hosts) {
      const want = h.spec.image ? 'provisioned' : 'available';
      const state = h.status?.provisioning?.state;
      const p = power.get(machineOf(h));
      if (state !== want || h.status?.errorType || p !== (h.spec.online ? 'On' : 'Off'))
        out.push(
          `host ${key(h)}: ${state}${h.status?.errorType ? ` (${h.status.errorType})` : ''}, power ${p}, want ${want} and ${h.spec.online ? 'On' : 'Off'}`,
        );
    }
    const pool = await this.client.get<VirtualHostPool & K8sObject>(VHP, POOL, BM_NAMESPACE);
    // Its size as asked of it: VMs per node (the pool's spec) times the nodes its selector holds.
    const hypervisors = (
      await this.client.list<K8sObject>(Nodes, { labelSelector: `${HYPERVISOR_LABEL}=true` })
    ).items.length;
    const size = (pool.spec.nodes[0]?.count ?? 0) * hypervisors;
    const ready = pool.status?.conditions?.find((c) => c.type === 'Ready');
    const vms = machines.filter((m) => m.kind === 'vm' && m.id.startsWith(`${BM_NAMESPACE}-${POOL}-`));
    const { vmAddresses } = await this.sample();
    if (
      ready?.reason !== 'HostsCreated' ||
      ready.observedGeneration !== pool.metadata.generation ||
      pool.status?.readyHosts !== size ||
      vms.length !== size ||
      vmAddresses.length !== size
    )
      out.push(
        `pool ${POOL}: ${ready?.reason}, ${pool.status?.readyHosts} hosts ready, ${vms.length} VMs, ${vmAddresses.length} VM addresses, size ${size}`,
      );
    return out.join('; ');
  }

  private async workers(): Promise<string[]> {
    const nodes = await this.client.list<K8sObject>(Nodes, { labelSelector: 'nodewarden.dev/pool=worker' });
    return nodes.items.map((n) => n.metadata!.name!).sort();
  }

  private async label(node: string, on: boolean): Promise<void> {
    await this.client.patch(
      Nodes,
      node,
      undefined,
      { metadata: { labels: { [HYPERVISOR_LABEL]: on ? 'true' : null } } },
      { type: 'merge' },
    );
  }

  private pick<T>(xs: readonly T[]): T | undefined {
    return xs.length ? xs[Math.floor(this.random() * xs.length)] : undefined;
  }

  /** One seeded action: flip online, switch power at the BMC, provision, deprovision, scale or move the pool. */
  private async step(): Promise<void> {
    const r = this.random();
    const hosts = (await this.client.list<Host>(BMH, { namespace: 'metal3' })).items.sort((a, b) =>
      key(a).localeCompare(key(b)),
    );
    const act = async (what: string, fn: () => Promise<unknown>) => {
      await fn();
      this.steps++;
      this.did[what] = (this.did[what] ?? 0) + 1;
    };
    if (r < 0.25) {
      const h = this.pick(hosts);
      if (h) await act('online flipped', () => this.patchHost(h, { online: !h.spec.online }));
    } else if (r < 0.45) {
      const h = this.pick(hosts);
      if (h)
        await act('power switched at the BMC', () =>
          consoleRequest(this.fleet, 'POST', consolePaths.power(machineOf(h)), {
            power: h.spec.online ? 'Off' : 'On',
          }),
        );
    } else if (r < 0.6) {
      const h = this.pick(hosts.filter((x) => !x.spec.image));
      if (h) await act('provisioned', () => this.patchHost(h, { image: IMAGE }));
    } else if (r < 0.75) {
      const h = this.pick(hosts.filter((x) => x.spec.image));
      if (h) await act('deprovisioned', () => this.patchHost(h, { image: null }));
    } else if (r < 0.88) {
      const n = 1 + Math.floor(this.random() * this.o.maxVmsPerNode);
      await act('pool scaled', () =>
        this.client.patch(VHP, POOL, BM_NAMESPACE, { spec: { nodes: [flavor(n)] } }, { type: 'merge' }),
      );
    } else await this.moveHypervisor(act);
  }

  /** A hypervisor node leaves the pool's selector and another worker joins it. */
  private async moveHypervisor(
    act: (what: string, fn: () => Promise<unknown>) => Promise<void>,
  ): Promise<void> {
    const nodes = await this.client.list<K8sObject>(Nodes, { labelSelector: 'nodewarden.dev/pool=worker' });
    const labelled = nodes.items.filter((n) => n.metadata?.labels?.[HYPERVISOR_LABEL] === 'true');
    const leaving = this.pick(labelled.map((n) => n.metadata!.name!).sort());
    const joining = this.pick(
      nodes.items
        .filter((n) => n.metadata?.labels?.[HYPERVISOR_LABEL] !== 'true')
        .map((n) => n.metadata!.name!)
        .sort(),
    );
    if (!leaving || !joining) return;
    await act('node left the pool', async () => {
      await this.label(leaving, false);
      await this.label(joining, true);
    });
  }

  private patchHost(h: Host, spec: Record<string, unknown>): Promise<unknown> {
    return this.client.patch(BMH, h.metadata.name!, h.metadata.namespace, { spec }, { type: 'merge' });
  }
}
