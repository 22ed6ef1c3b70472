// The soak's share on real nodes (kubelet, containerd, runc): a seeded schedule
// of the real nodes' own faults (containerd or kubelet killed and started again
// as the local cluster's node lifecycle starts a node's missing processes, an
// operator replica killed), the PDB checker told which nodes were restarted,
// and a clock on every NodeMaintenance until it has converged.
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { seededRandom } from '../../src/cluster/infra/kit/random.ts';
import { exeOf } from '../../src/cluster/real-nodes/processes.ts';
import { restartRealNodes } from '../harness/real-nodes.ts';
import { InvariantChecker, type Sample, type Violation } from './invariants.ts';
import type { Replicas } from './replicas.ts';

export type RealFaultKind = 'containerdRestart' | 'kubeletRestart' | 'operatorKill';
export const REAL_FAULT_KINDS: readonly RealFaultKind[] = [
  'containerdRestart',
  'kubeletRestart',
  'operatorKill',
];

/**
 * One fault: a node's containerd or kubelet SIGKILLed, left down `downMs`, then started again;
 * or an operator replica SIGKILLed, started again `downMs` later. durationMs is the fault
 * track's hold after the fault is applied (0: apply returns once it is over).
 */
export interface RealFault {
  kind: RealFaultKind;
  at: number;
  downMs: number;
  durationMs: number;
  node?: string;
  replica?: number;
}

/**
 * The real nodes' faults for a seed: every kind once (seeded order) while time allows, then
 * seeded picks, one after another with a seeded gap. Pure: a failing seed replays exactly.
 */
export function planRealFaults(o: {
  seed: number;
  durationMs: number;
  nodes: readonly string[];
  replicas: number;
  startMs?: number;
}): RealFault[] {
  const random = seededRandom(o.seed ^ 0x4ea1);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const firstRound = [...REAL_FAULT_KINDS];
  for (let i = firstRound.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [firstRound[i], firstRound[j]] = [firstRound[j]!, firstRound[i]!];
  }
  const out: RealFault[] = [];
  let at = o.startMs ?? 15_000;
  while (at < o.durationMs) {
    const kind = firstRound.shift() ?? REAL_FAULT_KINDS[Math.floor(random() * REAL_FAULT_KINDS.length)]!;
    const downMs = between(500, 5_000);
    out.push(
      kind === 'operatorKill'
        ? { kind, at, downMs, durationMs: downMs, replica: between(0, o.replicas - 1) }
        : { kind, at, downMs, durationMs: 0, node: o.nodes[between(0, o.nodes.length - 1)]! },
    );
    // A node's restart is followed by its `up` (seconds): the next fault waits a gap past it.
    at += downMs + between(8_000, 16_000);
  }
  return out;
}

export function describeRealFault(f: RealFault): string {
  switch (f.kind) {
    case 'operatorKill':
      return `SIGKILL operator replica ${f.replica}, restart after ${f.downMs} ms`;
    case 'containerdRestart':
      return `SIGKILL containerd on ${f.node}, start it again after ${f.downMs} ms`;
    case 'kubeletRestart':
      return `SIGKILL kubelet on ${f.node}, start it again after ${f.downMs} ms`;
  }
}

/**
 * How long after a node's kubelet or containerd is back its pods' not-Ready samples are still the
 * restart's. WHY 30 s: a restarted kubelet reports every container not Ready until its first probe
 * answers (periodSeconds 1) and posts the pods' status in its own sync; on busy cores that took
 * seconds, and the PLEG relists every second after containerd answers again. 30 s is that many
 * times over; an evicted pod is deleting and is never excused by it.
 */
export const RESTART_SETTLE_MS = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Applies the real nodes' faults, and tells which nodes are being (or were just) restarted. */
export class RealNodeFaults {
  /** Per node, each restart: since when its runtime was down, and when it was back (undefined: not yet). */
  private readonly restarts = new Map<string, { from: number; back?: number }[]>();
  private nodesDown = false;
  private readonly cluster: string;
  private readonly clusterDir: string;
  private readonly replicas: Replicas;

  constructor(cluster: string, clusterDir: string, replicas: Replicas) {
    this.cluster = cluster;
    this.clusterDir = clusterDir;
    this.replicas = replicas;
  }

  async apply(f: RealFault, note: (detail: string) => void): Promise<void> {
    if (f.kind === 'operatorKill') {
      await this.replicas.kill(this.replicas.all[f.replica!]!);
      return;
    }
    const node = f.node!;
    const program = f.kind === 'containerdRestart' ? 'containerd' : 'kubelet';
    const window: { from: number; back?: number } = { from: Date.now() };
    this.restarts.set(node, [...(this.restarts.get(node) ?? []), window]);
    this.nodesDown = true;
    this.kill(node, program);
    await sleep(f.downMs);
    const t = Date.now();
    await restartRealNodes(this.cluster);
    this.nodesDown = false;
    window.back = Date.now();
    note(` (started again in ${((Date.now() - t) / 1000).toFixed(1)} s)`);
  }

