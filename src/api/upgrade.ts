// upgrade.nodewarden.dev/v1alpha1: rolling node-image and Kubernetes upgrades.
// NodeVersion is the desired image and rollout strategy for the cluster;
// ScalingGroup mirrors one cloud scaling group; PendingNode tracks a node that
// is joining or leaving; AutoscalingStrategy drives the cluster autoscaler.
// Parity anchor: the Constellation operator's CRDs of the same names (see
// ../shared/reference/upgrades.md §1). The rollout strategy, counts, timings
// and printer columns are ours.
import Type from 'typebox';
import { defineCustomResource, type ResourceOf } from './crd.ts';
import { AutoscalingStrategyKind, NodeVersionKind, PendingNodeKind, ScalingGroupKind } from './kinds.ts';
import { Condition } from './maintenance.ts';
import { cel, immutable } from './openapi.ts';
import { STRATEGY_DEFAULTS, SURGE_PERCENT, UNAVAILABLE_PERCENT } from './upgrade-values.ts';

/** A Go-style duration, as NodeMaintenance's `timeout`: "30m", "1h30m", "0". */
const DURATION_PATTERN = '^(0|([0-9]+(\\.[0-9]+)?(s|m|h))+)$';
/** Names the API server accepts for a Deployment and a namespace. */
const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** A Kubernetes release, "v1.37.1". */
const KUBERNETES_VERSION_PATTERN = '^v(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$';

const Conditions = Type.Array(Condition, {
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

const NodeNames = (description: string) =>
  Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { description }));

const Count = (description: string) => Type.Optional(Type.Integer({ description, minimum: 0 }));

// ---------------------------------------------------------------- NodeVersion

export { SURGE_PERCENT, UNAVAILABLE_PERCENT };

/** The refusal of a strategy with neither surge nor unavailability (CEL here; the CLI says the same). */
export const BOTH_ZERO_MESSAGE =
  'maxSurge and maxUnavailable cannot both be 0: no node could ever be replaced ' +
  '(maxUnavailable 0 with a surge of 1 or more is a surge-only rollout)';

/**
 * A budget as a Deployment's: a count of nodes or a percentage of them
 * (int-or-string; the percentage resolved in src/upgrade/rollout/budgets.ts).
 */
const Budget = (description: string, least: number, percent: string, byDefault: number) =>
  Type.Optional(
    Type.Union([Type.Integer(), Type.String()], {
      description,
      'x-kubernetes-int-or-string': true,
      minimum: least,
      pattern: percent,
      default: byDefault,
    }),
  );

export const RolloutStrategy = Type.Object(
  {
    maxSurge: Budget(
      'Extra nodes created at once, ahead of the ones they replace: a count (3) or a percentage of the nodes ' +
        '("25%", rounded up). At least 1: every node is replaced by creating its successor first.',
      1,
      SURGE_PERCENT,
      STRATEGY_DEFAULTS.maxSurge,
    ),
    maxUnavailable: Budget(
      'Nodes draining at once: a count (2) or a percentage of the nodes ("10%", rounded down). ' +
        '0: a surge-only rollout, a node is drained only once its replacement is Ready, bounded by maxSurge.',
      0,
      UNAVAILABLE_PERCENT,
      STRATEGY_DEFAULTS.maxUnavailable,
    ),
    controlPlaneFirst: Type.Optional(
      Type.Boolean({
        description: 'Replace every control-plane node before any worker.',
        default: STRATEGY_DEFAULTS.controlPlaneFirst,
      }),
    ),
    drainTimeout: Type.Optional(
      Type.String({
        description: 'Bound on draining one node, e.g. "30m"; "0" keeps trying until it succeeds.',
        pattern: DURATION_PATTERN,
        default: STRATEGY_DEFAULTS.drainTimeout,
      }),
    ),
    nodeReadyTimeout: Type.Optional(
      Type.String({
        description: 'How long a new node has to join and become Ready before it is replaced.',
        pattern: DURATION_PATTERN,
        default: STRATEGY_DEFAULTS.nodeReadyTimeout,
      }),
    ),
    paused: Type.Optional(
      Type.Boolean({
        description: 'Start no new replacements; those in flight finish.',
        default: STRATEGY_DEFAULTS.paused,
      }),
    ),
  },
  {
    description: 'How the rollout proceeds.',
    default: {},
    ...cel({
      rule: "!has(self.maxSurge) || !has(self.maxUnavailable) || !(string(self.maxSurge) in ['0', '0%'] && string(self.maxUnavailable) in ['0', '0%'])",
      message: BOTH_ZERO_MESSAGE,
    }),
  },
);

