// maintenance.nodewarden.dev/v1alpha1 NodeMaintenance: put one node into
// maintenance (cordon, taint, drain with kubectl-drain semantics) and bring it
// back when the object is deleted. Parity anchor: medik8s NodeMaintenance
// (spec nodeName + reason); the drain settings, conditions, blocked-pod
// reporting and printer columns are ours.
import Type from 'typebox';
import { defineCustomResource, type ResourceOf } from './crd.ts';
import { NodeMaintenanceKind } from './kinds.ts';
import { cel, immutable } from './openapi.ts';

const PodRef = Type.Object({
  namespace: Type.String(),
  name: Type.String(),
});

const BlockedPod = Type.Object({
  namespace: Type.String(),
  name: Type.String(),
  /** The PodDisruptionBudget that refused the eviction, when the API server named it. */
  pdb: Type.Optional(Type.String()),
  message: Type.String({ maxLength: 1024 }),
});

const Taint = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 316 }),
  value: Type.Optional(Type.String({ maxLength: 63 })),
  effect: Type.Union([
    Type.Literal('NoSchedule'),
    Type.Literal('PreferNoSchedule'),
    Type.Literal('NoExecute'),
  ]),
});

export const Condition = Type.Object({
  type: Type.String({ maxLength: 316 }),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  reason: Type.String({ minLength: 1, maxLength: 1024 }),
  message: Type.String({ maxLength: 32768 }),
  lastTransitionTime: Type.String({ format: 'date-time' }),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: 'int64' })),
});

export const NodeMaintenanceSpec = Type.Object({
  nodeName: Type.String({
    description: 'The node to put into maintenance. Immutable.',
    minLength: 1,
    maxLength: 253,
    ...cel(immutable('nodeName is immutable: delete this NodeMaintenance and create another')),
  }),
  reason: Type.Optional(Type.String({ description: 'Why the node is in maintenance.', maxLength: 1024 })),
  timeout: Type.Optional(
    Type.String({
      description: 'Bound on the whole drain, e.g. "10m" or "1h30m"; "0" keeps trying until it succeeds.',
      pattern: '^(0|([0-9]+(\\.[0-9]+)?(s|m|h))+)$',
      default: '0',
    }),
  ),
  gracePeriodSeconds: Type.Optional(
    Type.Integer({
      description: "Grace period given to each evicted pod; -1 (default) uses the pod's own.",
      minimum: -1,
      maximum: 86400,
      default: -1,
    }),
  ),
  podSelector: Type.Optional(
    Type.String({ description: 'Only drain pods matching this label selector.', maxLength: 1024 }),
  ),
  deleteEmptyDirData: Type.Optional(
    Type.Boolean({ description: 'Evict pods using emptyDir volumes (their data is lost).', default: true }),
  ),
  evictUnmanagedPods: Type.Optional(
    Type.Boolean({ description: 'Evict pods no controller manages (kubectl drain --force).', default: true }),
  ),
  ignoreDaemonSets: Type.Optional(
    Type.Boolean({
      description: 'Leave DaemonSet pods in place; when false they block the drain.',
      default: true,
    }),
  ),
  taints: Type.Optional(
    Type.Array(Taint, {
      description: 'Extra taints to put on the node while it is in maintenance.',
      maxItems: 16,
    }),
  ),
});

export const NodeMaintenanceStatus = Type.Object({
  phase: Type.Optional(
    Type.Union([
      Type.Literal('Pending'),
      Type.Literal('Running'),
      Type.Literal('Succeeded'),
      Type.Literal('Failed'),
    ]),
  ),
  conditions: Type.Optional(
    Type.Array(Condition, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  ),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: 'int64' })),
  drainProgress: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  totalPods: Type.Optional(Type.Integer({ minimum: 0 })),
  evictionPods: Type.Optional(Type.Integer({ minimum: 0 })),
  pendingPods: Type.Optional(Type.Array(PodRef)),
  blockedPods: Type.Optional(Type.Array(BlockedPod)),
  lastError: Type.Optional(Type.String()),
  lastUpdate: Type.Optional(Type.String({ format: 'date-time' })),
  startTime: Type.Optional(Type.String({ format: 'date-time' })),
  completionTime: Type.Optional(Type.String({ format: 'date-time' })),
  /**
   * Whether the node was schedulable before we cordoned it, recorded before the
   * cordon, so deleting the maintenance uncordons only what we cordoned.
   */
  nodeWasSchedulable: Type.Optional(Type.Boolean()),
});

export const NodeMaintenances = defineCustomResource({
  ...NodeMaintenanceKind,
  singular: 'nodemaintenance',
  shortNames: ['nm'],
  categories: ['nodewarden'],
  description:
    'Puts one node into maintenance: cordon, taint and drain it; deleting the object brings it back.',
  spec: NodeMaintenanceSpec,
  status: NodeMaintenanceStatus,
  printerColumns: [
    { name: 'Node', type: 'string', jsonPath: '.spec.nodeName' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    {
      name: 'Progress',
      type: 'integer',
      jsonPath: '.status.drainProgress',
      description: 'percent of pods drained',
    },
    { name: 'Reason', type: 'string', jsonPath: '.spec.reason' },
    { name: 'Error', type: 'string', jsonPath: '.status.lastError', priority: 1 },
  ],
});

export type NodeMaintenance = ResourceOf<typeof NodeMaintenances>;
export type NodeMaintenanceSpecType = NodeMaintenance['spec'];
export type NodeMaintenanceStatusType = NonNullable<NodeMaintenance['status']>;

/** Labels, taints and names the maintenance capability puts on nodes. */
export const Maintenance = {
  finalizer: 'maintenance.nodewarden.dev/finalizer',
  drainTaint: { key: 'nodewarden.dev/drain', effect: 'NoSchedule' },
  unschedulableTaint: { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
  /** Tells health-remediation tools (medik8s NHC and friends) to leave the node alone. */
  excludeFromRemediationLabel: 'remediation.medik8s.io/exclude-from-remediation',
  /**
   * On a NodeMaintenance: the node is being replaced by the node named here and leaves
   * the cluster after its drain (a rolling upgrade's donor). The control-plane quorum
   * guard then counts the cluster as it will be without it, if the heir is healthy.
   */
  replacedByAnnotation: 'maintenance.nodewarden.dev/replaced-by',
} as const;
