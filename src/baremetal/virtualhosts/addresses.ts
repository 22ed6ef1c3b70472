// A pool's addresses for one reconcile, in few API calls: one IPPool per
// network, and each step (release, hypervisors, VMs) one read-decide-write of
// each pool (src/baremetal/ipam/store.ts retries it on a conflict). A VM gets
// all its NICs' addresses or none: when one network is full, what the new VM
// got from the others is given back in the same reconcile.
import type { NetworkSpec } from '../../api/virtualhosts.ts';
import { DEFAULT_MAC_PREFIX } from '../../api/virtualhosts.ts';
import {
  allocateAll,
  allocateDhcpRange,
  allocateIP,
  type IpamCause,
  type PoolSpec,
  release,
} from '../ipam/allocate.ts';
import type { IPPoolStore } from '../ipam/store.ts';
import type { NicAddress } from './network-data.ts';
import {
  bridgeOwner,
  dhcpOwner,
  ipPoolName,
  nicOwner,
  ownerRefs,
  POOL_LABEL,
  type Pool,
  vmOwnerPrefix,
} from './objects.ts';
import type { DesiredVm } from './plan.ts';

export interface AddressFailure {
  network: string;
  cause: IpamCause;
  message: string;
}

export interface HypervisorAddresses {
  bridge: Record<string, { ip: string; mac?: string }>;
  dhcp: Record<string, { start: string; stop: string }>;
}

export class PoolAddresses {
  private readonly store: IPPoolStore;
  private readonly pool: Pool;
  private readonly ns: string;

  constructor(store: IPPoolStore, pool: Pool) {
    this.store = store;
    this.pool = pool;
    this.ns = pool.metadata.namespace!;
  }

  private poolName(net: NetworkSpec): string {
    return ipPoolName(this.pool.metadata.name!, net.name);
  }

  /** Each network's IPPool exists and holds its static and DHCP ranges: their specs, and what could not be made. */
  async ensure(): Promise<{ specs: Map<string, PoolSpec>; failures: AddressFailure[] }> {
    const failures: AddressFailure[] = [];
    const specs = new Map<string, PoolSpec>();
    for (const net of this.pool.spec.networks) {
      const r = await this.store.ensure(
        this.ns,
        this.poolName(net),
        {
          subnet: net.subnet,
          macPrefix: net.macPrefix ?? DEFAULT_MAC_PREFIX,
          range: { start: net.staticAllocationStart, stop: net.staticAllocationStop },
          dhcpRange:
            net.dhcpAllocationStart && net.dhcpAllocationStop
              ? { start: net.dhcpAllocationStart, stop: net.dhcpAllocationStop }
              : undefined,
          dhcpBlockBits: net.instanceSubnetBitStep ?? 4,
        },
        { labels: { [POOL_LABEL]: this.pool.metadata.name! }, ownerReferences: ownerRefs(this.pool) },
      );
      if (!r.ok)
        failures.push({
          network: net.name,
          cause: r.cause,
          message: `IPPool ${this.poolName(net)}: ${r.message}`,
        });
      else specs.set(net.name, r.spec);
    }
    return { specs, failures };
  }

  /** Every network's IPPool spec as it is now (absent networks left out). */
  async read(): Promise<Map<string, PoolSpec>> {
    const out = new Map<string, PoolSpec>();
    for (const net of this.pool.spec.networks) {
      const p = await this.store.get(this.ns, this.poolName(net));
      if (p) out.set(net.name, p.spec);
    }
    return out;
  }

  /** Frees whatever the matching owners hold, in every network. */
  async release(owns: (owner: string) => boolean): Promise<void> {
    for (const net of this.pool.spec.networks)
      await this.store.change(this.ns, this.poolName(net), (spec) => ({
        ok: true,
        ...release(spec, owns),
        value: undefined,
      }));
  }

