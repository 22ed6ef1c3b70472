// The soak's share on real libvirt VM hosts (`cluster up --vm-hosts`): a
// VirtualHostPool whose VMs are real QEMU domains, scaled and its hosts'
// `online` flipped on a seeded schedule, and the VM hosts' own faults on
// another: a domain destroyed behind the operator's back (`virsh destroy`, as
// a user would), a VM host agent killed and started again as `cluster up`
// starts a missing one (its libvirtd and guests go with it), an operator
// replica killed. What the invariants read is libvirt's truth: each node's
// domains and their states through `virsh`, the addresses their definitions
// carry.
import { type BareMetalHost, BareMetalHosts } from '../../src/api/baremetal.ts';
import { type IPPool, IPPools, type VirtualHostPool, VirtualHostPools } from '../../src/api/virtualhosts.ts';
import { recordOf } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/domain-xml.ts';
import { type DomainState, Virsh } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/virsh.ts';
import { machineId, POOL_LABEL, vmOfOwner } from '../../src/baremetal/virtualhosts/objects.ts';
import { infraDir } from '../../src/cluster/control-plane.ts';
import { runningPid } from '../../src/cluster/infra/kit/process.ts';
import { seededRandom } from '../../src/cluster/infra/kit/random.ts';
import { agentOf, vmHostsAddon } from '../../src/cluster/infra/vm-hosts/addon.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { type K8sObject, Nodes } from '../../src/runtime/resources.ts';
import { openLocalClusters } from '../harness/local-clusters.ts';
import { oamNetwork } from '../harness/pools.ts';
import { poolAddressViews } from './baremetal.ts';
import type { AddressView, HostView, VmView } from './invariants.ts';
import type { Replicas } from './replicas.ts';
import { SteppedLoad } from './stepping.ts';

export const LV_NAMESPACE = 'default';
export const LV_POOL = 'lvsoak';
export const LV_HYPERVISOR_LABEL = 'soak.nodewarden.dev/vm-host';
/** The pool's VMs per node, scaled within 1..MAX_VMS_PER_NODE. */
export const MAX_VMS_PER_NODE = 3;

type Host = BareMetalHost & K8sObject;
type Pool = VirtualHostPool & K8sObject;

// ------------------------------------------------------------------ the plan

export type LibvirtFaultKind = 'domainDestroyed' | 'agentRestart' | 'operatorKill';
export const LIBVIRT_FAULT_KINDS: readonly LibvirtFaultKind[] = [
  'domainDestroyed',
  'agentRestart',
  'operatorKill',
];

/**
 * The kinds drawn after the first round. WHY no agent restart: `cluster up` takes ~30 s here to
 * start an agent again (its KVM probe first), so one a run keeps the file within `make test`'s time.
 */
const LATER_KINDS = LIBVIRT_FAULT_KINDS.filter((k) => k !== 'agentRestart');

/**
 * One fault on `node`'s VM host or of an operator replica. `pick` (0..1) chooses which running
 * domain is destroyed; downMs is how long an agent or a replica stays down; durationMs is the
 * fault track's hold after apply returns.
 */
export interface LibvirtFault {
  kind: LibvirtFaultKind;
  at: number;
  downMs: number;
  durationMs: number;
  node?: string;
  pick?: number;
}

/**
 * The VM hosts' faults for a seed: every kind once (seeded order) from startMs, then seeded picks,
 * a seeded gap after each. Pure: a failing seed replays exactly.
 */
export function planLibvirtFaults(o: {
  seed: number;
  durationMs: number;
  nodes: readonly string[];
  startMs?: number;
}): LibvirtFault[] {
  const random = seededRandom(o.seed ^ 0x11b7);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const firstRound = [...LIBVIRT_FAULT_KINDS];
  for (let i = firstRound.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [firstRound[i], firstRound[j]] = [firstRound[j]!, firstRound[i]!];
  }
  const out: LibvirtFault[] = [];
  let at = o.startMs ?? 10_000;
  while (at < o.durationMs) {
    const kind = firstRound.shift() ?? LATER_KINDS[Math.floor(random() * LATER_KINDS.length)]!;
    const downMs = between(500, 3_000);
    const node = o.nodes[between(0, o.nodes.length - 1)]!;
    if (kind === 'operatorKill') out.push({ kind, at, downMs, durationMs: downMs });
    else if (kind === 'agentRestart') out.push({ kind, at, downMs, durationMs: 0, node });
    else out.push({ kind, at, downMs: 0, durationMs: 0, node, pick: random() });
    // An agent's start again (seconds) and the host controller's next resync fit in the gap.
    at += downMs + between(8_000, 12_000);
  }
  return out;
}