export const NodeVersionSpec = Type.Object({
  image: Type.String({
    description: "The cloud provider's image reference new nodes boot from.",
    minLength: 1,
    maxLength: 1024,
  }),
  imageVersion: Type.Optional(
    Type.String({ description: 'Human-readable version of the image.', maxLength: 128 }),
  ),
  kubernetesVersion: Type.Optional(
    Type.String({
      description: 'Kubernetes version the nodes should run, e.g. "v1.37.1".',
      pattern: KUBERNETES_VERSION_PATTERN,
    }),
  ),
  strategy: Type.Optional(RolloutStrategy),
});

export const NodeVersionCounts = Type.Object(
  {
    total: Count('Nodes the rollout knows about.'),
    upToDate: Count('Nodes on the desired image and version.'),
    outdated: Count('Nodes still to be replaced.'),
    donors: Count('Outdated nodes being drained for an heir.'),
    heirs: Count('New nodes taking over from a donor.'),
    mints: Count('New nodes not yet paired with a donor.'),
    pending: Count('Nodes being created or deleted.'),
    obsolete: Count('Surplus nodes to be removed.'),
    invalid: Count('Nodes whose image or group cannot be determined.'),
    awaitingAnnotation: Count('Nodes not yet annotated with their image and version.'),
  },
  { description: 'How many nodes are in each group.' },
);

export const GroupProgress = Type.Object({
  groupId: Type.String({ maxLength: 1024 }),
  role: Type.Union([Type.Literal('ControlPlane'), Type.Literal('Worker')]),
  total: Type.Integer({ description: 'Nodes of the group the rollout counts.', minimum: 0 }),
  upToDate: Type.Integer({ description: 'Nodes on the desired image and version.', minimum: 0 }),
  outdated: Type.Integer({ description: 'Nodes still to be replaced, donors included.', minimum: 0 }),
  replacing: Type.Integer({
    description: 'Replacements in flight: new nodes joining or taking over.',
    minimum: 0,
  }),
  draining: Type.Integer({ description: 'Donors being drained.', minimum: 0 }),
  imageReference: Type.Optional(
    Type.String({ description: 'The image the group launches.', maxLength: 1024 }),
  ),
});

export const NodeVersionStatus = Type.Object({
  upToDate: NodeNames('Nodes on the desired image and version.'),
  outdated: NodeNames('Nodes still to be replaced.'),
  donors: NodeNames('Outdated nodes being drained for an heir.'),
  heirs: NodeNames('New nodes taking over from a donor.'),
  mints: NodeNames('New nodes not yet paired with a donor.'),
  pending: NodeNames('Nodes being created or deleted.'),
  obsolete: NodeNames('Surplus nodes to be removed.'),
  invalid: NodeNames('Nodes whose image or group cannot be determined.'),
  awaitingAnnotation: NodeNames('Nodes not yet annotated with their image and version.'),
  counts: Type.Optional(NodeVersionCounts),
  groups: Type.Optional(
    Type.Array(GroupProgress, {
      description: 'Progress per scaling group.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['groupId'],
    }),
  ),
  replaced: Count('Nodes replaced since the rollout started.'),
  lastError: Type.Optional(
    Type.String({ description: 'The last problem the rollout met, if it is not resolved.', maxLength: 4096 }),
  ),
  conditions: Type.Optional(Conditions),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: 'int64' })),
  startTime: Type.Optional(
    Type.String({ description: 'When the current rollout started.', format: 'date-time' }),
  ),
  finishTime: Type.Optional(
    Type.String({ description: 'When the last rollout finished.', format: 'date-time' }),
  ),
});

export const NodeVersions = defineCustomResource({
  ...NodeVersionKind,
  singular: 'nodeversion',
  shortNames: ['nv'],
  categories: ['nodewarden'],
  description: 'The node image and Kubernetes version the cluster should run, and how to roll it out.',
  spec: NodeVersionSpec,
  status: NodeVersionStatus,
  printerColumns: [
    { name: 'Image', type: 'string', jsonPath: '.spec.image' },
    { name: 'Version', type: 'string', jsonPath: '.spec.imageVersion' },
    { name: 'UpToDate', type: 'integer', jsonPath: '.status.counts.upToDate' },
    { name: 'Outdated', type: 'integer', jsonPath: '.status.counts.outdated' },
  ],
});

export type NodeVersion = ResourceOf<typeof NodeVersions>;
export type NodeVersionSpecType = NodeVersion['spec'];
export type NodeVersionStatusType = NonNullable<NodeVersion['status']>;