  /** A bridge address (and MAC) per network and a DHCP block where the network has a DHCP range, per node. */
  async hypervisors(
    nodes: readonly string[],
  ): Promise<{ got: Map<string, HypervisorAddresses>; failures: AddressFailure[] }> {
    const got = new Map<string, HypervisorAddresses>(nodes.map((n) => [n, { bridge: {}, dhcp: {} }]));
    const failures: AddressFailure[] = [];
    for (const net of this.pool.spec.networks) {
      const wantsDhcp = Boolean(net.dhcpAllocationStart && net.dhcpAllocationStop);
      // The decision may run again on a conflict: it fills `round`, kept only from the run that was written.
      let round: {
        node: string;
        bridge?: { ip: string; mac?: string };
        dhcp?: { start: string; stop: string };
      }[] = [];
      let lost: AddressFailure[] = [];
      const r = await this.store.change(this.ns, this.poolName(net), (spec0) => {
        round = [];
        lost = [];
        let spec = spec0;
        for (const node of nodes) {
          const b = allocateIP(spec, bridgeOwner(node));
          if (!b.ok) {
            lost.push({ network: net.name, cause: b.cause, message: `bridge of ${node}: ${b.message}` });
            continue;
          }
          spec = b.spec;
          const entry: (typeof round)[number] = { node, bridge: { ip: b.value.ip, mac: b.value.mac } };
          round.push(entry);
          if (!wantsDhcp) continue;
          const d = allocateDhcpRange(spec, dhcpOwner(node));
          if (!d.ok) {
            lost.push({ network: net.name, cause: d.cause, message: `DHCP range of ${node}: ${d.message}` });
            continue;
          }
          spec = d.spec;
          entry.dhcp = { start: d.value.start, stop: d.value.stop };
        }
        return { ok: true, spec, value: undefined };
      });
      if (!r.ok) {
        failures.push({ network: net.name, cause: r.cause, message: r.message });
        continue;
      }
      failures.push(...lost);
      for (const e of round) {
        const h = got.get(e.node)!;
        if (e.bridge) h.bridge[net.name] = e.bridge;
        if (e.dhcp) h.dhcp[net.name] = e.dhcp;
      }
    }
    return { got, failures };
  }

  /**
   * The NICs' addresses of each VM, all of them or none. `isNew` says which VMs
   * have nothing made yet: only theirs are given back when another network is full.
   */
  async vms(
    vms: readonly DesiredVm[],
    isNew: (vm: DesiredVm) => boolean,
  ): Promise<{ got: Map<string, NicAddress[]>; failures: Map<string, AddressFailure> }> {
    const got = new Map<string, NicAddress[]>();
    const failures = new Map<string, AddressFailure>();
    const flavors = new Map(this.pool.spec.nodes.map((f) => [f.name, f]));
    for (const net of this.pool.spec.networks) {
      let round = new Map<string, NicAddress[]>();
      let lost = new Map<string, AddressFailure>();
      const r = await this.store.change(this.ns, this.poolName(net), (spec0) => {
        round = new Map();
        lost = new Map();
        let spec = spec0;
        for (const vm of vms) {
          if (failures.has(vm.name)) continue;
          const nics = (flavors.get(vm.flavor)?.networkInterfaces ?? []).filter(
            (i) => i.network === net.name,
          );
          if (nics.length === 0) continue;
          const a = allocateAll(
            spec,
            nics.map((i) => nicOwner(vm, i.name)),
          );
          if (!a.ok) {
            lost.set(vm.name, { network: net.name, cause: a.cause, message: a.message });
            continue;
          }
          spec = a.spec;
          round.set(
            vm.name,
            nics.map((i, k) => ({
              nic: i.name,
              network: net.name,
              ip: a.value[k]!.ip,
              mac: a.value[k]!.mac!,
              mtu: i.mtu,
            })),
          );
        }
        return { ok: true, spec, value: undefined };
      });
      if (!r.ok) {
        for (const vm of vms)
          failures.set(vm.name, { network: net.name, cause: r.cause, message: r.message });
        continue;
      }
      for (const [name, f] of lost) failures.set(name, f);
      for (const [name, nics] of round) got.set(name, [...(got.get(name) ?? []), ...nics]);
    }
    const giveBack = vms.filter((vm) => failures.has(vm.name) && isNew(vm));
    if (giveBack.length > 0) {
      const prefixes = giveBack.map(vmOwnerPrefix);
      await this.release((o) => prefixes.some((p) => o.startsWith(p)));
    }
    for (const name of failures.keys()) got.delete(name);
    // NICs in the flavor's order, whatever order the networks came in.
    for (const vm of vms) {
      const order = (flavors.get(vm.flavor)?.networkInterfaces ?? []).map((i) => i.name);
      got.get(vm.name)?.sort((a, b) => order.indexOf(a.nic) - order.indexOf(b.nic));
    }
    return { got, failures };
  }

  /** Removes the pool's IPPools (when the pool goes). */
  async deleteAll(): Promise<void> {
    for (const net of this.pool.spec.networks) await this.store.delete(this.ns, this.poolName(net));
  }
}
