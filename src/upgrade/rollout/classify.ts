// Observed state of a rolling node upgrade, and the anchor's node groups.
// Pure: no I/O. See ../shared/reference/upgrades.md §2 (Constellation NodeVersion controller).

import type { SurgeClamp } from './budgets.ts';

export type Role = 'ControlPlane' | 'Worker';

/** Phase of the NodeMaintenance we created to drain a node; absent when none exists. */
export type DrainPhase = 'Running' | 'Succeeded' | 'Failed';

export interface PairingAnnotations {
  /** On an heir: the name of the outdated node it replaces. */
  donor?: string;
  /** On a donor: the name of the new node that replaces it. */
  heir?: string;
  obsolete?: boolean;
}

export interface ObservedNode {
  name: string;
  providerID?: string;
  /** Scaling-group annotation; absent until the node is annotated. */
  groupId?: string;
  role: Role;
  /** Node-image annotation; absent until the node is annotated. */
  image?: string;
  /** Kubernetes-components annotation; absent until the node is annotated. */
  kubernetesVersion?: string;
  ready: boolean;
  labels?: Record<string, string>;
  annotations?: PairingAnnotations;
  drain?: DrainPhase;
  /** No new drain of this node before this time (epoch ms): backoff after a failed drain. */
  drainRetryAt?: number;
  /** On a donor: when it was paired with its heir (epoch ms). */
  pairedAt?: number;
  /** When its Node object was made (epoch ms). */
  createdAt?: number;
  /**
   * A new node the rollout made whose PendingNode was never written (the operator
   * stopped between the cloud call and the write): adopted as a mint, not left as surplus.
   */
  orphanedJoin?: boolean;
}

/** What the planner sees of a PendingNode: a node joining or leaving. */
export interface PendingView {
  name: string;
  providerID: string;
  groupId: string;
  nodeName?: string;
  goal: 'Join' | 'Leave';
  /** Epoch milliseconds. */
  deadline: number;
  /** The target image the node was created for; a Join for an older target is not surge toward this one. */
  image?: string;
}

/**
 * An instance of one of our groups, booted from the target image, that no PendingNode
 * or Node accounts for: the operator stopped after the cloud accepted createNode and
 * before its PendingNode was written. It is a replacement on its way, not a missing one.
 */
export interface UnrecordedLaunch {
  providerID: string;
  nodeName: string;
  groupId: string;
  /** When the cloud accepted it (epoch ms); its join deadline runs from here. */
  createdAt: number;
}

/** What the planner sees of a ScalingGroup. */
export interface GroupView {
  id: string;
  role: Role;
  min: number;
  /** Most nodes the group may have during a rollout, new ones included (ScalingGroup spec.rollout.maxSize). */
  max: number;
  /** Launch image the cloud group currently uses; absent when unknown. */
  image?: string;
  /** Per-group budgets under the overall ones (ScalingGroup spec.rollout); the strategy's apply when absent. */
  maxSurge?: number;
  maxUnavailable?: number;
}

export interface Target {
  image: string;
  /** Empty: any Kubernetes version is on target (only the image is rolled out). */
  kubernetesVersion: string;
}

/** What the planner sees of the NodeVersion's rollout strategy. */
export interface StrategyView {
  /** Extra nodes at once, overall. */
  maxSurge: number;
  /** Donors draining at once, overall; 0: surge-only, drains bounded by maxSurge alone. */
  maxUnavailable: number;
  controlPlaneFirst: boolean;
  paused: boolean;
  /** Present when maxSurge was cut to what the scaling groups can hold. */
  surgeClamp?: SurgeClamp;
}

export interface ObservedState {
  nodes: readonly ObservedNode[];
  pending: readonly PendingView[];
  groups: readonly GroupView[];
  target: Target;
  strategy: StrategyView;
  /** Epoch milliseconds. */
  now: number;
  /** False while something outside (the cluster autoscaler) may still resize groups: no new nodes. */
  mayCreate?: boolean;
  /** Booting instances no PendingNode or Node accounts for (see UnrecordedLaunch). */
  unrecorded?: readonly UnrecordedLaunch[];
  /** Per group: when each instance the cloud lists none of yet was asked for (epoch ms). */
  requestedLaunches?: ReadonlyMap<string, readonly number[]>;
  /**
   * The strategy's nodeReadyTimeout; absent or 0: never. An heir not Ready this long after
   * pairing is given up (made obsolete); a surplus node or a requested launch this old and
   * still not Ready (not listed) no longer counts toward the surge.
   */
  nodeReadyTimeoutMs?: number;
}

/** Node names (pending: PendingNode names) per group, each sorted. */
export interface Classification {
  upToDate: string[];
  outdated: string[];
  donors: string[];
  heirs: string[];
  mints: string[];
  pending: string[];
  obsolete: string[];
  invalid: string[];
  awaitingAnnotation: string[];
}

export type NodeClass = Exclude<keyof Classification, 'pending'>;

const norm = (s: string): string => s.trim().toLowerCase();
// WHY: the anchor compares case-insensitively; we also accept "1.31.2" for "v1.31.2".
const normVersion = (s: string): string => norm(s).replace(/^v/, '');

/** Whether a node runs the target image and Kubernetes version (both annotations present). */
export function onTarget(node: ObservedNode, target: Target): boolean {
  return (
    node.image !== undefined &&
    node.kubernetesVersion !== undefined &&
    norm(node.image) === norm(target.image) &&
    (target.kubernetesVersion === '' ||
      normVersion(node.kubernetesVersion) === normVersion(target.kubernetesVersion))
  );
}

/** The anchor's groupNodes, check for check in its order (upgrades.md §2 step 5). */
export function classifyNode(
  node: ObservedNode,
  state: Pick<ObservedState, 'pending' | 'target'>,
): NodeClass {
  const a = node.annotations ?? {};
  if (a.obsolete) return 'obsolete';
  // WHY: the anchor marks a node without providerID invalid while annotating; same outcome here.
  if (!node.providerID) return 'invalid';
  if (!node.image || !node.kubernetesVersion || !node.groupId) return 'awaitingAnnotation';
  if (!onTarget(node, state.target)) return a.heir ? 'donors' : 'outdated';
  if (a.donor) return 'heirs';
  const joining = state.pending.some((p) => p.goal === 'Join' && p.providerID === node.providerID);
  return joining || node.orphanedJoin ? 'mints' : 'upToDate';
}

export function classifyNodes(state: Pick<ObservedState, 'nodes' | 'pending' | 'target'>): Classification {
  const out: Classification = {
    upToDate: [],
    outdated: [],
    donors: [],
    heirs: [],
    mints: [],
    pending: state.pending.map((p) => p.name),
    obsolete: [],
    invalid: [],
    awaitingAnnotation: [],
  };
  for (const node of state.nodes) out[classifyNode(node, state)].push(node.name);
  for (const list of Object.values(out)) list.sort();
  return out;
}

// Label keys under kubernetes.io / k8s.io (or a subdomain of either) belong to the
// kubelet and cloud, not the user (anchor internal/node FilterLabels).
const RESERVED_DOMAINS = ['kubernetes.io', 'k8s.io'];

export function isReservedLabel(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const prefix = key.slice(0, slash).toLowerCase();
  return RESERVED_DOMAINS.some((d) => prefix === d || prefix.endsWith(`.${d}`));
}

/** The donor's labels an heir inherits. */
export function inheritedLabels(labels: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(labels ?? {}).sort()) {
    if (!isReservedLabel(key)) out[key] = labels![key]!;
  }
  return out;
}