// --------------------------------------------------------------- ScalingGroup

export const GroupRolloutBudget = Type.Object(
  {
    maxSurge: Type.Optional(
      Type.Integer({
        description:
          "Extra nodes of this group at once. The NodeVersion's strategy.maxSurge still bounds all groups together.",
        minimum: 1,
      }),
    ),
    maxUnavailable: Type.Optional(
      Type.Integer({
        description:
          "Nodes of this group draining at once. The NodeVersion's strategy.maxUnavailable still bounds all groups together.",
        minimum: 1,
      }),
    ),
    maxSize: Type.Optional(
      Type.Integer({
        description:
          'Most nodes the group may have during a rollout, new ones included (a cloud quota, say): ' +
          'the rollout waits rather than grow the group beyond it. Unlike max, it binds the rollout, not the autoscaler.',
        minimum: 1,
      }),
    ),
  },
  {
    description:
      "This group's own rollout budgets, each under the NodeVersion's overall one; absent: only the overall budgets apply.",
  },
);

export const ScalingGroupSpec = Type.Object(
  {
    groupId: Type.String({
      description: "The cloud provider's identifier of the scaling group. Immutable.",
      minLength: 1,
      maxLength: 1024,
      ...cel(immutable('groupId is immutable: delete this ScalingGroup and create another')),
    }),
    nodeVersion: Type.Optional(
      Type.String({
        description: 'Name of the NodeVersion whose image this group launches.',
        maxLength: 253,
        pattern: DNS_SUBDOMAIN_PATTERN,
      }),
    ),
    role: Type.Optional(
      Type.Union([Type.Literal('ControlPlane'), Type.Literal('Worker')], {
        description: 'What the nodes of this group run.',
      }),
    ),
    autoscaling: Type.Optional(
      Type.Boolean({ description: 'Let the cluster autoscaler resize this group.', default: false }),
    ),
    min: Type.Optional(Type.Integer({ description: 'Smallest size the autoscaler may pick.', minimum: 0 })),
    max: Type.Optional(Type.Integer({ description: 'Largest size the autoscaler may pick.', minimum: 0 })),
    autoscalerGroupName: Type.Optional(
      Type.String({ description: 'Name of the group in the autoscaler arguments.', maxLength: 1024 }),
    ),
    rollout: Type.Optional(GroupRolloutBudget),
  },
  cel({
    rule: '!has(self.rollout) || !has(self.rollout.maxSize) || !has(self.min) || self.rollout.maxSize > self.min',
    message: 'spec.rollout.maxSize must exceed spec.min: a group at its smallest needs room for one new node',
  }),
);

export const ScalingGroupStatus = Type.Object({
  imageReference: Type.Optional(
    Type.String({ description: 'The image the group currently launches.', maxLength: 1024 }),
  ),
  conditions: Type.Optional(Conditions),
});

export const ScalingGroups = defineCustomResource({
  ...ScalingGroupKind,
  singular: 'scalinggroup',
  shortNames: ['sg'],
  categories: ['nodewarden'],
  description: 'A cloud scaling group: its role, its bounds and the image it launches.',
  spec: ScalingGroupSpec,
  status: ScalingGroupStatus,
  printerColumns: [
    { name: 'Group', type: 'string', jsonPath: '.spec.groupId' },
    { name: 'Role', type: 'string', jsonPath: '.spec.role' },
    { name: 'Min', type: 'integer', jsonPath: '.spec.min' },
    { name: 'Max', type: 'integer', jsonPath: '.spec.max' },
    { name: 'Image', type: 'string', jsonPath: '.status.imageReference' },
  ],
  validations: [
    {
      rule: '!has(self.spec.min) || !has(self.spec.max) || self.spec.min <= self.spec.max',
      message: 'spec.min must not exceed spec.max',
    },
  ],
});

export type ScalingGroup = ResourceOf<typeof ScalingGroups>;
export type ScalingGroupSpecType = ScalingGroup['spec'];
export type ScalingGroupStatusType = NonNullable<ScalingGroup['status']>;

// ---------------------------------------------------------------- PendingNode