export function describeLibvirtFault(f: LibvirtFault): string {
  switch (f.kind) {
    case 'operatorKill':
      return `SIGKILL the operator's leader, restart it after ${f.downMs} ms`;
    case 'agentRestart':
      return `SIGKILL the VM host agent of ${f.node}, \`cluster up\` after ${f.downMs} ms`;
    case 'domainDestroyed':
      return `virsh destroy a running domain on ${f.node}`;
  }
}

/** One step of the load: the pool scaled to `count` VMs per node, or one host's `online` flipped. */
export type LibvirtStep = { kind: 'scale'; count: number } | { kind: 'flip'; pick: number };

/** The load's steps for a seed: about a third scalings (1..max per node), the rest flips. Pure. */
export function planLibvirtLoad(seed: number, steps: number, maxPerNode = MAX_VMS_PER_NODE): LibvirtStep[] {
  const random = seededRandom(seed ^ 0x7a11);
  return Array.from({ length: steps }, (): LibvirtStep => {
    if (random() < 0.35) return { kind: 'scale', count: 1 + Math.floor(random() * maxPerNode) };
    return { kind: 'flip', pick: random() };
  });
}

// ------------------------------------------------------------ libvirt's truth

/** A domain's power as the invariants name it (undefined: no such domain). */
export function powerOfDomain(state: DomainState | undefined): HostView['power'] {
  switch (state) {
    case undefined:
      return 'Missing';
    case 'running':
    case 'idle':
    case 'paused':
      return 'On';
    case 'in shutdown':
      return 'PoweringOff';
    default:
      return 'Off';
  }
}

/** One node's domains as one sample read them; `down`: its libvirtd did not answer. */
export interface NodeDomains {
  node: string;
  down: boolean;
  states: ReadonlyMap<string, DomainState>;
  /** Each domain's addresses, from the record its definition carries. */
  ips: ReadonlyMap<string, readonly string[]>;
}

/** The node a host of the pool runs on, from its name (`<pool>-<node>-<flavor>-<index>`). */
export const nodeOfHost = (host: string, nodes: readonly string[]) =>
  nodes.find((n) => host.startsWith(`${LV_POOL}-${n}-`));

/**
 * The pool's hosts beside their domains' power. A host is `faulted` (not judged) while its node's
 * agent is being restarted by the soak (`restarting`) or its libvirtd does not answer.
 */
export function libvirtHostViews(
  hosts: readonly { name: string; online: boolean; errorCount: number; deleting: boolean }[],
  domains: readonly NodeDomains[],
  restarting: (node: string) => boolean,
): HostView[] {
  const nodes = domains.map((d) => d.node);
  return hosts.map((h) => {
    const node = nodeOfHost(h.name, nodes);
    const d = domains.find((x) => x.node === node);
    const domain = machineId(LV_NAMESPACE, h.name);
    return {
      name: `${LV_NAMESPACE}/${h.name}`,
      online: h.online,
      power: d && !d.down ? powerOfDomain(d.states.get(domain)) : 'Missing',
      faulted: node === undefined || d === undefined || d.down || restarting(node),
      errorCount: h.errorCount,
      deleting: h.deleting,
    };
  });
}

/** The addresses, each marked faulted while its VM's node is being restarted or its libvirtd does not answer. */
export function markFaultedAddresses(
  addresses: readonly AddressView[],
  domains: readonly NodeDomains[],
  restarting: (node: string) => boolean,
): AddressView[] {
  const down = new Set(domains.filter((d) => d.down).map((d) => d.node));
  return addresses.map((a) => {
    const node = vmOfOwner(a.owner)?.node;
    return node !== undefined && (down.has(node) || restarting(node)) ? { ...a, faulted: true } : a;
  });
}

