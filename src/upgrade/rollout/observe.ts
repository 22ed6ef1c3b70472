// What the NodeVersion controller sees, turned into the planner's input. Pure:
// the controller hands over what its cache holds, so the same cluster state
// always gives the same ObservedState, and tests need no cluster.
import type { V1NodeStatus } from '@kubernetes/client-node';
import type { NodeMaintenance } from '../../api/maintenance.ts';
import type { NodeVersion, PendingNode, ScalingGroup } from '../../api/upgrade.ts';
import { STRATEGY_DEFAULTS } from '../../api/upgrade-values.ts';
import { isReady } from '../../runtime/conditions.ts';
import { parseDuration } from '../../runtime/duration.ts';
import type { K8sObject, ObjectMeta } from '../../runtime/resources.ts';
import { Upgrade } from '../names.ts';
import type { CloudInstance } from '../providers/interface.ts';
import { type GroupBound, resolveBudgets, surgeCapacity } from './budgets.ts';
import {
  type Classification,
  classifyNodes,
  type DrainPhase,
  type GroupView,
  type ObservedNode,
  type ObservedState,
  type PendingView,
  type Role,
  type UnrecordedLaunch,
} from './classify.ts';

const A = Upgrade.annotations;

/** A Node as the cache holds it (plain JSON). */
export type NodeObject = K8sObject & {
  metadata: ObjectMeta;
  spec?: { providerID?: string; unschedulable?: boolean };
  status?: V1NodeStatus;
};

/** What the controller's cache holds for one NodeVersion, at one moment. */
export interface ClusterSnapshot {
  nodeVersion: NodeVersion;
  /** ScalingGroups that name this NodeVersion. */
  groups: readonly ScalingGroup[];
  nodes: readonly NodeObject[];
  /** PendingNodes this NodeVersion created. */
  pending: readonly PendingNode[];
  /** NodeMaintenances this NodeVersion created. */
  maintenances: readonly NodeMaintenance[];
  /** False while an autoscaler is not yet paused. */
  mayCreate: boolean;
  /** The cloud's instances of these groups, by group id; absent when the cloud could not be asked. */
  instances?: ReadonlyMap<string, readonly CloudInstance[]>;
  /** Per group: when each instance the cloud lists none of yet was asked for (CloudProvider.requestedLaunches). */
  requestedLaunches?: ReadonlyMap<string, readonly number[]>;
  /** Nodes the cloud does not know: invalid, and no part of any budget. */
  refused?: ReadonlySet<string>;
  now: number;
}

type StrategyWithDefaults = Required<NonNullable<NodeVersion['spec']['strategy']>>;

/**
 * The strategy with the schema's defaults filled in (for objects stored before a
 * default existed). By hand, not TypeBox's Value.Default: `upgrade status` shows
 * it, and its fields are flat; a test holds it equal to Value.Default.
 */
export function strategyOf(nv: NodeVersion): StrategyWithDefaults {
  const out: Record<string, unknown> = { ...STRATEGY_DEFAULTS };
  for (const [k, v] of Object.entries(nv.spec.strategy ?? {})) if (v !== undefined) out[k] = v;
  return out as StrategyWithDefaults;
}

export function nodeReadyTimeoutMs(nv: NodeVersion): number {
  return parseDuration(strategyOf(nv).nodeReadyTimeout);
}

/** The rollout this NodeVersion is running started at this time (epoch ms), if one runs. */
function rolloutStart(nv: NodeVersion): number | undefined {
  const s = nv.status;
  if (!s?.startTime || s.finishTime) return undefined;
  return Date.parse(s.startTime);
}

/** Maps our NodeMaintenance phases to the planner's drain phases. */
function drainPhase(nm: NodeMaintenance): DrainPhase {
  const phase = nm.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return phase;
  return 'Running';
}

