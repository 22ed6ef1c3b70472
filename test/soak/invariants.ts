// The soak's invariants: pure checks over snapshots sampled from outside the
// operator. A checker is fed samples as they finish (not always in the order they
// began: see begunBeforeArmed) and keeps the little state
// the checks need (which PDBs and groups are armed: a Deployment still starting
// is not a PDB violation); everything it says is a Violation with the sample time.
import { errorBackoffMs } from '../../src/baremetal/hosts/planner.ts';
import type { KvmSample } from './kvm-invariants.ts';

export interface PodView {
  /** For the messages and dumps only. */
  name?: string;
  namespace: string;
  labels: Record<string, string>;
  ready: boolean;
  deleting: boolean;
  /** The node it runs on. */
  node?: string;
  /** Who disrupted it: its DisruptionTarget condition's reason (EvictionByEvictionAPI, DeletionByPodGC, ...). */
  disruption?: string;
}
export interface PdbView {
  namespace: string;
  name: string;
  matchLabels: Record<string, string>;
  minAvailable: number;
}
export interface NodeView {
  name: string;
  /** Its Ready condition is True; false when its heartbeat was lost (absent: Ready). */
  ready?: boolean;
  unschedulable: boolean;
  /** Taint keys. */
  taints: string[];
  /**
   * Its kubelet or containerd is being restarted by the soak, or was moments ago (a real node's
   * fault): its pods may turn not-Ready while their probes start again, which is no eviction.
   */
  runtimeRestarting?: boolean;
}
export interface InstanceView {
  groupId: string;
  state: string;
}
/** A rollout group and the budgets it must stay within. */
export interface GroupBudget {
  id: string;
  size: number;
  maxSurge: number;
  maxUnavailable: number;
}

/** A BareMetalHost beside its machine at the BMC fleet, read from outside the operator. */
export interface HostView {
  /** namespace/name. */
  name: string;
  /** spec.online. */
  online: boolean;
  /** What the fleet says of the machine's power; Missing: the fleet has no such machine. */
  power: 'On' | 'Off' | 'PoweringOn' | 'PoweringOff' | 'Missing';
  /** A BMC fault (unreachable, refused logins, failing power, vanished) names it now. */
  faulted: boolean;
  /** status.errorCount: the operator backs off this host by errorBackoffMs(errorCount). */
  errorCount: number;
  deleting: boolean;
}
/** An address a pool's IPPool hands to one NIC of one VM. */
export interface AddressView {
  /** namespace/pool. */
  pool: string;
  /** The IPAM owner key, vm/<node>/<flavor>/<index>/<nic>. */
  owner: string;
  ip: string;
  /** The fleet machine id of the VM the owner key names. */
  vm: string;
  /**
   * Its VM's hypervisor is faulted (a VM host agent being restarted, its libvirtd not answering):
   * whether the VM is there cannot be seen, and the address is not judged (its clock starts again after).
   */
  faulted?: boolean;
}
/** A pool's VM as the fleet (the hypervisors) has it. */
export interface VmView {
  id: string;
  /** namespace/pool. */
  pool: string;
  ips: string[];
}

/**
 * Tenant clusters and the hosts they hold. The clusters are read before and after the hosts,
 * and a claim may name a cluster in either read: one made in between claims after the first,
 * one deleted in between gave its hosts back (its finalizer) before the second.
 */
export interface TenantSample {
  /** namespace/name of every TenantCluster in either read (being deleted included). */
  clusters: string[];
  /** A host's claim labels: the cluster (namespace/name) that holds it. */
  claims: { host: string; cluster: string }[];
  /** The hosts each cluster's status lists as its own. */
  listed: { cluster: string; host: string }[];
}