/** The pool's domains as VMs, with the addresses their definitions carry. */
export function libvirtVmViews(domains: readonly NodeDomains[]): VmView[] {
  const prefix = machineId(LV_NAMESPACE, `${LV_POOL}-`);
  return domains.flatMap((d) =>
    [...d.states.keys()]
      .filter((name) => name.startsWith(prefix))
      .map((name) => ({ id: name, pool: `${LV_NAMESPACE}/${LV_POOL}`, ips: [...(d.ips.get(name) ?? [])] })),
  );
}

/** What still differs from the settled state of the pool and its hosts; '' when converged. */
export function libvirtUnconverged(o: {
  pool: Pick<Pool, 'spec' | 'status' | 'metadata'>;
  nodes: number;
  hosts: readonly Host[];
  domains: readonly NodeDomains[];
  addresses: readonly AddressView[];
}): string {
  const out: string[] = [];
  const size = (o.pool.spec.nodes[0]?.count ?? 0) * o.nodes;
  const views = libvirtHostViews(
    o.hosts.map((h) => ({
      name: h.metadata.name!,
      online: h.spec.online === true,
      errorCount: 0,
      deleting: false,
    })),
    o.domains,
    () => false,
  );
  for (const h of o.hosts) {
    const state = h.status?.provisioning?.state;
    const power = views.find((v) => v.name === `${LV_NAMESPACE}/${h.metadata.name}`)?.power;
    const want = h.spec.online ? 'On' : 'Off';
    if (state !== 'available' || h.status?.errorType || power !== want || h.metadata.deletionTimestamp)
      out.push(
        `host ${h.metadata.name}: ${state}${h.status?.errorType ? ` (${h.status.errorType})` : ''}${h.metadata.deletionTimestamp ? ', deleting' : ''}, domain ${power}, want available and ${want}`,
      );
  }
  const down = o.domains.filter((d) => d.down).map((d) => d.node);
  if (down.length) out.push(`libvirtd of ${down.join(', ')} not answering`);
  const ready = o.pool.status?.conditions?.find((c) => c.type === 'Ready');
  const vms = libvirtVmViews(o.domains).length;
  if (
    ready?.status !== 'True' ||
    ready.observedGeneration !== o.pool.metadata.generation ||
    o.pool.status?.readyHosts !== size ||
    o.hosts.length !== size ||
    vms !== size ||
    o.addresses.length !== size
  )
    out.push(
      `pool ${LV_POOL}: Ready ${ready?.status} (${ready?.reason}), ${o.pool.status?.readyHosts} hosts ready, ${o.hosts.length} hosts, ${vms} domains, ${o.addresses.length} VM addresses, size ${size}`,
    );
  return out.join('; ');
}

/**
 * What a deleted cluster must not leave of its VM hosts: a namespace, a state folder (libvirtd's
 * definitions, volumes and networks), or a process naming that folder (guests, libvirtd, virtlogd).
 */
export function libvirtLeftovers(
  agents: readonly { node: string; netns: string; state: string }[],
  seen: { netns: readonly string[]; cmdlines: readonly string[]; exists: (path: string) => boolean },
): string[] {
  const out: string[] = [];
  for (const a of agents) {
    if (seen.netns.includes(a.netns)) out.push(`${a.node}: network namespace ${a.netns}`);
    if (seen.exists(a.state)) out.push(`${a.node}: state folder ${a.state}`);
    for (const c of seen.cmdlines.filter((c) => c.includes(`${a.state}/`)))
      out.push(`${a.node}: process ${c.slice(0, 100)}`);
  }
  return out;
}

// ------------------------------------------------------------- the live side

/** `cluster up --vm-hosts` made these: each node's agent, its libvirtd reached through the socket in its state folder. */
export function vmHostOf(cluster: string, node: string) {
  const a = agentOf({ dir: infraDir(cluster, vmHostsAddon.name) }, node);
  return { node, ...a, virsh: new Virsh(`qemu:///system?socket=${a.state}/libvirtd/sock/libvirt-sock`) };
}
export type VmHost = ReturnType<typeof vmHostOf>;

/** Reads libvirt's truth on every node: domain states in one call, each new domain's addresses once. */
export class LibvirtTruth {
  private readonly hosts: readonly VmHost[];
  /** Addresses by domain name and node; forgotten once a read no longer lists the domain. */
  private readonly ips = new Map<string, readonly string[]>();

  constructor(hosts: readonly VmHost[]) {
    this.hosts = hosts;
  }

  async read(): Promise<NodeDomains[]> {
    return Promise.all(this.hosts.map((h) => this.readNode(h)));
  }

