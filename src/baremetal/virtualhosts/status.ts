// A VirtualHostPool's status and Ready condition from what one reconcile saw
// and did. Pure: the reasons are typed, the messages say what to do.
import type { BareMetalHost } from '../../api/baremetal.ts';
import type { VirtualHostPoolStatusType } from '../../api/virtualhosts.ts';
import { type Condition, setCondition } from '../../runtime/conditions.ts';
import type { AddressFailure, HypervisorAddresses } from './addresses.ts';
import type { NicAddress } from './network-data.ts';
import type { PoolPlan } from './plan.ts';

export type NotReadyReason =
  | 'InvalidNetwork'
  | 'NoHypervisor'
  | 'HypervisorError'
  | 'NetworkDataError'
  | 'AddressesExhausted'
  | 'NoNodesSelected'
  | 'AgentNotReady'
  | 'ReleasingHosts'
  | 'CreatingHosts';

/** States in which metal3 (or our host controller) offers a host for use. */
const READY_STATES = new Set(['available', 'provisioned', 'externally provisioned']);
export const hostReady = (h: BareMetalHost | undefined): boolean =>
  !!h && !h.metadata.deletionTimestamp && READY_STATES.has(h.status?.provisioning?.state ?? '');

export interface RoundOutcome {
  plan: PoolPlan;
  hypervisorAddresses: Map<string, HypervisorAddresses>;
  vmAddresses: Map<string, NicAddress[]>;
  /** Hosts as they are after this round (made ones included). */
  hosts: Map<string, BareMetalHost>;
  /** Desired VMs whose host, Secrets and machine all exist. */
  made: Set<string>;
  /** VMs that could not get addresses, by name. */
  exhausted: Map<string, AddressFailure>;
  hypervisorFailures: AddressFailure[];
  /** Per-VM problems other than addresses (template, hypervisor), by name. */
  vmErrors: Map<string, { reason: 'NetworkDataError' | 'HypervisorError'; message: string }>;
  /** Hosts given up but still being deleted, and VMs given up whose hypervisors could not be looked up. */
  releasing: string[];
  agentReady: ReadonlySet<string>;
  /** Why there are no hypervisors to define VMs on (HypervisorSource.missing), when there are none. */
  noHypervisor?: string;
}

/** Ready and why not, first problem first. */
export function readyCondition(o: RoundOutcome): {
  status: 'True' | 'False';
  reason: string;
  message: string;
} {
  const desired = o.plan.desired.length;
  const notMade = desired - o.plan.desired.filter((d) => o.made.has(d.name)).length;
  if (o.noHypervisor) return { status: 'False', reason: 'NoHypervisor', message: o.noHypervisor };
  const exhausted = [...o.exhausted.values(), ...o.hypervisorFailures.filter((f) => f.cause === 'exhausted')];
  if (exhausted.length > 0) {
    const nets = [...new Set(exhausted.map((f) => f.network))].sort();
    return {
      status: 'False',
      reason: 'AddressesExhausted',
      message:
        `network ${nets.join(', ')} has no free address left: ${o.exhausted.size} of ${desired} hosts could not be made ` +
        `(${exhausted[0]!.message}); widen the network's static range or lower the flavors' counts`,
    };
  }
  const other = o.hypervisorFailures[0];
  if (other) return { status: 'False', reason: 'InvalidNetwork', message: other.message };
  const err = [...o.vmErrors.entries()][0];
  if (err)
    return {
      status: 'False',
      reason: err[1].reason,
      message: `${o.vmErrors.size} host(s) could not be made; ${err[0]}: ${err[1].message}`,
    };
  if (o.plan.hypervisors.length === 0)
    return {
      status: 'False',
      reason: 'NoNodesSelected',
      message: 'spec.nodeSelector matches no node: label the hypervisor nodes or change the selector',
    };
  if (o.plan.waiting.length > 0) {
    const nodes = [...new Set(o.plan.waiting.map((w) => w.node))].sort();
    return {
      status: 'False',
      reason: 'AgentNotReady',
      message: `waiting for the hypervisor agent pod to be ready on ${nodes.join(', ')}`,
    };
  }
  if (o.releasing.length > 0)
    return { status: 'False', reason: 'ReleasingHosts', message: `releasing ${o.releasing.join(', ')}` };
  if (notMade > 0)
    return {
      status: 'False',
      reason: 'CreatingHosts',
      message: `${desired - notMade} of ${desired} hosts made`,
    };
  return {
    status: 'True',
    reason: 'HostsCreated',
    message: `${desired} hosts on ${o.plan.hypervisors.length} hypervisor node(s)`,
  };
}

export function poolStatus(
  previous: VirtualHostPoolStatusType | undefined,
  generation: number | undefined,
  o: RoundOutcome,
  ready: { status: 'True' | 'False'; reason: string; message: string },
): VirtualHostPoolStatusType {
  const conditions: Condition[] = setCondition(previous?.conditions as Condition[] | undefined, {
    type: 'Ready',
    ...ready,
    observedGeneration: generation,
  });
  const hypervisors = o.plan.hypervisors.map((node) => {
    const a = o.hypervisorAddresses.get(node);
    const vms = o.plan.desired
      .filter((d) => d.node === node)
      .map((d) => {
        const host = o.hosts.get(d.name);
        const nics = o.vmAddresses.get(d.name) ?? [];
        return {
          name: d.name,
          flavor: d.flavor,
          ...(nics.length
            ? { addresses: nics.map((n) => ({ network: n.network, interface: n.nic, ip: n.ip, mac: n.mac })) }
            : {}),
          ...(host?.spec.bootMACAddress ? { bootMAC: host.spec.bootMACAddress } : {}),
          ...(host?.spec.bmc?.address ? { bmcAddress: host.spec.bmc.address } : {}),
          hostReady: hostReady(host),
        };
      });
    return {
      node,
      bridgeAddresses: Object.entries(a?.bridge ?? {}).map(([network, b]) => ({
        network,
        ip: b.ip,
        mac: b.mac,
      })),
      dhcpRanges: Object.entries(a?.dhcp ?? {}).map(([network, r]) => ({ network, ...r })),
      agentReady: o.agentReady.has(node),
      vms,
    };
  });
  return {
    observedGeneration: generation,
    conditions: conditions as VirtualHostPoolStatusType['conditions'],
    desiredHosts: o.plan.desired.length,
    createdHosts: o.plan.desired.filter((d) => o.made.has(d.name)).length,
    readyHosts: o.plan.desired.filter((d) => hostReady(o.hosts.get(d.name))).length,
    hypervisors,
  };
}
