// The NodeMaintenance validating webhook. Parity anchor: medik8s's webhook
// (node exists, one maintenance per node, nodeName immutable) — but its
// control-plane guard only works on OpenShift (etcd-guard PDB); ours counts
// healthy control-plane nodes and works on any cluster.
import { isDeepStrictEqual } from 'node:util';
import { Maintenance, type NodeMaintenance, NodeMaintenances } from '../api/maintenance.ts';
import type { KubeClient } from '../runtime/client.ts';
import { isReady } from '../runtime/conditions.ts';
import type { CacheRegistrar } from '../runtime/host.ts';
import { type K8sObject, Nodes, type ResourceType } from '../runtime/resources.ts';
import type { AdmissionHandler } from '../runtime/webhook.ts';
import {
  onCreateOrUpdate,
  registerLocalWebhooks,
  validatingWebhookConfiguration,
  type WebhookConfigurationOptions,
  type WebhookEndpoint,
} from '../runtime/webhook-config.ts';
import { describeProblems, validateMaintenanceSpec } from './spec.ts';

const NM: ResourceType = NodeMaintenances.type;

export const NODE_MAINTENANCE_WEBHOOK_PATH = '/validate-maintenance-nodewarden-dev-v1alpha1-nodemaintenance';
/** The webhook's name inside the configuration (must be a qualified name). */
export const NODE_MAINTENANCE_WEBHOOK_NAME = 'vnodemaintenance.maintenance.nodewarden.dev';
export const CONTROL_PLANE_LABELS = [
  'node-role.kubernetes.io/control-plane',
  'node-role.kubernetes.io/master',
];

/** The parts of a Node the checks read. */
export interface Node extends K8sObject {
  spec?: { unschedulable?: boolean };
  status?: { conditions?: { type: string; status: string }[] };
}

export interface ClusterView {
  getNode(name: string): Node | undefined;
  listNodes(): Node[];
  listMaintenances(): NodeMaintenance[];
}

export type Verdict = { allowed: true } | { allowed: false; message: string };

const isControlPlane = (n: Node) => CONTROL_PLANE_LABELS.some((l) => n.metadata?.labels?.[l] !== undefined);

/**
 * CREATE: the spec is one the controller can act on (the same checks it makes
 * before touching the node); the node exists; no other NodeMaintenance names
 * it; a control-plane node may go only if the healthy control-plane nodes left
 * keep a majority. UPDATE: spec.nodeName may not change, and a changed spec
 * must pass the same checks. Pure: everything comes from `view`.
 */
export function validateNodeMaintenance(
  op: 'CREATE' | 'UPDATE',
  obj: NodeMaintenance,
  oldObj: NodeMaintenance | undefined,
  view: ClusterView,
): Verdict {
  const nodeName = obj.spec?.nodeName;
  if (op === 'UPDATE' && oldObj && oldObj.spec?.nodeName !== nodeName)
    return { allowed: false, message: "updating spec.nodeName isn't allowed" };
  // An update that leaves the spec alone (a finalizer removed, a label added) must pass even for an
  // object that was let in without this webhook, or it could never be deleted.
  if (op === 'CREATE' || !isDeepStrictEqual(oldObj?.spec, obj.spec)) {
    const problems = validateMaintenanceSpec(obj.spec);
    if (problems.length > 0)
      return { allowed: false, message: `invalid NodeMaintenance: ${describeProblems(problems)}` };
  }
  if (op === 'UPDATE') return { allowed: true };
  const node = view.getNode(nodeName);
  if (!node) return { allowed: false, message: `invalid nodeName, no node with name ${nodeName} found` };
  const others = view
    .listMaintenances()
    .filter((m) => !obj.metadata?.uid || m.metadata?.uid !== obj.metadata.uid);
  // Whatever its phase, and even while it is being deleted: two objects for one node would fight over it.
  if (others.some((m) => m.spec?.nodeName === nodeName))
    return {
      allowed: false,
      message: `invalid nodeName, a NodeMaintenance for node ${nodeName} already exists`,
    };
  if (!isControlPlane(node)) return { allowed: true };
  return quorumVerdict(obj, node, others, view);
}

/**
 * A control-plane node may go only if the healthy control-plane nodes left keep a
 * majority. A node replaced by a healthy control-plane heir leaves the cluster for
 * good: the majority is counted among the nodes without it (one node replaced by its
 * heir in a one-node control plane is 1 of 1, not 1 of 2).
 */
