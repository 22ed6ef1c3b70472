// The simulated fleet: which nodes a local cluster has, and the Node objects
// that describe them. Pure functions from a pool spec to manifests, so the
// whole layout can be unit-tested without a cluster. Every fleet node is an
// instance of the simulated cloud (its pool is a scaling group), so it carries
// the provider ID and image a node the cloud launches later carries too.
import type { V1Node } from '@kubernetes/client-node';
import { providerIDOf } from './infra/cloud/provider-id.ts';

/** Labels a real fleet carries, that later capabilities schedule and spread by. */
export const Labels = {
  zone: 'topology.kubernetes.io/zone',
  region: 'topology.kubernetes.io/region',
  instanceType: 'node.kubernetes.io/instance-type',
  rack: 'topology.nodewarden.dev/rack',
  pool: 'nodewarden.dev/pool',
  controlPlane: 'node-role.kubernetes.io/control-plane',
  hostname: 'kubernetes.io/hostname',
  /** The image the node booted from, as a label value (see labelValue). */
  image: 'nodewarden.dev/image',
  /** The simulated cloud's scaling group of the node. */
  scalingGroup: 'nodewarden.dev/scaling-group',
  kubernetesVersion: 'nodewarden.dev/kubernetes-version',
} as const;

/** The image annotation: the exact image reference, which a label value cannot always hold. */
export const IMAGE_ANNOTATION = 'nodewarden.dev/image';

/** The image a new cluster's fleet and scaling groups boot from. */
export const DEFAULT_NODE_IMAGE = 'nwos-1.0.0';

/** kwok only manages nodes carrying this annotation (kwokctl's default selector). */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';

export type Role = 'control-plane' | 'worker';

export interface Pool {
  name: string;
  count: number;
  role: Role;
  zones: string[];
  instanceType: string;
  racksPerZone: number;
  cpu: string;
  memory: string;
  pods: number;
  /** Extra labels given as `key/with-slash=value` in the spec. */
  labels: Record<string, string>;
  /** Real nodes (kubelet and containerd, see real-nodes/) instead of kwok's. */
  real?: boolean;
}

export const DEFAULT_ZONES = ['nw-zone-a', 'nw-zone-b', 'nw-zone-c'];
export const DEFAULT_REGION = 'nw-region-1';

function defaultPool(name: string, count: number): Pool {
  return {
    name,
    count,
    role: 'worker',
    zones: [...DEFAULT_ZONES],
    instanceType: 'nw.standard-8',
    racksPerZone: 2,
    cpu: '8',
    memory: '32Gi',
    pods: 110,
    labels: {},
  };
}

export class PoolSpecError extends Error {}

const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUANTITY = /^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$/;

/**
 * Parses pools: `NAME=COUNT[:key=value,...]`, several separated by `;`.
 * Keys: role (worker|control-plane), zones (a|b|c), type, racks, cpu, memory, pods,
 * and any `prefix/name=value` as an extra label.
 * Example: `cp=3:role=control-plane,type=nw.cp-4;worker=9:zones=nw-zone-a|nw-zone-b`
 */
export function parsePools(spec: string): Pool[] {
  const pools: Pool[] = [];
  for (const raw of spec
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [head = '', options = ''] = splitOnce(raw, ':');
    const [name = '', countText = ''] = splitOnce(head, '=');
    if (!NAME.test(name)) throw new PoolSpecError(`pool "${raw}": name "${name}" must be a DNS label`);
    const count = Number(countText);
    if (!Number.isInteger(count) || count < 1 || count > 10000) {
      throw new PoolSpecError(`pool "${name}": count "${countText}" must be a whole number from 1 to 10000`);
    }
    const pool = defaultPool(name, count);
    for (const option of options
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      applyOption(pool, option);
    }
    if (pools.some((p) => p.name === name)) throw new PoolSpecError(`pool "${name}" is given twice`);
    // kubelet may not label itself node-role.kubernetes.io/*, and the control plane is kwokctl's.
    if (pool.real && pool.role === 'control-plane')
      throw new PoolSpecError(`pool "${name}": real nodes are workers; the control plane runs on the host`);
    pools.push(pool);
  }
  if (pools.length === 0) throw new PoolSpecError('no pools given');
  return pools;
}

function applyOption(pool: Pool, option: string): void {
  const [key = '', value = ''] = splitOnce(option, '=');
  const where = `pool "${pool.name}", option "${option}"`;
  switch (key) {
    case 'real':
      if (value !== '' && value !== 'true') throw new PoolSpecError(`${where}: real takes no value`);
      pool.real = true;
      return;
    case 'role':
      if (value !== 'worker' && value !== 'control-plane') {
        throw new PoolSpecError(`${where}: role must be worker or control-plane`);
      }
      pool.role = value;
      if (value === 'control-plane' && pool.instanceType === 'nw.standard-8')
        pool.instanceType = 'nw.control-4';
      return;
    case 'zones':
      pool.zones = value.split('|').filter(Boolean);
      if (pool.zones.length === 0 || !pool.zones.every((z) => NAME.test(z))) {
        throw new PoolSpecError(`${where}: zones must be DNS labels separated by |`);
      }
      return;
    case 'type':
      if (!/^[A-Za-z0-9][-A-Za-z0-9_.]*$/.test(value)) throw new PoolSpecError(`${where}: bad instance type`);
      pool.instanceType = value;
      return;
    case 'racks':
      pool.racksPerZone = positiveInt(value, where);
      return;
    case 'pods':
      pool.pods = positiveInt(value, where);
      return;
    case 'cpu':
    case 'memory':
      if (!QUANTITY.test(value)) throw new PoolSpecError(`${where}: ${key} must be a Kubernetes quantity`);
      pool[key] = value;
      return;
    default:
      if (key.includes('/') && value !== undefined) {
        pool.labels[key] = value;
        return;
      }
      throw new PoolSpecError(
        `${where}: unknown key "${key}" (real, role, zones, type, racks, cpu, memory, pods, or a prefix/label)`,
      );
  }
}