/** A ScalingGroup as the planner sees it, with its own rollout budgets when it sets them. */
function groupView(g: ScalingGroup): GroupView {
  const budget = g.spec.rollout ?? {};
  return {
    id: g.spec.groupId,
    role: g.spec.role ?? 'Worker',
    min: g.spec.min ?? 0,
    // WHY not spec.max: it bounds the autoscaler; a rollout may briefly exceed it by its surge.
    max: budget.maxSize ?? Number.POSITIVE_INFINITY,
    ...(g.status?.imageReference ? { image: g.status.imageReference } : {}),
    ...(budget.maxSurge !== undefined ? { maxSurge: budget.maxSurge } : {}),
    ...(budget.maxUnavailable !== undefined ? { maxUnavailable: budget.maxUnavailable } : {}),
  };
}

/**
 * The nodes the cluster is meant to have, which percentages are of (a
 * Deployment's replicas): up to date, outdated and donors. Heirs stand in for
 * their donors; mints and obsolete nodes are extra.
 */
function meantToHave(c: Classification): number {
  return c.upToDate.length + c.outdated.length + c.donors.length;
}

/** Where each group stops, for the surge capacity. */
export function boundsOf(groups: readonly ScalingGroup[]): GroupBound[] {
  return groups.map((g) => ({
    groupId: g.spec.groupId,
    ...(g.spec.rollout?.maxSize !== undefined ? { maxSize: g.spec.rollout.maxSize } : {}),
    ...(g.spec.max !== undefined ? { max: g.spec.max } : {}),
  }));
}

/** States of an instance that may still become (or already be) a node. */
const LIVE = new Set(['Unknown', 'Creating', 'Ready']);

/** Live instances of the target image that no PendingNode or Node accounts for. */
function unrecordedLaunches(snapshot: ClusterSnapshot): UnrecordedLaunch[] {
  if (!snapshot.instances) return [];
  const target = snapshot.nodeVersion.spec.image.toLowerCase();
  const known = new Set<string>();
  for (const n of snapshot.nodes) if (n.spec?.providerID) known.add(n.spec.providerID);
  for (const p of snapshot.pending) known.add(p.spec.providerID);
  const out: UnrecordedLaunch[] = [];
  for (const [groupId, instances] of snapshot.instances) {
    for (const i of instances) {
      if (!LIVE.has(i.state) || known.has(i.providerID) || i.image.toLowerCase() !== target) continue;
      out.push({ providerID: i.providerID, nodeName: i.nodeName, groupId, createdAt: i.createdAt });
    }
  }
  return out;
}

/** The observed state, and its classification (made once, for the budgets and the plan). */
export interface Observation {
  state: ObservedState;
  classification: Classification;
}

export function observe(snapshot: ClusterSnapshot): ObservedState {
  return observeRollout(snapshot).state;
}

export function observeRollout(snapshot: ClusterSnapshot): Observation {
  const { nodeVersion: nv, now } = snapshot;
  const nodes = observeNodes(snapshot);
  const pending = snapshot.pending.map(pendingView);
  const target = { image: nv.spec.image, kubernetesVersion: nv.spec.kubernetesVersion ?? '' };
  const classification = classifyNodes({ nodes, pending, target });
  const s = strategyOf(nv);
  const budgets = resolveBudgets(s, meantToHave(classification), surgeCapacity(boundsOf(snapshot.groups)));
  const state: ObservedState = {
    nodes,
    pending,
    groups: snapshot.groups.map(groupView),
    target,
    strategy: {
      maxSurge: budgets.maxSurge,
      maxUnavailable: budgets.maxUnavailable,
      controlPlaneFirst: s.controlPlaneFirst,
      paused: s.paused,
      ...(budgets.clamp ? { surgeClamp: budgets.clamp } : {}),
    },
    now,
    mayCreate: snapshot.mayCreate,
    nodeReadyTimeoutMs: parseDuration(s.nodeReadyTimeout),
    unrecorded: unrecordedLaunches(snapshot),
    ...(snapshot.requestedLaunches?.size ? { requestedLaunches: snapshot.requestedLaunches } : {}),
  };
  return { state, classification };
}