function quorumVerdict(
  obj: NodeMaintenance,
  node: Node,
  others: NodeMaintenance[],
  view: ClusterView,
): Verdict {
  const nodeName = node.metadata?.name ?? '';
  const inMaintenance = new Set(others.map((m) => m.spec?.nodeName));
  const healthy = (n: Node) =>
    isReady(n) && !n.spec?.unschedulable && !inMaintenance.has(n.metadata?.name ?? '');
  const cp = view.listNodes().filter(isControlPlane);
  const heirName = obj.metadata?.annotations?.[Maintenance.replacedByAnnotation];
  const heir = heirName && heirName !== nodeName ? cp.find((n) => n.metadata?.name === heirName) : undefined;
  const leaves = heir !== undefined && healthy(heir);
  const total = leaves ? cp.length - 1 : cp.length;
  const quorum = Math.floor(total / 2) + 1;
  // A node that is already down costs nothing to take out; only a healthy one lowers the count.
  const left = cp.filter(healthy).length - (healthy(node) ? 1 : 0);
  if (healthy(node) && left < quorum)
    return {
      allowed: false,
      message: `cannot put control-plane node ${nodeName} into maintenance: it would leave ${left} of ${total} control-plane nodes healthy, below the quorum of ${quorum}${heirName && !leaves ? ` (its heir ${heirName} is not a healthy control-plane node)` : ''}`,
    };
  return { allowed: true };
}

/**
 * The admission handler, reading Nodes and NodeMaintenances from the shared
 * cache (informers are registered here, so the manager starts and syncs them)
 * plus the creates it admitted in the last `admittedTtlMs` (30 s) that the
 * cache has not shown yet. Another replica's admissions stay invisible until
 * the cache has them: the same window the anchor's cached client has.
 */
export function nodeMaintenanceWebhook(
  cache: Pick<CacheRegistrar, 'informer'>,
  opts: { admittedTtlMs?: number } = {},
): AdmissionHandler {
  const nodes = cache.informer<Node>(Nodes);
  const maintenances = cache.informer<NodeMaintenance>(NM);
  // Creates we allowed that the informer has not delivered yet: without them two creates sent
  // back to back (kubectl apply of a list) would both see the old state and both pass.
  const admitted = new Map<string, { nm: NodeMaintenance; until: number }>();
  maintenances.onAdd((m) => admitted.delete(m.metadata?.uid ?? ''));
  const view: ClusterView = {
    getNode: (name) => nodes.get(name),
    listNodes: () => nodes.list(),
    listMaintenances: () => {
      const now = Date.now();
      for (const [uid, a] of admitted) if (a.until < now) admitted.delete(uid);
      return [...maintenances.list(), ...[...admitted.values()].map((a) => a.nm)];
    },
  };
  return async (req) => {
    if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { allowed: true };
    // An empty store would let a duplicate through: fail closed until the lists are in.
    if (!nodes.hasSynced() || !maintenances.hasSynced())
      return { allowed: false, code: 503, message: 'the webhook cache is not synced yet, please try again' };
    const obj = req.object as NodeMaintenance | undefined;
    if (!obj) return { allowed: false, code: 400, message: 'request has no object' };
    const old = (req.oldObject ?? undefined) as NodeMaintenance | undefined;
    const v = validateNodeMaintenance(req.operation, obj, old, view);
    if (!v.allowed) return { allowed: false, message: v.message };
    const uid = obj.metadata?.uid;
    if (req.operation === 'CREATE' && !req.dryRun && uid && !maintenances.get(obj.metadata.name ?? ''))
      admitted.set(uid, { nm: obj, until: Date.now() + (opts.admittedTtlMs ?? 30_000) });
    return { allowed: true };
  };
}

/** The webhook as the configuration declares it: where it answers and what it sees. */
export const nodeMaintenanceEndpoint: WebhookEndpoint = {
  name: NODE_MAINTENANCE_WEBHOOK_NAME,
  path: NODE_MAINTENANCE_WEBHOOK_PATH,
  rules: [onCreateOrUpdate(NodeMaintenances.type)],
};

/** The admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration for NodeMaintenance alone. */
export function webhookConfiguration(o: WebhookConfigurationOptions): K8sObject {
  return validatingWebhookConfiguration(o, [nodeMaintenanceEndpoint]);
}

/** Creates or updates the configuration with a url clientConfig (an operator outside the cluster). */
export async function registerLocalWebhook(
  client: KubeClient,
  o: { name: string; url: string; caPem: string; objectSelector?: { matchLabels?: Record<string, string> } },
): Promise<K8sObject> {
  return registerLocalWebhooks(client, o, [nodeMaintenanceEndpoint]);
}