export interface Sample {
  at: number;
  pods: PodView[];
  pdbs: PdbView[];
  /** Listed after the maintenances, so a maintenance seen gone means its node was let go before. */
  nodes: NodeView[];
  /** Node names with a NodeMaintenance (a deleting one included: its finalizer uncordons first). */
  maintained: string[];
  instances: InstanceView[];
  /** Bare metal, when loaded: hosts (physical and the pools' VMs) with their machines' power. */
  hosts?: HostView[];
  /** The pools' VM addresses, read before the VMs (a VM made in between holds its address already). */
  vmAddresses?: AddressView[];
  vms?: VmView[];
  tenants?: TenantSample;
  /** The KVM workload clusters, when loaded (kvm-invariants.ts). */
  kvm?: KvmSample;
  /**
   * The Lease was renewed moments before (see LEADER_AT_WORK_MS): a leader is at work. Absent:
   * taken as true. The bounds on a correction count only such time: without a leader nothing
   * can be corrected, and the leader's own faults have their own checks (failover, twoActors).
   */
  leaderAtWork?: boolean;
}

export interface Violation {
  at: number;
  invariant:
    | 'pdb'
    | 'ownership'
    | 'overProvisioned'
    | 'underSize'
    | 'twoActors'
    | 'notConverged'
    | 'power'
    | 'ipTwice'
    | 'ipLeaked'
    | 'tenantHosts'
    | 'vmDrain'
    | 'kvmPdb'
    | 'mastersOut';
  message: string;
}

/** The bounds the bare-metal invariants allow, stated by the soak that runs them. */
export interface Bounds {
  /** A host's power disagreeing with spec.online is corrected within this (plus any error backoff it is owed). */
  powerMs: number;
  /** An address stays allocated at most this long after its VM is gone. */
  leakMs: number;
}

/** Hosts held by a cluster that does not exist, or listed as held by two clusters. */
export function tenantHostProblems(t: TenantSample): string[] {
  const out: string[] = [];
  const clusters = new Set(t.clusters);
  for (const c of t.claims)
    if (!clusters.has(c.cluster)) out.push(`host ${c.host} is held by ${c.cluster}, which does not exist`);
  const holders = new Map<string, Set<string>>();
  for (const l of t.listed) holders.set(l.host, (holders.get(l.host) ?? new Set()).add(l.cluster));
  for (const [host, cs] of holders)
    if (cs.size > 1) out.push(`host ${host} is held by ${[...cs].sort().join(' and ')}`);
  return out;
}

/** Whether the machine's power is (or is on its way to) what spec.online asks. */
export function powerAgrees(h: Pick<HostView, 'online' | 'power'>): boolean {
  return h.online
    ? h.power === 'On' || h.power === 'PoweringOn'
    : h.power === 'Off' || h.power === 'PoweringOff';
}

/** "pool p: 10.0.0.5 given to VMs a and b", for every address two VMs of one pool hold. */
export function addressesTwice(addresses: readonly AddressView[], vms: readonly VmView[]): string[] {
  const out: string[] = [];
  const twice = (what: string, pairs: Iterable<[string, string, string]>) => {
    const holders = new Map<string, Set<string>>();
    for (const [pool, ip, vm] of pairs) {
      const k = `${pool} ${ip}`;
      holders.set(k, (holders.get(k) ?? new Set()).add(vm));
    }
    for (const [k, vs] of holders) {
      if (vs.size < 2) continue;
      const [pool, ip] = k.split(' ');
      out.push(`pool ${pool}: ${ip} given to VMs ${[...vs].sort().join(' and ')} (${what})`);
    }
  };
  twice(
    'its IPPool',
    addresses.map((a) => [a.pool, a.ip, a.vm]),
  );
  twice(
    'their NICs at the hypervisor',
    vms.flatMap((v) => v.ips.map((ip): [string, string, string] => [v.pool, ip, v.id])),
  );
  return out;
}

/**
 * Taint keys the operator puts on a node it maintains. WHY not node.kubernetes.io/unschedulable:
 * the controller-manager mirrors spec.unschedulable into it, a moment late; the cordon itself is checked.
 */
export const OUR_TAINTS = ['nodewarden.dev/drain'];

const LIVE = new Set(['Unknown', 'Creating', 'Ready']);