  private async readNode(h: VmHost): Promise<NodeDomains> {
    let states: Map<string, DomainState>;
    try {
      states = await h.virsh.domainStates();
    } catch {
      return { node: h.node, down: true, states: new Map(), ips: new Map() };
    }
    const ips = new Map<string, readonly string[]>();
    for (const name of states.keys()) {
      const key = `${h.node}/${name}`;
      let got = this.ips.get(key);
      if (!got) {
        const xml = await h.virsh.domainXml(name).catch(() => undefined);
        const record = xml ? recordOf(xml) : undefined;
        if (!record) continue;
        got = record.definition.nics.flatMap((n) => (n.ip ? [n.ip] : []));
        this.ips.set(key, got);
      }
      ips.set(name, got);
    }
    for (const key of this.ips.keys())
      if (key.startsWith(`${h.node}/`) && !states.has(key.slice(h.node.length + 1))) this.ips.delete(key);
    return { node: h.node, down: false, states, ips };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * How long after an agent is serving again its hosts are still the restart's. WHY 10 s: the
 * pool controller learns of the new agent from its published Secret and defines the VMs again,
 * each switched off; until then the host controller's reads of the old address fail. The
 * power clock starts once this has passed (the host's error backoff is owed on top).
 */
export const AGENT_SETTLE_MS = 10_000;

/** Applies the VM hosts' faults, and tells which nodes' agents are being (or were just) restarted. */
export class LibvirtFaults {
  private readonly windows = new Map<string, { from: number; back?: number }[]>();
  private agentsDown = false;
  private readonly cluster: string;
  private readonly hosts: readonly VmHost[];
  private readonly replicas: Replicas;
  private readonly client: KubeClient;

  constructor(cluster: string, hosts: readonly VmHost[], replicas: Replicas, client: KubeClient) {
    this.cluster = cluster;
    this.hosts = hosts;
    this.replicas = replicas;
    this.client = client;
  }

  async apply(f: LibvirtFault, note: (detail: string) => void): Promise<void> {
    if (f.kind === 'operatorKill') {
      const holder = leaderOrFirst(this.replicas, await this.replicas.holder(this.client));
      note(` (${holder.name})`);
      await this.replicas.kill(holder);
      return;
    }
    const host = this.hosts.find((h) => h.node === f.node)!;
    if (f.kind === 'domainDestroyed') {
      note(` (${await this.destroy(host, f.pick ?? 0)})`);
      return;
    }
    const pid = runningPid(host.proc);
    if (pid === undefined) throw new Error(`the VM host agent of ${host.node} does not run`);
    const window: { from: number; back?: number } = { from: Date.now() };
    this.windows.set(host.node, [...(this.windows.get(host.node) ?? []), window]);
    this.agentsDown = true;
    process.kill(pid, 'SIGKILL');
    await sleep(f.downMs);
    const t = Date.now();
    await this.upAgain();
    window.back = Date.now();
    note(` (serving again in ${((Date.now() - t) / 1000).toFixed(1)} s)`);
  }

  /** After every fault, held or failed: every replica runs, and every node's agent. */
  async clear(): Promise<void> {
    for (const r of this.replicas.all) if (!r.process) this.replicas.restart(r);
    if (this.agentsDown) {
      await this.upAgain();
      for (const w of [...this.windows.values()].flat()) w.back ??= Date.now();
    }
  }

  /** Whether the node's agent was being restarted at `at`, or was back less than AGENT_SETTLE_MS before. */
  restarting(node: string, at: number): boolean {
    return (this.windows.get(node) ?? []).some(
      (w) => at >= w.from && (w.back === undefined || at <= w.back + AGENT_SETTLE_MS),
    );
  }

  /** `cluster up` of the running cluster: it starts the VM host agents that do not run. */
  private async upAgain(): Promise<void> {
    await (await openLocalClusters({ quiet: true })).up({ name: this.cluster });
    this.agentsDown = false;
  }

  /**
   * `virsh destroy` of one of the pool's running domains, as a user would: on the node, else on
   * another. WHY it may wait (up to 30 s): just after an agent's restart, or with every host
   * switched off by the load, no domain runs until the operator has started one.
   */
  private async destroy(first: VmHost, pick: number): Promise<string> {
    const prefix = machineId(LV_NAMESPACE, `${LV_POOL}-`);
    const order = [first, ...this.hosts.filter((h) => h !== first)];
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(1_000)) {
      for (const host of order) {
        const states = await host.virsh.domainStates().catch(() => new Map<string, DomainState>());
        const running = [...states.entries()]
          .filter(([name, state]) => name.startsWith(prefix) && state === 'running')
          .map(([name]) => name)
          .sort();
        const victim = running[Math.floor(pick * running.length)];
        if (!victim) continue;
        await host.virsh.run(['destroy', victim]);
        return `${victim} on ${host.node}`;
      }
    }
    throw new Error('no running domain of the pool on any VM host for 30 s');
  }
}

/** The replica holding the lease, or the first when none does. */
function leaderOrFirst(replicas: Replicas, holder: string | undefined) {
  return replicas.byName(holder) ?? replicas.all[0]!;
}

/** The pool's load: created on the VM-host nodes, then scaled and its hosts' `online` flipped by the plan. */
export class LibvirtLoad extends SteppedLoad {
  readonly did: Record<string, number> = {};
  private readonly client: KubeClient;
  private readonly plan: LibvirtStep[];
  private next = 0;

  constructor(client: KubeClient, seed: number) {
    super();
    this.client = client;
    this.plan = planLibvirtLoad(seed, 1_000);
  }

  /** Labels the nodes and makes the pool at `count` VMs per node. */
  async setUp(nodes: readonly string[], count: number): Promise<void> {
    for (const node of nodes)
      await this.client.patch(
        Nodes,
        node,
        undefined,
        { metadata: { labels: { [LV_HYPERVISOR_LABEL]: 'true' } } },
        { type: 'merge' },
      );
    await this.client.create(VirtualHostPools.type, poolObject(count) as never);
  }

  run(everyMs: number): Promise<void> {
    return this.stepEvery(everyMs, () => this.step());
  }

  private async step(): Promise<void> {
    const s = this.plan[this.next++ % this.plan.length]!;
    if (s.kind === 'scale') {
      await this.client.patch(
        VirtualHostPools.type,
        LV_POOL,
        LV_NAMESPACE,
        { spec: { nodes: [flavor(s.count)] } },
        { type: 'merge' },
      );
      this.count(`pool scaled to ${s.count}/node`);
      return;
    }
    const hosts = (await this.hosts()).filter((h) => !h.metadata.deletionTimestamp);
    const h = hosts[Math.floor(s.pick * hosts.length)];
    if (!h) return;
    await this.client.patch(
      BareMetalHosts.type,
      h.metadata.name!,
      LV_NAMESPACE,
      { spec: { online: !h.spec.online } },
      { type: 'merge' },
    );
    this.count('online flipped');
  }

  private count(what: string): void {
    this.did[what] = (this.did[what] ?? 0) + 1;
  }

  async hosts(): Promise<Host[]> {
    const list = await this.client.list<Host>(BareMetalHosts.type, {
      namespace: LV_NAMESPACE,
      labelSelector: `${POOL_LABEL}=${LV_POOL}`,
    });
    return list.items.sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
  }

  async addresses(): Promise<AddressView[]> {
    const pools = await this.client.list<IPPool & K8sObject>(IPPools.type, {
      namespace: LV_NAMESPACE,
      labelSelector: `${POOL_LABEL}=${LV_POOL}`,
    });
    return poolAddressViews(pools.items, LV_NAMESPACE, LV_POOL);
  }

  pool(): Promise<Pool> {
    return this.client.get<Pool>(VirtualHostPools.type, LV_POOL, LV_NAMESPACE);
  }
}

const flavor = (count: number) => ({
  name: 'vm',
  count,
  cpus: 1,
  memoryMiB: 128,
  diskGB: 1,
  networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
});

function poolObject(count: number) {
  return {
    apiVersion: VirtualHostPools.apiVersion,
    kind: 'VirtualHostPool',
    metadata: { name: LV_POOL, namespace: LV_NAMESPACE },
    spec: {
      nodeSelector: { matchLabels: { [LV_HYPERVISOR_LABEL]: 'true' } },
      networks: [oamNetwork({ dnsServers: ['192.168.0.2'] })],
      nodes: [flavor(count)],
      bmcCredentials: { username: 'admin', password: 'lv-soak' },
    },
  };
}
