// The KVM workload clusters' invariants: pure checks over what the sampler read
// from outside the operator — each cluster's VM pods in the management cluster
// and the hypervisor's word on their VMs, then (read after them) the workload
// cluster's Nodes, pods and PDBs through its own kubeconfig. A VM pod never goes
// without its drain having finished or timed out; no PDB inside a workload
// cluster below its minimum (pods on nodes whose VM died or went are counted as
// the management PDBs' lost nodes are, and so are pods left with no node to run
// on); never more than one master of a
// workload cluster taken out at once.
import {
  healthyPods,
  type NodeView,
  type PdbView,
  type PodView,
  podsOnLostNodes,
  type Sample,
  type Violation,
} from './invariants.ts';

/** A VM pod of a workload cluster, as the management cluster and the hypervisor show it. */
export interface VmPodView {
  /** The pod's name, which is also its workload Node's. */
  name: string;
  /** The node id its labels name (m1, w2, ...). */
  nodeId: string;
  role: 'master' | 'worker';
  deleting: boolean;
  /** When its deletion was first asked: deletionTimestamp less the grace period, or drain-started if earlier (ms). */
  deletionAskedAt?: number;
  /** Our drain finalizer still holds it. */
  held: boolean;
  /** kvm.nodewarden.dev/drained: Drained, TimedOut or Skipped, written as the finalizer goes. */
  drained?: string;
  /** Someone else took it (its DisruptionTarget: a drain of its hypervisor host, pod GC, a taint). */
  evicted: boolean;
  /** The hypervisor says its VM died, or hangs in a boot that never ends: a fault's doing. */
  faulted: boolean;
}

export interface KvmClusterView {
  /** namespace/name of the KVMCluster. */
  name: string;
  /** The master ids its spec asks for. */
  masters: string[];
  drainTimeoutMs: number;
  vms: VmPodView[];
  /** The workload cluster, read after the VM pods; absent when it did not answer. */
  workload?: { nodes: NodeView[]; pods: PodView[]; pdbs: PdbView[] };
}

export interface KvmSample {
  clusters: KvmClusterView[];
}

/**
 * VM pods let go without a drain that finished or timed out: deleting and no longer held by our
 * finalizer with no outcome written; an outcome "TimedOut" before drain.timeout had passed since
 * the deletion was asked; or "Drained" while a pod of the workload (not being deleted) still runs
 * on its node — the workload pods are read after the VM pods, so that pod was there after the
 * outcome was written. "Skipped" (the cluster deleted, the VM never joined) is not judged: the
 * hypervisor may boot the VM between the operator's look and ours.
 */
export function drainProblems(c: KvmClusterView, at: number): string[] {
  const out: string[] = [];
  const podsOn = (node: string) =>
    (c.workload?.pods ?? []).filter((p) => p.node === node && !p.deleting).map((p) => p.name ?? '?');
  for (const vm of c.vms) {
    if (!vm.deleting) continue;
    if (!vm.held && !vm.drained)
      out.push(`VM pod ${c.name}/${vm.name} let go with no drain outcome (neither drained nor timed out)`);
    if (vm.drained === 'TimedOut' && vm.deletionAskedAt !== undefined) {
      const waited = at - vm.deletionAskedAt;
      if (waited < c.drainTimeoutMs)
        out.push(
          `VM pod ${c.name}/${vm.name}: drain said timed out ${(waited / 1000).toFixed(1)} s after the deletion, before drain.timeout ${c.drainTimeoutMs / 1000} s`,
        );
    }
    if (vm.drained === 'Drained') {
      const left = podsOn(vm.name);
      if (left.length > 0)
        out.push(`VM pod ${c.name}/${vm.name} said drained with pods still on its node: ${left.join(', ')}`);
    }
  }
  return out;
}

/** The masters of a cluster that are out: no VM pod of theirs that is not being deleted is a Ready node. */
export function mastersOut(c: KvmClusterView): string[] {
  const ready = new Set((c.workload?.nodes ?? []).filter((n) => n.ready !== false).map((n) => n.name));
  return c.masters.filter(
    (id) =>
      !c.vms.some((vm) => vm.role === 'master' && vm.nodeId === id && !vm.deleting && ready.has(vm.name)),
  );
}

/** Whether a master's VM pod was taken by another's drain (evicted), not by the rollout. */
function evictedByOthers(c: KvmClusterView, id: string): boolean {
  return c.vms.some((vm) => vm.role === 'master' && vm.nodeId === id && vm.evicted);
}

