// An Airship SIPCluster (airship.airshipit.org/v1) as a TenantCluster, and
// what could not be carried over, so a SIP user moves in one command. Pure.
// The anchor's shape: ../shared/reference/baremetal.md §1.
import {
  TENANT_ROLES,
  type TenantCluster,
  type TenantClusterSpecType,
  TenantClusters,
} from '../api/tenant.ts';

export interface Conversion {
  cluster: TenantCluster;
  /** One line each: what was dropped or changed, and why. */
  notes: string[];
  /** What to do besides applying it. */
  hints: string[];
  /** The result's shape problems (as the API server would refuse it), if any. */
  invalid: string[];
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

export class ConversionError extends Error {}

type Services = NonNullable<TenantClusterSpecType['services']>;

const HINTS = [
  'hosts SIP labelled for this cluster (sip.airshipit.org/*, same namespace and name) are adopted: stop SIP first, and run the operator with --sip-compatible-labels if Cluster API selectors read those labels',
];

export function convertSipCluster(doc: unknown): Conversion {
  const sip = obj(doc);
  if (
    sip.kind !== 'SIPCluster' ||
    typeof sip.apiVersion !== 'string' ||
    !sip.apiVersion.startsWith('airship.airshipit.org/')
  )
    throw new ConversionError(
      `not a SIPCluster (airship.airshipit.org/v1): kind ${String(sip.kind)}, apiVersion ${String(sip.apiVersion)}`,
    );
  const meta = obj(sip.metadata);
  const spec = obj(sip.spec);
  const notes: string[] = [];
  const nodes = convertNodes(obj(spec.nodes), notes);
  const services = convertServices(obj(spec.services), notes);
  if (list(meta.finalizers).length) notes.push('metadata.finalizers: dropped; nodewarden adds its own');
  if (sip.status !== undefined) notes.push('status: dropped; the controller writes its own');

  const cluster = TenantClusters.make(
    {
      name: String(meta.name ?? ''),
      ...(typeof meta.namespace === 'string' ? { namespace: meta.namespace } : {}),
      ...(meta.labels ? { labels: meta.labels as Record<string, string> } : {}),
      ...(meta.annotations ? { annotations: meta.annotations as Record<string, string> } : {}),
    },
    { nodes, ...(Object.keys(services).length ? { services } : {}) },
  );
  const v = TenantClusters.validate(cluster);
  return { cluster, notes, hints: [...HINTS], invalid: v.ok ? [] : v.errors };
}

function convertNodes(sipNodes: Json, notes: string[]): TenantClusterSpecType['nodes'] {
  const nodes: TenantClusterSpecType['nodes'] = {};
  for (const [role, raw] of Object.entries(sipNodes)) {
    if (!(TENANT_ROLES as readonly string[]).includes(role)) {
      notes.push(`spec.nodes.${role}: dropped; only ControlPlane and Worker are roles here`);
      continue;
    }
    const n = obj(raw);
    const count = obj(n.count);
    const selector = obj(n.labelSelector);
    nodes[role] = {
      ...(Object.keys(selector).length ? { labelSelector: selector as never } : {}),
      ...(typeof n.topologyKey === 'string' && n.topologyKey ? { topologyKey: n.topologyKey } : {}),
      count: { active: Number(count.active ?? 0), standby: Number(count.standby ?? 0) },
    };
  }
  return nodes;
}

/** SIP lists each service; one of each is carried over, with what was dropped noted. */
function firstService(services: Json, field: string, target: string, notes: string[]): Json | undefined {
  const all = list(services[field]);
  if (all.length > 1)
    notes.push(
      `spec.services.${field}: ${all.length} given, only the first carried over (one ${target} per cluster)`,
    );
  const s = all[0] === undefined ? undefined : obj(all[0]);
  for (const gone of ['nodeLabels', 'clusterIP'])
    if (s && s[gone] !== undefined)
      notes.push(`spec.services.${field}[0].${gone}: dropped (never implemented in SIP)`);
  return s;
}

function convertServices(services: Json, notes: string[]): Services {
  const cp = firstService(services, 'loadBalancerControlPlane', 'controlPlaneLoadBalancer', notes);
  const w = firstService(services, 'loadBalancerWorker', 'workerLoadBalancer', notes);
  const jh = firstService(services, 'jumpHost', 'jumpHost', notes);
  for (const f of Object.keys(services))
    if (!['loadBalancerControlPlane', 'loadBalancerWorker', 'jumpHost'].includes(f))
      notes.push(`spec.services.${f}: dropped; no such service here`);
  const iface = (s: Json, where: string): string => {
    if (typeof s.nodeInterfaceId === 'string' && s.nodeInterfaceId) return s.nodeInterfaceId;
    notes.push(`${where}.nodeInterfaceId: missing (optional in SIP, required here); set to oam-ipv4`);
    return 'oam-ipv4';
  };
  const image = (s: Json) => (typeof s.image === 'string' && s.image ? { image: s.image } : {});
  const out: Services = {};
  if (cp)
    out.controlPlaneLoadBalancer = {
      nodePort: Number(cp.nodePort),
      nodeInterfaceId: iface(cp, 'services.controlPlaneLoadBalancer'),
      ...image(cp),
    };
  if (w) {
    const r = obj(w.nodePortRange);
    out.workerLoadBalancer = {
      nodePortRange: { start: Number(r.start), end: Number(r.end) },
      nodeInterfaceId: iface(w, 'services.workerLoadBalancer'),
      ...image(w),
    };
  }
  if (jh) {
    if (jh.bmc !== undefined)
      notes.push('spec.services.jumpHost[0].bmc.proxy: dropped (SIP never applied it either)');
    out.jumpHost = {
      nodePort: Number(jh.nodePort),
      nodeSSHPrivateKeys: String(jh.nodeSSHPrivateKeys ?? ''),
      nodeInterfaceId: iface(jh, 'services.jumpHost'),
      ...(Array.isArray(jh.sshAuthorizedKeys) ? { sshAuthorizedKeys: jh.sshAuthorizedKeys.map(String) } : {}),
      ...image(jh),
    };
  }
  return out;
}