function positiveInt(value: string, where: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new PoolSpecError(`${where}: must be a whole number above 0`);
  return n;
}

function splitOnce(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + 1)];
}

/** `--nodes N` alone: one worker pool of N nodes spread over three zones. */
export function poolsForNodeCount(nodes: number): Pool[] {
  if (!Number.isInteger(nodes) || nodes < 0 || nodes > 10000) {
    throw new PoolSpecError(`--nodes must be a whole number from 0 to 10000, not ${nodes}`);
  }
  return nodes === 0 ? [] : [defaultPool('worker', nodes)];
}

/** How many simulated nodes the fleet has (real nodes are kubelets', not kwok's). */
export function fleetSize(pools: Pool[]): number {
  return pools.reduce((sum, p) => sum + (p.real ? 0 : p.count), 0);
}

/** `--real-nodes N`: a worker pool of N real nodes, named real-000… */
export function realPool(count: number): Pool {
  if (!Number.isInteger(count) || count < 1 || count > 200)
    throw new PoolSpecError(`--real-nodes must be a whole number from 1 to 200, not ${count}`);
  return { ...defaultPool('real', count), real: true };
}

/** The Node objects for a fleet's simulated pools, spread round-robin over each pool's zones and racks. */
export function fleetNodes(pools: Pool[], kubeletVersion: string): V1Node[] {
  const nodes: V1Node[] = [];
  for (const pool of pools.filter((p) => !p.real)) {
    const width = Math.max(3, String(pool.count - 1).length);
    for (let i = 0; i < pool.count; i++) {
      const name = `${pool.name}-${String(i).padStart(width, '0')}`;
      const zone = pool.zones[i % pool.zones.length]!;
      const rack = Math.floor(i / pool.zones.length) % pool.racksPerZone;
      nodes.push(nodeManifest(pool, name, zone, `${zone}-rack-${rack}`, kubeletVersion));
    }
  }
  return nodes;
}

function nodeManifest(pool: Pool, name: string, zone: string, rack: string, kubeletVersion: string): V1Node {
  return simulatedNode({
    providerID: providerIDOf(pool.name, name),
    image: DEFAULT_NODE_IMAGE,
    scalingGroup: pool.name,
    name,
    zone,
    instanceType: pool.instanceType,
    pool: pool.name,
    controlPlane: pool.role === 'control-plane',
    cpu: pool.cpu,
    memory: pool.memory,
    pods: pool.pods,
    kubeletVersion,
    labels: { ...pool.labels, [Labels.rack]: rack },
  });
}

/** What varies between simulated nodes; everything else is the same for all of them. */
export interface SimulatedNodeSpec {
  name: string;
  zone: string;
  instanceType: string;
  pool: string;
  controlPlane: boolean;
  cpu: string;
  memory: string;
  pods: number;
  kubeletVersion: string;
  /** Extra labels; the standard ones above take precedence. */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  providerID?: string;
  /** The image the node booted from: labels, annotation and osImage say so when given. */
  image?: string;
  scalingGroup?: string;
  bootID?: string;
}

/** A Node object kwok will manage, with the labels, taints and capacity of a real fleet's node. */
export function simulatedNode(o: SimulatedNodeSpec): V1Node {
  const labels: Record<string, string> = {
    ...o.labels,
    [Labels.hostname]: o.name,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    [Labels.zone]: o.zone,
    [Labels.region]: DEFAULT_REGION,
    [Labels.instanceType]: o.instanceType,
    [Labels.pool]: o.pool,
    type: 'kwok',
  };
  if (o.controlPlane) labels[Labels.controlPlane] = '';
  const annotations: Record<string, string> = { ...o.annotations };
  if (o.image) {
    labels[Labels.image] = labelValue(o.image);
    labels[Labels.kubernetesVersion] = labelValue(o.kubeletVersion);
    annotations[IMAGE_ANNOTATION] = o.image;
  }
  if (o.scalingGroup) labels[Labels.scalingGroup] = o.scalingGroup;
  const resources = { cpu: o.cpu, memory: o.memory, pods: String(o.pods), 'ephemeral-storage': '100Gi' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: o.name,
      labels,
      annotations: { ...annotations, [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
    },
    spec: {
      ...(o.providerID ? { providerID: o.providerID } : {}),
      taints: o.controlPlane ? [{ key: Labels.controlPlane, effect: 'NoSchedule' }] : undefined,
    },
    status: {
      allocatable: resources,
      capacity: resources,
      nodeInfo: {
        architecture: 'amd64',
        operatingSystem: 'linux',
        osImage: o.image ?? 'nodewarden simulated node',
        kernelVersion: '6.1.0-simulated',
        kubeletVersion: o.kubeletVersion,
        kubeProxyVersion: o.kubeletVersion,
        containerRuntimeVersion: 'kwok://simulated',
        machineID: o.name,
        systemUUID: o.name,
        bootID: o.bootID ?? o.name,
      },
    },
  };
}

/** A label value for any string: at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric. */
export function labelValue(s: string): string {
  return s
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}
