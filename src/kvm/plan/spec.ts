// What a KVMCluster's spec means, as pure functions: its nodes in order
// (masters first), the pod resources a VM needs (the anchor's formulas), the
// worker Service's port mappings, and the durations with their defaults.
import type { KVMClusterSpecType, KVMNodeSpec, NodeRole } from '../../api/kvm.ts';
import { parseDuration } from '../../runtime/duration.ts';

export interface ClusterNode {
  id: string;
  role: NodeRole;
  spec: KVMNodeSpec;
}

/** Masters, then workers, each in spec order: the order nodes are created and upgraded in. */
export function clusterNodes(spec: KVMClusterSpecType): ClusterNode[] {
  return [
    ...spec.masters.map((s) => ({ id: s.id, role: 'master' as const, spec: s })),
    ...(spec.workers ?? []).map((s) => ({ id: s.id, role: 'worker' as const, spec: s })),
  ];
}

const UNIT_BYTES: Record<string, number> = { M: 1e6, G: 1e9, Mi: 2 ** 20, Gi: 2 ** 30 };

/** Bytes in a memory string of the CRD's pattern ("8G", "1536M", "4Gi"); RangeError otherwise. */
export function parseMemory(text: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(Mi|Gi|M|G)$/.exec(text);
  if (!m) throw new RangeError(`memory "${text}" is not a size such as 8G, 1536M or 4Gi`);
  return Number(m[1]) * (UNIT_BYTES[m[2] ?? 'M'] ?? 1e6);
}

/**
 * The memory a master's pod asks for, in M (10^6 bytes): the VM's memory plus
 * 1024M for QEMU and 512M for the pod's other containers (anchor key.MemoryQuantityMaster).
 */
export function masterPodMemoryM(memory: string): number {
  return Math.ceil(parseMemory(memory) / 1e6) + 1024 + 512;
}

/**
 * The memory a worker's pod asks for, in M: GB×1024M + 512M + 768M×(2 + GB/12),
 * GB the VM's whole gigabytes and GB/12 an integer division (anchor key.MemoryQuantityWorker).
 */
export function workerPodMemoryM(memory: string): number {
  const gb = Math.floor(parseMemory(memory) / 1e9);
  return gb * 1024 + 512 + 768 * (2 + Math.floor(gb / 12));
}

export function podMemoryM(role: NodeRole, memory: string): number {
  return role === 'master' ? masterPodMemoryM(memory) : workerPodMemoryM(memory);
}

/**
 * The VM's memory in MiB as QEMU reads the spec's string (-m 8G is 8 GiB: QEMU's
 * units are binary, and it takes M and G only, so Mi and Gi are the same to it).
 */
export function qemuMemoryMiB(memory: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(Mi|Gi|M|G)$/.exec(memory);
  if (!m) throw new RangeError(`memory "${memory}" is not a size such as 8G, 1536M or 4Gi`);
  return Math.floor(Number(m[1]) * (m[2]?.startsWith('G') ? 1024 : 1));
}

/** The VM's memory as its Node's capacity, e.g. "8192Mi" for "8G". */
export function memoryQuantity(memory: string): string {
  return `${qemuMemoryMiB(memory)}Mi`;
}

export interface PortMap {
  name: string;
  /** Undefined: the API server allocates one (two clusters never fight over the same default). */
  nodePort?: number;
  targetPort: number;
}

/** The anchor's default mappings: http and https on 30010 and 30011 of the workers. */
export const DEFAULT_PORT_MAPPINGS: readonly PortMap[] = [
  { name: 'http', targetPort: 30010 },
  { name: 'https', targetPort: 30011 },
];

export function portMappings(spec: KVMClusterSpecType): PortMap[] {
  const given = spec.portMappings ?? [];
  if (given.length === 0) return DEFAULT_PORT_MAPPINGS.map((p) => ({ ...p }));
  return given.map((p) => ({
    name: p.name,
    targetPort: p.targetPort,
    ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}),
  }));
}

export interface UnhealthyPolicy {
  terminate: boolean;
  notReadyForMs: number;
  /** 0..1 */
  maxFraction: number;
  pauseBetweenMs: number;
}

export function unhealthyPolicy(spec: KVMClusterSpecType): UnhealthyPolicy {
  const u = spec.unhealthyNodes;
  return {
    terminate: u?.terminate ?? false,
    notReadyForMs: parseDuration(u?.notReadyFor ?? '30m'),
    maxFraction: Number((u?.maxFraction ?? '10%').replace('%', '')) / 100,
    pauseBetweenMs: parseDuration(u?.pauseBetween ?? '10m'),
  };
}

export function drainTimeoutMs(spec: KVMClusterSpecType): number {
  return parseDuration(spec.drain?.timeout ?? '10m');
}

export function securePort(spec: KVMClusterSpecType): number {
  return spec.api.securePort ?? 443;
}
