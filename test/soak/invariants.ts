// The soak's invariants: pure checks over snapshots sampled from outside the
// operator. A checker is fed samples as they finish (not always in the order they
// began: see begunBeforeArmed) and keeps the little state
// the checks need (which PDBs and groups are armed: a Deployment still starting
// is not a PDB violation); everything it says is a Violation with the sample time.

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

export interface Sample {
  at: number;
  pods: PodView[];
  pdbs: PdbView[];
  /** Listed after the maintenances, so a maintenance seen gone means its node was let go before. */
  nodes: NodeView[];
  /** Node names with a NodeMaintenance (a deleting one included: its finalizer uncordons first). */
  maintained: string[];
  instances: InstanceView[];
}

export interface Violation {
  at: number;
  invariant: 'pdb' | 'ownership' | 'overProvisioned' | 'underSize' | 'twoActors' | 'notConverged';
  message: string;
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
 * no PDB and no operator can prevent; evictions are the voluntary ones).
 */
export function podsOnLostNodes(s: Pick<Sample, 'pods' | 'nodes'>, pdb: PdbView): number {
  const lost = new Set(s.nodes.filter((n) => n.ready === false).map((n) => n.name));
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

export class InvariantChecker {
  readonly violations: Violation[] = [];
  /** PDB samples below minimum only because nodes lost their heartbeat (not the operator's doing). */
  readonly involuntary: Violation[] = [];
  samples = 0;
  /** Armed PDBs and groups, each with the start time of the sample that armed it. */
  private readonly armedPdbs = new Map<string, number>();
  private readonly armedGroups = new Map<string, number>();
  private readonly groups: readonly GroupBudget[];

  constructor(groups: readonly GroupBudget[]) {
    this.groups = groups;
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
          message: `${message}; ${lost} on nodes that lost their heartbeat`,
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
    this.violations.push(...found);
    return found;
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
