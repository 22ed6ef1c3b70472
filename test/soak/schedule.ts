// The soak's fault schedule: a pure function of the seed, so a failing run is
// replayed exactly by giving its seed again. Faults that take the control plane
// or the leader away follow one another (each its own gap) rather than pile up:
// the soak proves recovery from each, not from an arbitrary sum of them.
import { seededRandom } from '../../src/cluster/infra/kit/random.ts';

export type PartitionMode = 'blackhole' | 'reset' | 'delay';

export type CloudFault =
  | { failNextCalls: number }
  | { throttleProbability: number }
  | { slowCallsMs: number }
  | { slowBootMs: number };

export type Fault =
  /** SIGKILL one replica (by index), start it again after `restartAfterMs`. */
  | { kind: 'operatorKill'; at: number; replica: number; restartAfterMs: number }
  /** SIGKILL whichever replica holds the lease; the failover time is measured. */
  | { kind: 'leaderKill'; at: number; restartAfterMs: number }
  | { kind: 'apiserverRestart'; at: number }
  | { kind: 'etcdRestart'; at: number }
  /** Compact etcd to its head, then restart the API server: every watch resumes from a compacted revision (410 Gone). */
  | { kind: 'etcdCompaction'; at: number }
  /** Between the leader and the API server, for longer than the lease. */
  | { kind: 'partition'; at: number; mode: PartitionMode; durationMs: number }
  /** The simulated cloud's API faults, cleared after `durationMs`. */
  | { kind: 'cloudApi'; at: number; faults: CloudFault; durationMs: number };

export type FaultKind = Fault['kind'];

export const FAULT_KINDS: readonly FaultKind[] = [
  'operatorKill',
  'leaderKill',
  'apiserverRestart',
  'etcdRestart',
  'etcdCompaction',
  'partition',
  'cloudApi',
];

export interface ScheduleOptions {
  seed: number;
  /** Faults start within [startMs, durationMs). */
  durationMs: number;
  startMs?: number;
  /** The leader lease; a partition outlasts it. */
  leaseMs: number;
  replicas: number;
  /** Quiet time between two faults. */
  minGapMs?: number;
  maxGapMs?: number;
}

/** How long a fault keeps the cluster disturbed, for spacing the next one. */
export function faultLengthMs(f: Fault): number {
  switch (f.kind) {
    case 'operatorKill':
    case 'leaderKill':
      return f.restartAfterMs;
    case 'partition':
    case 'cloudApi':
      return f.durationMs;
    default:
      return 5_000;
  }
}

/**
 * Every kind once (in a seeded order) while time allows, then seeded picks,
 * each after the previous one's length plus a seeded gap. Deterministic.
 */
export function planFaults(o: ScheduleOptions): Fault[] {
  const random = seededRandom(o.seed);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const firstRound = [...FAULT_KINDS];
  for (let i = firstRound.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [firstRound[i], firstRound[j]] = [firstRound[j]!, firstRound[i]!];
  }
  const out: Fault[] = [];
  let at = o.startMs ?? 10_000;
  while (at < o.durationMs) {
    const kind = firstRound.shift() ?? pick(FAULT_KINDS);
    const f = makeFault(kind, at, o, between, pick);
    out.push(f);
    at += faultLengthMs(f) + between(o.minGapMs ?? 4_000, o.maxGapMs ?? 12_000);
  }
  return out;
}

function makeFault(
  kind: FaultKind,
  at: number,
  o: ScheduleOptions,
  between: (lo: number, hi: number) => number,
  pick: <T>(xs: readonly T[]) => T,
): Fault {
  switch (kind) {
    case 'operatorKill':
      return { kind, at, replica: between(0, o.replicas - 1), restartAfterMs: between(500, 5_000) };
    case 'leaderKill':
      return { kind, at, restartAfterMs: between(1_000, 5_000) };
    case 'partition':
      return {
        kind,
        at,
        mode: pick(['blackhole', 'reset', 'delay'] as const),
        durationMs: o.leaseMs + between(3_000, 12_000),
      };
    case 'cloudApi': {
      const faults = pick<CloudFault>([
        { failNextCalls: between(3, 15) },
        { throttleProbability: between(2, 6) / 10 },
        { slowCallsMs: between(300, 2_000) },
        { slowBootMs: between(2_000, 8_000) },
      ]);
      return { kind, at, faults, durationMs: between(5_000, 20_000) };
    }
    default:
      return { kind, at };
  }
}

/** One line per fault, for the report and for replaying by eye. */
export function describeFault(f: Fault): string {
  switch (f.kind) {
    case 'operatorKill':
      return `SIGKILL replica ${f.replica}, restart after ${f.restartAfterMs} ms`;
    case 'leaderKill':
      return `SIGKILL the leader, restart after ${f.restartAfterMs} ms`;
    case 'apiserverRestart':
      return 'restart kube-apiserver';
    case 'etcdRestart':
      return 'restart etcd';
    case 'etcdCompaction':
      return 'compact etcd to its head, restart kube-apiserver (watches resume 410 Gone)';
    case 'partition':
      return `partition leader <-> API server (${f.mode}) for ${f.durationMs} ms`;
    case 'cloudApi':
      return `cloud API ${JSON.stringify(f.faults)} for ${f.durationMs} ms`;
  }
}

// ------------------------------------------------------------- the BMC fleet