/** The nodes of this NodeVersion's groups (and unannotated ones), as the planner sees them. */
function observeNodes(snapshot: ClusterSnapshot): ObservedNode[] {
  const groupRole = new Map<string, Role>(
    snapshot.groups.map((g) => [g.spec.groupId, g.spec.role ?? 'Worker']),
  );
  const drains = new Map(snapshot.maintenances.map((nm) => [nm.spec.nodeName, drainPhase(nm)]));
  const joining = new Set(
    snapshot.pending.filter((p) => p.spec.goal === 'Join').map((p) => p.spec.providerID),
  );
  const started = rolloutStart(snapshot.nodeVersion);
  const nodes: ObservedNode[] = [];
  for (const node of snapshot.nodes) {
    const groupId = node.metadata?.annotations?.[A.scalingGroup];
    // Nodes of groups another NodeVersion governs are not ours to count or replace.
    if (groupId !== undefined && !groupRole.has(groupId)) continue;
    const o = observeNode(node, groupId ? groupRole.get(groupId) : undefined, snapshot.refused);
    const drain = drains.get(o.name);
    if (drain) o.drain = drain;
    if (madeButUnrecorded(node, started, joining)) o.orphanedJoin = true;
    nodes.push(o);
  }
  return nodes;
}

function observeNode(
  node: NodeObject,
  groupRole: Role | undefined,
  refused?: ReadonlySet<string>,
): ObservedNode {
  const ann = node.metadata?.annotations ?? {};
  const name = node.metadata?.name ?? '';
  const providerID = node.spec?.providerID;
  const labels = node.metadata?.labels ?? {};
  const o: ObservedNode = {
    name,
    role: groupRole ?? ('node-role.kubernetes.io/control-plane' in labels ? 'ControlPlane' : 'Worker'),
    ready: isReady(node),
    labels,
    annotations: {
      ...(ann[A.donor] ? { donor: ann[A.donor] } : {}),
      ...(ann[A.heir] ? { heir: ann[A.heir] } : {}),
      ...(ann[A.obsolete] === 'true' ? { obsolete: true } : {}),
    },
  };
  // A node the cloud refused is invalid (no provider ID for the planner), not awaiting annotation.
  if (providerID && !refused?.has(name)) o.providerID = providerID;
  if (ann[A.scalingGroup]) o.groupId = ann[A.scalingGroup];
  if (ann[A.image]) o.image = ann[A.image];
  const kubelet = node.status?.nodeInfo?.kubeletVersion;
  if (kubelet) o.kubernetesVersion = kubelet;
  const retryAt = Date.parse(ann[A.drainRetryAt] ?? '');
  if (Number.isFinite(retryAt)) o.drainRetryAt = retryAt;
  const pairedAt = Date.parse(ann[A.pairedAt] ?? '');
  if (Number.isFinite(pairedAt)) o.pairedAt = pairedAt;
  const createdAt = Date.parse(node.metadata?.creationTimestamp ?? '');
  if (Number.isFinite(createdAt)) o.createdAt = createdAt;
  return o;
}

/** Made by this rollout but never recorded as a PendingNode (stopped between the two writes). */
function madeButUnrecorded(
  node: NodeObject,
  started: number | undefined,
  joining: ReadonlySet<string>,
): boolean {
  const ann = node.metadata?.annotations ?? {};
  const providerID = node.spec?.providerID;
  const created = Date.parse(String(node.metadata?.creationTimestamp ?? ''));
  return (
    started !== undefined &&
    Number.isFinite(created) &&
    created >= started &&
    !!providerID &&
    !joining.has(providerID) &&
    !ann[A.replaces] &&
    !ann[A.donor]
  );
}

function pendingView(p: PendingNode): PendingView {
  const deadline = p.spec.deadline ? Date.parse(p.spec.deadline) : Number.POSITIVE_INFINITY;
  const image = p.metadata?.annotations?.[A.targetImage];
  return {
    name: p.metadata?.name ?? '',
    providerID: p.spec.providerID,
    groupId: p.spec.groupID,
    nodeName: p.spec.nodeName,
    goal: p.spec.goal,
    deadline: Number.isFinite(deadline) ? deadline : Number.POSITIVE_INFINITY,
    ...(image ? { image } : {}),
  };
}