export const PendingNodeSpec = Type.Object({
  providerID: Type.String({ description: "The node's cloud provider ID.", minLength: 1, maxLength: 1024 }),
  groupID: Type.String({
    description: 'The scaling group the node belongs to.',
    minLength: 1,
    maxLength: 1024,
  }),
  nodeName: Type.String({
    description: 'The Kubernetes node name.',
    minLength: 1,
    maxLength: 253,
    pattern: DNS_SUBDOMAIN_PATTERN,
  }),
  goal: Type.Union([Type.Literal('Join'), Type.Literal('Leave')], {
    description: 'Whether the node is expected to join the cluster or leave it.',
  }),
  deadline: Type.Optional(
    Type.String({
      description: 'When to give up on the goal; a node that has not joined by then is deleted.',
      format: 'date-time',
    }),
  ),
});

export const PendingNodeStatus = Type.Object({
  cspState: Type.Optional(
    Type.Union(
      [
        Type.Literal('Unknown'),
        Type.Literal('Creating'),
        Type.Literal('Ready'),
        Type.Literal('Stopped'),
        Type.Literal('Terminating'),
        Type.Literal('Terminated'),
        Type.Literal('Failed'),
      ],
      { description: "The instance's state as the cloud provider reports it." },
    ),
  ),
  reachedGoal: Type.Optional(Type.Boolean({ description: 'Whether the node has joined or left.' })),
});

export const PendingNodes = defineCustomResource({
  ...PendingNodeKind,
  singular: 'pendingnode',
  shortNames: ['pn'],
  categories: ['nodewarden'],
  description: 'A node being created or deleted, tracked until it joins or leaves or its deadline passes.',
  spec: PendingNodeSpec,
  status: PendingNodeStatus,
  printerColumns: [
    { name: 'Node', type: 'string', jsonPath: '.spec.nodeName' },
    { name: 'Goal', type: 'string', jsonPath: '.spec.goal' },
    { name: 'State', type: 'string', jsonPath: '.status.cspState' },
    { name: 'Reached', type: 'boolean', jsonPath: '.status.reachedGoal' },
    { name: 'Deadline', type: 'date', jsonPath: '.spec.deadline' },
  ],
});

export type PendingNode = ResourceOf<typeof PendingNodes>;
export type PendingNodeSpecType = PendingNode['spec'];
export type PendingNodeStatusType = NonNullable<PendingNode['status']>;

// -------------------------------------------------------- AutoscalingStrategy

export const AutoscalingStrategySpec = Type.Object({
  enabled: Type.Boolean({ description: 'Run the cluster autoscaler.' }),
  deploymentName: Type.String({
    description: "The cluster autoscaler's Deployment.",
    minLength: 1,
    maxLength: 253,
    pattern: DNS_SUBDOMAIN_PATTERN,
  }),
  deploymentNamespace: Type.String({
    description: 'Namespace of the Deployment.',
    minLength: 1,
    maxLength: 63,
    pattern: DNS_LABEL_PATTERN,
  }),
  autoscalerExtraArgs: Type.Optional(
    // Bounded: every entry becomes an argument of the autoscaler's Deployment.
    Type.Record(Type.String(), Type.String({ maxLength: 1024 }), {
      description: 'Extra autoscaler flags, name to value, without the leading dashes.',
      maxProperties: 64,
      ...cel({
        rule: "self.all(k, size(k) <= 128 && k.matches('^[a-z0-9][-a-z0-9._]*$'))",
        message:
          'flag names are lower-case words joined by dashes, without the leading dashes (e.g. scale-down-delay-after-add), at most 128 characters',
      }),
    }),
  ),
});

export const AutoscalingStrategyStatus = Type.Object({
  enabled: Type.Optional(Type.Boolean({ description: 'Whether the autoscaler is running.' })),
  replicas: Type.Optional(Type.Integer({ description: "The autoscaler Deployment's replicas.", minimum: 0 })),
});

export const AutoscalingStrategies = defineCustomResource({
  ...AutoscalingStrategyKind,
  singular: 'autoscalingstrategy',
  shortNames: ['as'],
  categories: ['nodewarden'],
  description: 'Whether and how the cluster autoscaler runs; paused during rollouts.',
  spec: AutoscalingStrategySpec,
  status: AutoscalingStrategyStatus,
  printerColumns: [
    { name: 'Enabled', type: 'boolean', jsonPath: '.spec.enabled' },
    { name: 'Deployment', type: 'string', jsonPath: '.spec.deploymentName' },
    { name: 'Replicas', type: 'integer', jsonPath: '.status.replicas' },
  ],
});

export type AutoscalingStrategy = ResourceOf<typeof AutoscalingStrategies>;
export type AutoscalingStrategySpecType = AutoscalingStrategy['spec'];
export type AutoscalingStrategyStatusType = NonNullable<AutoscalingStrategy['status']>;