/** What the simulated BMC fleet can do wrong (src/cluster/infra/bmc/faults.ts). */
export type BmcFaultKind = 'unreachable' | 'badCredentials' | 'vanished' | 'failPower' | 'slowPower';

export const BMC_FAULT_KINDS: readonly BmcFaultKind[] = [
  'unreachable',
  'badCredentials',
  'vanished',
  'failPower',
  'slowPower',
];

/**
 * One BMC fault: `hosts` (physical machine ids) answer wrongly for `durationMs`; a slow power
 * is the fleet's, every power-on taking `powerOnDelayMs`.
 */
export interface BmcFault {
  kind: BmcFaultKind;
  at: number;
  hosts: string[];
  durationMs: number;
  powerOnDelayMs?: number;
}

export interface BmcScheduleOptions {
  seed: number;
  durationMs: number;
  /** The physical machines a fault may name. */
  hosts: readonly string[];
  startMs?: number;
}

/**
 * The BMC fleet's faults: a track of their own, from a stream of their own, so every seed's
 * control-plane schedule (planFaults) is what it was before bare metal joined the soak, and a
 * failing seed replays exactly. A BMC fault may overlap a control-plane fault: the fleet is
 * another system, and a worst day does not wait for one to end. Within the track they follow one
 * another; every kind once (seeded order) while time allows, then seeded picks.
 */
export function planBmcFaults(o: BmcScheduleOptions): BmcFault[] {
  const random = seededRandom(o.seed ^ 0xb3c);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const firstRound = [...BMC_FAULT_KINDS];
  for (let i = firstRound.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [firstRound[i], firstRound[j]] = [firstRound[j]!, firstRound[i]!];
  }
  const out: BmcFault[] = [];
  if (o.hosts.length === 0) return out;
  let at = o.startMs ?? 8_000;
  while (at < o.durationMs) {
    const kind = firstRound.shift() ?? BMC_FAULT_KINDS[Math.floor(random() * BMC_FAULT_KINDS.length)]!;
    const left = [...o.hosts];
    const hosts = Array.from(
      { length: between(1, Math.min(2, left.length)) },
      () => left.splice(Math.floor(random() * left.length), 1)[0]!,
    );
    const durationMs = between(4_000, 12_000);
    out.push({
      kind,
      at,
      hosts: kind === 'slowPower' ? [] : hosts.sort(),
      durationMs,
      ...(kind === 'slowPower' ? { powerOnDelayMs: between(1_000, 4_000) } : {}),
    });
    at += durationMs + between(2_000, 6_000);
  }
  return out;
}

export function describeBmcFault(f: BmcFault): string {
  const what =
    f.kind === 'slowPower'
      ? `every power-on takes ${f.powerOnDelayMs} ms`
      : `${f.kind} ${f.hosts.join(', ')}`;
  return `BMC fleet: ${what} for ${f.durationMs} ms`;
}

// ------------------------------------------------------- the hypervisor's VMs

/** What the simulated hypervisor can do wrong (src/cluster/infra/hypervisor/protocol.ts). */
export type KvmFaultKind = 'die' | 'neverBoot' | 'slowBoot';

export const KVM_FAULT_KINDS: readonly KvmFaultKind[] = ['die', 'neverBoot', 'slowBoot'];

/**
 * One hypervisor fault, for `durationMs`: `die` kills `vms` running VMs (picked when it comes, from
 * the workload clusters' VMs then running); `neverBoot` makes the next VM that boots hang for good
 * (failNextBoots: the one a scale-up, an upgrade or a replacement starts); `slowBoot` makes every VM
 * that starts booting take `bootDelayMs`.
 */
export interface KvmFault {
  kind: KvmFaultKind;
  at: number;
  durationMs: number;
  vms?: number;
  bootDelayMs?: number;
}

/**
 * The hypervisor's faults: a track of their own from a stream of their own (as the BMC fleet's),
 * so the control-plane and BMC schedules of every seed stay what they were. Every kind once
 * (seeded order) while time allows, then seeded picks, one after another.
 */
export function planKvmFaults(o: { seed: number; durationMs: number; startMs?: number }): KvmFault[] {
  const random = seededRandom(o.seed ^ 0x6b76);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const firstRound = [...KVM_FAULT_KINDS];
  for (let i = firstRound.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [firstRound[i], firstRound[j]] = [firstRound[j]!, firstRound[i]!];
  }
  const out: KvmFault[] = [];
  let at = o.startMs ?? 25_000;
  while (at < o.durationMs) {
    const kind = firstRound.shift() ?? KVM_FAULT_KINDS[Math.floor(random() * KVM_FAULT_KINDS.length)]!;
    const durationMs = between(4_000, 10_000);
    out.push({
      kind,
      at,
      durationMs,
      ...(kind === 'die' ? { vms: between(1, 2) } : {}),
      ...(kind === 'slowBoot' ? { bootDelayMs: between(3_000, 8_000) } : {}),
    });
    at += durationMs + between(3_000, 8_000);
  }
  return out;
}

export function describeKvmFault(f: KvmFault): string {
  const what =
    f.kind === 'die'
      ? `${f.vms} running VM(s) die`
      : f.kind === 'neverBoot'
        ? 'the next VM to boot never boots'
        : `every VM boot takes ${f.bootDelayMs} ms`;
  return `hypervisor: ${what} for ${f.durationMs} ms`;
}