/** Whether a master has a VM pod, not being deleted, whose VM died or hangs (the hypervisor's word). */
function deadVm(c: KvmClusterView, id: string): boolean {
  return c.vms.some((vm) => vm.role === 'master' && vm.nodeId === id && !vm.deleting && vm.faulted);
}

interface MasterEpisode {
  /** Begun by a fault or another's drain, or became so: not the operator's taking. */
  involuntary: boolean;
  /** Its VM died or hangs (the hypervisor's word), at any sample of the episode. */
  faulted: boolean;
  /** The sample that first saw it out (ms). */
  since: number;
}

/**
 * How long a VM's death stays unseen by the operator: it learns of it only from the workload
 * Node's readiness (read at the start of its pass) or the VM pod's failed probes, so a master
 * that died less than this before another's update was taken out with it, not before it. WHY
 * 2 s: a pass on busy cores reads the Nodes up to ~1 s before its update; seed 424242
 * (2026-11-26, busy cores): m1's VM died ~100 ms before the Deployment update of m3 the pass
 * had decided from reads made before. A death known for longer still counts; so does an
 * eviction, however recent: it is granted through the masters' budget the rollout asks.
 */
export const FAULT_UNSEEN_MS = 2_000;

/** When a taken master's deletion was asked; deletionTimestamp has whole seconds, so the latest it may be. */
function takenAt(c: KvmClusterView, id: string, at: number): number {
  const asked = c.vms
    .filter((vm) => vm.role === 'master' && vm.nodeId === id && vm.deletionAskedAt !== undefined)
    .map((vm) => vm.deletionAskedAt! + 999);
  return asked.length > 0 ? Math.min(at, ...asked) : at;
}

/**
 * Pods of the PDB kept from running by nodes the workload cluster lost rather than by an eviction:
 * on a Node it no longer lists, or deleted by pod GC once their Node went, when that Node's VM is
 * gone or dead; or waiting for a node while no Node is Ready at all. WHY not evictions: the API
 * server refuses an eviction that leaves a PDB below its minimum, so a cluster with no node left
 * for its pods got there by VMs that died or drains that timed out (seed 424242 at 200 nodes:
 * faults killed kvm-2's workers, then its one master; its app pods waited for a node while it
 * listed none). A cordon or taint is no loss: those are the operator's, and are judged.
 */
export function podsWithNoNodeLeft(c: KvmClusterView, pdb: PdbView): number {
  const w = c.workload;
  if (!w) return 0;
  const listed = new Set(w.nodes.map((n) => n.name));
  const vmAlive = (node: string) => c.vms.some((vm) => vm.name === node && !vm.faulted);
  const anyReady = w.nodes.some((n) => n.ready !== false);
  const sel = Object.entries(pdb.matchLabels);
  return w.pods.filter((p) => {
    if (p.namespace !== pdb.namespace || p.ready || !sel.every(([k, v]) => p.labels[k] === v)) return false;
    if (p.node === undefined) return !p.deleting && !anyReady;
    const gone = !listed.has(p.node) || (p.deleting && p.disruption === 'DeletionByPodGC');
    return gone && !vmAlive(p.node);
  }).length;
}

/**
 * The KVM checks with the little state they keep: which clusters' masters and PDBs are armed (met
 * once: a cluster still coming up is not judged), and each master's current time out.
 */
export class KvmChecker {
  private readonly armedPdbs = new Map<string, number>();
  private readonly armedClusters = new Map<string, number>();
  private readonly outs = new Map<string, MasterEpisode>();
  /**
   * Masters (cluster/id) whose VM the hypervisor said died, and when that was first seen, until
   * they serve again on a live VM. Noted from pods not being deleted: a dead VM's pod may linger,
   * deleting, after its replacement serves, and must not excuse a later taking.
   * WHY: a death the checker saw only as the VM's (its Node still read Ready, or the workload
   * cluster did not answer) and whose VM pod the operator then replaced first showed as an
   * episode of the replacement, and was judged a taking (seed 424242 at 200 nodes, 2026-11-27).
   */
  private readonly died = new Map<string, number>();
  /** The latest sample the master check took, per cluster. */
  private readonly lastAt = new Map<string, number>();
  private readonly involuntary: Violation[];

  /** `involuntary`: where PDB samples below minimum from lost nodes go (the run's report). */
  constructor(involuntary: Violation[]) {
    this.involuntary = involuntary;
  }