export function healthyPods(pods: readonly PodView[], pdb: PdbView): number {
  const sel = Object.entries(pdb.matchLabels);
  // As the disruption controller counts: Ready and not being deleted.
  return pods.filter(
    (p) =>
      p.namespace === pdb.namespace && p.ready && !p.deleting && sel.every(([k, v]) => p.labels[k] === v),
  ).length;
}

/**
 * Pods of the PDB that are not Ready only because their node lost its heartbeat
 * (every pod on a NotReady node turns not-Ready: an involuntary disruption, which
 * no PDB and no operator can prevent; evictions are the voluntary ones), or had
 * its kubelet or containerd restarted (its probes start again: no eviction either).
 * An evicted pod is deleting, and never counted here.
 */
export function podsOnLostNodes(s: Pick<Sample, 'pods' | 'nodes'>, pdb: PdbView): number {
  const lost = new Set(
    s.nodes.filter((n) => n.ready === false || n.runtimeRestarting === true).map((n) => n.name),
  );
  const sel = Object.entries(pdb.matchLabels);
  return s.pods.filter(
    (p) =>
      p.namespace === pdb.namespace &&
      !p.ready &&
      !p.deleting &&
      p.node !== undefined &&
      lost.has(p.node) &&
      sel.every(([k, v]) => p.labels[k] === v),
  ).length;
}

/**
 * " (of 3 pods; web-1 on n2: not Ready; web-2 on n3: deleting, EvictionByEvictionAPI)": the PDB's
 * pods and those that do not count, with who disrupted them, for the reader.
 */
function unhealthyNote(pods: readonly PodView[], pdb: PdbView): string {
  const sel = Object.entries(pdb.matchLabels);
  const matched = pods.filter(
    (p) => p.namespace === pdb.namespace && sel.every(([k, v]) => p.labels[k] === v),
  );
  const not = matched
    .filter((p) => !p.ready || p.deleting)
    .map(
      (p) =>
        `${p.name ?? '?'} on ${p.node ?? 'no node'}: ${p.deleting ? 'deleting' : 'not Ready'}` +
        (p.disruption ? `, ${p.disruption}` : ''),
    );
  return ` (of ${matched.length} pods${not.map((n) => `; ${n}`).join('')})`;
}

/** Nodes cordoned or carrying our taints with no NodeMaintenance that owns them. */
export function unownedNodes(s: Pick<Sample, 'nodes' | 'maintained'>): string[] {
  const owned = new Set(s.maintained);
  return s.nodes
    .filter((n) => (n.unschedulable || n.taints.some((t) => OUR_TAINTS.includes(t))) && !owned.has(n.name))
    .map((n) => n.name);
}

/**
 * A sample begun before the one that armed a check is not judged by it. WHY: the sampler runs
 * two lanes, so samples finish out of order; one begun first and finished last can show a
 * Deployment or group still starting after a later sample armed its check (seen: a group at
 * "0 Ready instances" seconds into a run, before any fault). Only the first moments of a
 * check go unjudged: every sample begun after the arming one is judged.
 */
function begunBeforeArmed(s: Sample, armedAt: number): boolean {
  return s.at < armedAt;
}

/** How long something has been wrong: since when, and for how much of that a leader was at work. */
interface Episode {
  since: number;
  /** The latest sample counted (samples may finish out of order: an older one adds nothing). */
  lastAt: number;
  atWorkMs: number;
  said: boolean;
}
const episode = (s: Sample): Episode => ({ since: s.at, lastAt: s.at, atWorkMs: 0, said: false });
/** Adds the time since the episode's last sample, when a leader was at work at this one. */
function tick(e: Episode, s: Sample): void {
  if (s.at <= e.lastAt) return;
  if (s.leaderAtWork !== false) e.atWorkMs += s.at - e.lastAt;
  e.lastAt = s.at;
}
const lasted = (e: Episode, s: Sample) =>
  `${((s.at - e.since) / 1000).toFixed(1)} s (${(e.atWorkMs / 1000).toFixed(1)} s of it with a leader at work)`;