  /** After every fault, held or failed: every replica runs, and every real node's process. */
  async clear(): Promise<void> {
    for (const r of this.replicas.all) if (!r.process) this.replicas.restart(r);
    if (this.nodesDown) {
      await restartRealNodes(this.cluster);
      this.nodesDown = false;
      for (const w of [...this.restarts.values()].flat()) w.back ??= Date.now();
    }
  }

  /** SIGKILL to the node's program, by the pid its launch recorded (checked to still run it). */
  private kill(node: string, program: string): void {
    const pidFile = join(this.clusterDir, 'real-nodes', node, 'pids', `${program}.pid`);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const exe = exeOf(pid);
    if (!exe || basename(exe) !== program) throw new Error(`${node}'s ${program} (pid ${pid}) does not run`);
    process.kill(pid, 'SIGKILL');
  }

  /** Whether the node's runtime was being restarted at `at`, or was back less than RESTART_SETTLE_MS before. */
  restarting(node: string, at: number): boolean {
    return (this.restarts.get(node) ?? []).some(
      (w) => at >= w.from && (w.back === undefined || at <= w.back + RESTART_SETTLE_MS),
    );
  }
}

/**
 * The soak's checker, each sample's nodes marked with whether their runtime was being restarted:
 * pods not Ready there are the restart's (involuntary), not an eviction's.
 */
export class RealNodesChecker extends InvariantChecker {
  private readonly restarting: (node: string, at: number) => boolean;

  constructor(restarting: (node: string, at: number) => boolean) {
    super([]);
    this.restarting = restarting;
  }

  override check(s: Sample): Violation[] {
    const nodes = s.nodes.map((n) => (this.restarting(n.name, s.at) ? { ...n, runtimeRestarting: true } : n));
    return super.check({ ...s, nodes });
  }
}

/** A NodeMaintenance as the clock reads it. */
export interface MaintenanceView {
  name: string;
  node: string;
  /** metadata.creationTimestamp, ms since the epoch. */
  createdAt: number;
  phase?: string;
}

/**
 * Every NodeMaintenance converges within `boundMs` of its creation: it reaches Succeeded, or it
 * is deleted and its node is no longer cordoned. Fed samples (maintenances read before nodes)
 * in any order: a maintenance is taken as gone only by a sample begun after one that saw it.
 */
export class MaintenanceClock {
  readonly violations: Violation[] = [];
  /** Per converged maintenance: ms from its creation to Succeeded (or to being let go). */
  readonly convergedMs: number[] = [];
  private readonly open = new Map<
    string,
    { node: string; createdAt: number; seenAt: number; said: boolean }
  >();
  private readonly closed = new Set<string>();
  private readonly boundMs: number;

  constructor(boundMs: number) {
    this.boundMs = boundMs;
  }

  observe(at: number, nms: readonly MaintenanceView[], cordoned: ReadonlySet<string>): Violation[] {
    const found: Violation[] = [];
    const listed = new Set<string>();
    for (const m of nms) {
      listed.add(m.name);
      if (this.closed.has(m.name)) continue;
      const o = this.open.get(m.name) ?? { node: m.node, createdAt: m.createdAt, seenAt: at, said: false };
      o.seenAt = Math.max(o.seenAt, at);
      this.open.set(m.name, o);
      if (m.phase === 'Succeeded') this.close(m.name, at);
    }
    for (const [name, o] of this.open) {
      if (!listed.has(name) && at > o.seenAt && !cordoned.has(o.node)) {
        this.close(name, at);
        continue;
      }
      if (at - o.createdAt <= this.boundMs || o.said) continue;
      o.said = true;
      found.push({
        at,
        invariant: 'notConverged',
        message: `NodeMaintenance ${name} of ${o.node}: neither Succeeded nor let go ${((at - o.createdAt) / 1000).toFixed(1)} s after its creation (bound ${this.boundMs / 1000} s)`,
      });
    }
    this.violations.push(...found);
    return found;
  }

  /** Maintenances not converged yet. */
  pending(): string[] {
    return [...this.open.keys()];
  }

  private close(name: string, at: number): void {
    const o = this.open.get(name)!;
    this.open.delete(name);
    this.closed.add(name);
    this.convergedMs.push(Math.max(0, at - o.createdAt));
  }
}
