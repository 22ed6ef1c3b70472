// The soak's report: what a reader needs to trust (or replay) a run.
import type { FaultRecord } from './faults.ts';
import type { Violation } from './invariants.ts';

export interface SoakReport {
  seed: number;
  nodes: number;
  durationMs: number;
  faults: FaultRecord[];
  samples: number;
  missedSamples: number;
  samplesPerSecond: number;
  writesChecked: number;
  /** Watches answered 410 Gone, as the replicas' proxies saw them (the compaction fault's proof). */
  watchesGone: number;
  violations: Violation[];
  /** PDB samples below minimum only because nodes lost their heartbeat: reported, not counted. */
  involuntary: Violation[];
  /** Leader kills: ms until another replica held the lease. */
  failoversMs: number[];
  /** The same, counted from when a standby watched the lease (failoverFromStandby): the goal's measure. */
  failoversFromStandbyMs: number[];
  /** Partitions of the leader: ms until the standby held the lease. */
  takeoversMs: number[];
  /** Ms from the last fault's end to every object converged; undefined: not within the bound. */
  convergeMs: number | undefined;
  convergeBoundMs: number;
  operatorRestarts: number;
  /** Of those, replicas that exited by themselves (a leader that lost its lease exits, to be restarted). */
  selfExits: number;
  maintenances: { created: number; deleted: number };
  /** Instances the rollout launched, per group, against the group size. */
  launched: Record<string, { size: number; launched: number }>;
  /** The BMC fleet's faults (their own track) and the bare-metal load's actions by kind. */
  bareMetal: { faults: FaultRecord[]; steps: Record<string, number> };
  /** The tenant-cluster load's actions by kind. */
  tenants: Record<string, number>;
  /** The hypervisor's faults (their own track) and the KVM load's actions by kind. */
  kvm: { faults: FaultRecord[]; steps: Record<string, number>; convergeMs?: number | undefined };
}

const s = (ms: number | undefined) => (ms === undefined ? 'n/a' : `${(ms / 1000).toFixed(1)} s`);

/** " (pdb 3, twoActors 1)": how many of each invariant, for a quick look. */
function byInvariant(vs: readonly Violation[]): string {
  const n = new Map<string, number>();
  for (const v of vs) n.set(v.invariant, (n.get(v.invariant) ?? 0) + 1);
  return n.size ? ` (${[...n].map(([k, c]) => `${k} ${c}`).join(', ')})` : '';
}

function firstOfEach(vs: readonly Violation[], n: number): Violation[] {
  const seen = new Map<string, number>();
  return vs.filter((v) => {
    const k = seen.get(v.invariant) ?? 0;
    seen.set(v.invariant, k + 1);
    return k < n;
  });
}

export function passed(r: SoakReport): boolean {
  return (
    r.violations.length === 0 &&
    r.convergeMs !== undefined &&
    [...r.faults, ...r.bareMetal.faults, ...r.kvm.faults].every((f) => !f.error)
  );
}

export function formatReport(r: SoakReport): string {
  const lines = [
    `soak seed=${r.seed} nodes=${r.nodes} duration=${s(r.durationMs)}: ${passed(r) ? 'PASS' : 'FAIL'}`,
    `faults injected: ${r.faults.length}`,
    ...r.faults.map(
      (f) =>
        `  @${s(f.at).padStart(8)}  ${f.what}` +
        (f.failoverMs !== undefined ? ` (failover ${s(f.failoverMs)})` : '') +
        (f.standbyLateMs ? ` (the standby watched the lease ${s(f.standbyLateMs)} after the kill)` : '') +
        (f.takeoverMs !== undefined ? ` (standby took over after ${s(f.takeoverMs)})` : '') +
        (f.error ? ` FAILED: ${f.error}` : ''),
    ),
    `BMC faults injected: ${r.bareMetal.faults.length}`,
    ...r.bareMetal.faults.map(
      (f) => `  @${s(f.at).padStart(8)}  ${f.what}${f.error ? ` FAILED: ${f.error}` : ''}`,
    ),
    `bare-metal load: ${
      Object.entries(r.bareMetal.steps)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ') || 'nothing'
    }`,
    `tenant clusters: ${
      Object.entries(r.tenants)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ') || 'nothing'
    }`,
    `hypervisor faults injected: ${r.kvm.faults.length}`,
    ...r.kvm.faults.map((f) => `  @${s(f.at).padStart(8)}  ${f.what}${f.error ? ` FAILED: ${f.error}` : ''}`),
    `KVM clusters: ${
      Object.entries(r.kvm.steps)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ') || 'nothing'
    }`,
    `invariant samples: ${r.samples} (${r.samplesPerSecond.toFixed(1)}/s), missed while the API server was away: ${r.missedSamples}`,
    `writes checked against the lease holder: ${r.writesChecked}`,
    `watches answered 410 Gone: ${r.watchesGone}`,
    `violations: ${r.violations.length}${byInvariant(r.violations)}`,
    // A few of each kind: the first twenty alone may all be one kind and hide another.
    ...firstOfEach(r.violations, 5).map(
      (v) => `  ${new Date(v.at).toISOString()} ${v.invariant}: ${v.message}`,
    ),
    `PDB samples below minimum from nodes that lost their heartbeat (involuntary, not counted): ${r.involuntary.length}`,
    ...r.involuntary.slice(0, 3).map((v) => `  ${new Date(v.at).toISOString()} ${v.message}`),
    `leader failover: ${r.failoversMs.length ? r.failoversMs.map(s).join(', ') : 'n/a'}; from a standby watching the lease ${r.failoversFromStandbyMs.length ? r.failoversFromStandbyMs.map(s).join(', ') : 'n/a'} (goal < 20 s)`,
    `partition takeover: ${r.takeoversMs.length ? r.takeoversMs.map(s).join(', ') : 'n/a'}`,
    `time to converge after the faults: ${s(r.convergeMs)} (bound ${s(r.convergeBoundMs)}); the KVM clusters: ${s(r.kvm.convergeMs)}`,
    `operator restarts: ${r.operatorRestarts} (${r.selfExits} after exiting by themselves)`,
    `maintenances: ${r.maintenances.created} created, ${r.maintenances.deleted} deletions asked`,
    `rollout instances: ${Object.entries(r.launched)
      .map(([g, x]) => `${g} ${x.launched} launched for ${x.size} nodes`)
      .join('; ')}`,
  ];
  return lines.join('\n');
}