export class InvariantChecker {
  readonly violations: Violation[] = [];
  /** PDB samples below minimum only because nodes lost their heartbeat (not the operator's doing). */
  readonly involuntary: Violation[] = [];
  samples = 0;
  /** Armed PDBs and groups, each with the start time of the sample that armed it. */
  private readonly armedPdbs = new Map<string, number>();
  private readonly armedGroups = new Map<string, number>();
  private readonly groups: readonly GroupBudget[];
  private readonly bounds: Bounds;
  /** Hosts whose power has agreed with spec.online once (before that they are still registering). */
  private readonly armedHosts = new Map<string, number>();
  /** Hosts disagreeing now: the episode's clock, the most error backoff they were owed, and whether said. */
  private readonly disagreeing = new Map<string, Episode & { errorCount: number }>();
  /** Addresses whose VM is gone: the episode's clock, and whether said. */
  private readonly orphans = new Map<string, Episode>();
  /** The checks of a load with its own (the KVM clusters': kvm-invariants.ts), after these. */
  readonly extraChecks: ((s: Sample) => Violation[])[] = [];

  constructor(groups: readonly GroupBudget[], bounds: Bounds = { powerMs: 35_000, leakMs: 60_000 }) {
    this.groups = groups;
    this.bounds = bounds;
  }

  check(s: Sample): Violation[] {
    this.samples++;
    const found: Violation[] = [];
    const add = (invariant: Violation['invariant'], message: string) =>
      found.push({ at: s.at, invariant, message });

    for (const pdb of s.pdbs) {
      const key = `${pdb.namespace}/${pdb.name}`;
      const healthy = healthyPods(s.pods, pdb);
      // Armed once it has been met: before that its Deployment is still starting.
      if (!this.armedPdbs.has(key)) {
        if (healthy >= pdb.minAvailable) this.armedPdbs.set(key, s.at);
        continue;
      }
      if (healthy >= pdb.minAvailable || begunBeforeArmed(s, this.armedPdbs.get(key)!)) continue;
      const message = `PDB ${key}: ${healthy} healthy pods, fewer than minAvailable ${pdb.minAvailable}${unhealthyNote(s.pods, pdb)}`;
      const lost = podsOnLostNodes(s, pdb);
      if (healthy + lost >= pdb.minAvailable) {
        this.involuntary.push({
          at: s.at,
          invariant: 'pdb',
          message: `${message}; ${lost} on nodes that lost their heartbeat or had their runtime restarted`,
        });
      } else add('pdb', message);
    }
    for (const name of unownedNodes(s))
      add('ownership', `node ${name} is cordoned or tainted by us with no NodeMaintenance owning it`);

    for (const g of this.groups) {
      const of = s.instances.filter((i) => i.groupId === g.id);
      const live = of.filter((i) => LIVE.has(i.state)).length;
      const ready = of.filter((i) => i.state === 'Ready').length;
      if (live > g.size + g.maxSurge)
        add(
          'overProvisioned',
          `group ${g.id}: ${live} live instances, more than ${g.size} + surge ${g.maxSurge}`,
        );
      if (!this.armedGroups.has(g.id)) {
        if (ready >= g.size) this.armedGroups.set(g.id, s.at);
        continue;
      }
      if (ready < g.size - g.maxUnavailable && !begunBeforeArmed(s, this.armedGroups.get(g.id)!))
        add(
          'underSize',
          `group ${g.id}: ${ready} Ready instances, fewer than ${g.size} - unavailable ${g.maxUnavailable}`,
        );
    }
    this.checkPower(s, add);
    this.checkAddresses(s, add);
    for (const m of s.tenants ? tenantHostProblems(s.tenants) : []) add('tenantHosts', m);
    for (const more of this.extraChecks) found.push(...more(s));
    this.violations.push(...found);
    return found;
  }