  check(s: Sample): Violation[] {
    const found: Violation[] = [];
    const add = (invariant: Violation['invariant'], message: string) =>
      found.push({ at: s.at, invariant, message });
    for (const c of s.kvm?.clusters ?? []) {
      for (const m of drainProblems(c, s.at)) add('vmDrain', m);
      // Deaths are noted even when the workload cluster does not answer: they come from the hypervisor.
      if (s.at >= (this.lastAt.get(c.name) ?? 0)) this.noteDeaths(c, s.at);
      if (!c.workload) continue;
      this.checkPdbs(s, c, add);
      this.checkMasters(s, c, add);
    }
    return found;
  }

  /** As the management PDBs are judged: armed once met, pods on nodes that lost their heartbeat apart. */
  private checkPdbs(s: Sample, c: KvmClusterView, add: (i: Violation['invariant'], m: string) => void): void {
    const w = c.workload!;
    for (const pdb of w.pdbs) {
      const key = `${c.name}:${pdb.namespace}/${pdb.name}`;
      const healthy = healthyPods(w.pods, pdb);
      if (!this.armedPdbs.has(key)) {
        if (healthy >= pdb.minAvailable) this.armedPdbs.set(key, s.at);
        continue;
      }
      if (healthy >= pdb.minAvailable || s.at < this.armedPdbs.get(key)!) continue;
      const message = `workload cluster ${c.name}: PDB ${pdb.namespace}/${pdb.name}: ${healthy} healthy pods, fewer than minAvailable ${pdb.minAvailable}`;
      const lost = podsOnLostNodes({ pods: w.pods, nodes: w.nodes }, pdb) + podsWithNoNodeLeft(c, pdb);
      if (healthy + lost >= pdb.minAvailable)
        this.involuntary.push({
          at: s.at,
          invariant: 'kvmPdb',
          message: `${message}; ${lost} on nodes whose VM died or went, or with no node left to run on`,
        });
      else add('kvmPdb', message);
    }
  }

  /** Notes the masters whose VM died, from the hypervisor's word, even when the workload cluster did not answer. */
  private noteDeaths(c: KvmClusterView, at: number): void {
    for (const id of c.masters) {
      const key = `${c.name}/${id}`;
      if (deadVm(c, id) && !this.died.has(key)) this.died.set(key, at);
    }
  }

  /**
   * A master taken out (its episode begun by no fault and no other's drain) while another master
   * of its cluster was out at an earlier sample, or beside another taken in the same sample. A master a fault
   * took and the operator then replaces stays one episode: the replacement adds no master out.
   */
  private checkMasters(
    s: Sample,
    c: KvmClusterView,
    add: (i: Violation['invariant'], m: string) => void,
  ): void {
    const out = mastersOut(c);
    if (!this.armedClusters.has(c.name)) {
      if (out.length === 0) this.armedClusters.set(c.name, s.at);
      return;
    }
    // Samples finish out of order (two lanes): an older one would begin again an episode a newer ended.
    if (s.at < Math.max(this.armedClusters.get(c.name)!, this.lastAt.get(c.name) ?? 0)) return;
    this.lastAt.set(c.name, s.at);
    const key = (id: string) => `${c.name}/${id}`;
    for (const id of c.masters) {
      if (out.includes(id)) continue;
      this.outs.delete(key(id));
      if (!deadVm(c, id)) this.died.delete(key(id));
    }
    // A master whose death was seen at an earlier sample was out since then, seen out or not.
    const before = out.filter((id) => this.outs.has(key(id)) || (this.died.get(key(id)) ?? s.at) < s.at);
    const taken: string[] = [];
    for (const id of out) {
      const e = this.outs.get(key(id));
      const diedAt = this.died.get(key(id));
      const involuntary = diedAt !== undefined || evictedByOthers(c, id);
      if (e) {
        e.involuntary ||= involuntary;
        e.faulted ||= diedAt !== undefined;
      } else {
        this.outs.set(key(id), { involuntary, faulted: diedAt !== undefined, since: diedAt ?? s.at });
        if (!involuntary) taken.push(id);
      }
    }
    // A death the operator could not have seen yet when it took this one does not count against it.
    const at = Math.min(s.at, ...taken.map((id) => takenAt(c, id, s.at)));
    const already = before.filter((id) => {
      const e = this.outs.get(key(id))!;
      return !(e.faulted && e.since > at - FAULT_UNSEEN_MS);
    });
    // Only masters out at an earlier sample count against a taking: one a fault took between the
    // same two samples may have gone after it (seed 424242: an upgrade took m1, then m2 died).
    if (taken.length > 1 || (taken.length === 1 && already.length > 0))
      add(
        'mastersOut',
        `workload cluster ${c.name}: master ${taken.join(' and ')} taken out with ${out.length} masters out (${out.join(', ')}; out before: ${already.join(', ') || 'none'})`,
      );
  }
}