  /**
   * A host's power disagreeing with spec.online longer than the bound, once per episode. Not
   * judged: a host being deleted, one a BMC fault names (nobody can reach it; its clock starts
   * again after), one whose machine the fleet does not list, and one not yet registered.
   */
  private checkPower(s: Sample, add: (i: Violation['invariant'], m: string) => void): void {
    for (const h of s.hosts ?? []) {
      if (h.deleting || h.faulted || h.power === 'Missing') {
        this.disagreeing.delete(h.name);
        continue;
      }
      const agrees = powerAgrees(h);
      if (!this.armedHosts.has(h.name)) {
        if (agrees) this.armedHosts.set(h.name, s.at);
        continue;
      }
      if (begunBeforeArmed(s, this.armedHosts.get(h.name)!)) continue;
      if (agrees) {
        this.disagreeing.delete(h.name);
        continue;
      }
      const d = this.disagreeing.get(h.name) ?? { ...episode(s), errorCount: 0 };
      this.disagreeing.set(h.name, d);
      tick(d, s);
      d.errorCount = Math.max(d.errorCount, h.errorCount);
      // A host in error backoff (its BMC failed it just before) is owed the backoff too.
      const allowed = this.bounds.powerMs + (d.errorCount > 0 ? errorBackoffMs(d.errorCount) : 0);
      if (d.atWorkMs <= allowed || d.said) continue;
      d.said = true;
      add(
        'power',
        `host ${h.name}: power ${h.power} with spec.online ${h.online} for ${lasted(d, s)}, more than ${(allowed / 1000).toFixed(1)} s`,
      );
    }
  }

  /** No address held by two VMs of a pool; none held longer than the bound once its VM is gone (once per address). */
  private checkAddresses(s: Sample, add: (i: Violation['invariant'], m: string) => void): void {
    if (!s.vmAddresses || !s.vms) return;
    for (const m of addressesTwice(s.vmAddresses, s.vms)) add('ipTwice', m);
    const live = new Set(s.vms.map((v) => v.id));
    const held = new Set<string>();
    for (const a of s.vmAddresses) {
      const key = `${a.pool} ${a.owner} ${a.ip}`;
      held.add(key);
      if (live.has(a.vm) || a.faulted) {
        this.orphans.delete(key);
        continue;
      }
      const o = this.orphans.get(key) ?? episode(s);
      this.orphans.set(key, o);
      tick(o, s);
      if (o.atWorkMs <= this.bounds.leakMs || o.said) continue;
      o.said = true;
      add(
        'ipLeaked',
        `pool ${a.pool}: ${a.ip} still allocated to ${a.owner} ${lasted(o, s)} after its VM ${a.vm} was gone`,
      );
    }
    for (const key of this.orphans.keys()) if (!held.has(key)) this.orphans.delete(key);
  }
}

/** A write request one replica sent to the API server, as its proxy forwarded it. */
export interface WriteRecord {
  at: number;
  replica: string;
  method: string;
  path: string;
  /** The API server's answer, once it came (an eviction refused by a PDB is 429). */
  status?: number;
}
/** The Lease holder as sampled (undefined: no holder). */
export interface HolderSample {
  at: number;
  holder: string | undefined;
}

/**
 * Writes from a replica that did not hold the lease: a write is allowed when the
 * replica held it at the sample just before or just after the write (the sampling
 * cannot place a change more exactly). The lease's own writes are the election itself.
 */
export function writesWithoutLease(
  writes: readonly WriteRecord[],
  holders: readonly HolderSample[],
  leasePath: string,
): Violation[] {
  const out: Violation[] = [];
  const sorted = [...holders].sort((a, b) => a.at - b.at);
  for (const w of writes) {
    if (w.path.split('?')[0] === leasePath) continue;
    let before: HolderSample | undefined;
    let after: HolderSample | undefined;
    for (const h of sorted) {
      if (h.at <= w.at) before = h;
      else {
        after = h;
        break;
      }
    }
    if (!before) continue; // before the first sample there is nothing to compare with
    if (before.holder === w.replica || after?.holder === w.replica) continue;
    out.push({
      at: w.at,
      invariant: 'twoActors',
      message: `${w.replica} wrote ${w.method} ${w.path} while ${before.holder ?? 'nobody'} held the lease`,
    });
  }
  return out;
}
