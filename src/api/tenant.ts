// baremetal.nodewarden.dev/v1alpha1 TenantCluster: a tenant cluster carved out
// of a pool of BareMetalHosts. spec.nodes says which hosts each role may take
// (label selector, one host per topology domain, active and standby counts);
// spec.services the per-cluster support services (API load balancer, worker
// ingress load balancer, SSH jump host). Status lists the claimed hosts.
// Parity anchor: Airship SIP's SIPCluster (../shared/reference/baremetal.md
// §1–§3). Unlike the anchor, role keys are restricted to ControlPlane and
// Worker, ports are range-checked, and colliding ports are refused (CEL).
import Type from 'typebox';
import { defineCustomResource, type ResourceOf } from './crd.ts';
import { TENANT_ROLES, TenantClusterKind } from './kinds.ts';
import { Condition } from './maintenance.ts';
import { cel } from './openapi.ts';
import { LabelSelectorSchema } from './selectors.ts';

export const TENANT_GROUP = TenantClusterKind.group;

export { TENANT_ROLES };
export type TenantRole = (typeof TENANT_ROLES)[number];

export const TopologyScopes = ['Role', 'Cluster'] as const;
export type TopologyScope = (typeof TopologyScopes)[number];

const NODE_PORT = { minimum: 30000, maximum: 32767 } as const;
const INTERFACE_ID = Type.String({
  description: 'The id of a network in the host\'s network data (networks[].id), e.g. "oam-ipv4".',
  minLength: 1,
  maxLength: 253,
});
const IMAGE = Type.Optional(
  Type.String({ description: 'Container image; a built-in default when empty.', maxLength: 1024 }),
);

/** A pod toleration as core/v1 has it. */
const Toleration = Type.Object({
  key: Type.Optional(
    Type.String({ description: 'The taint key; empty with Exists matches every taint.', maxLength: 317 }),
  ),
  operator: Type.Optional(Type.Union([Type.Literal('Exists'), Type.Literal('Equal')], { default: 'Equal' })),
  value: Type.Optional(Type.String({ maxLength: 63 })),
  effect: Type.Optional(
    Type.Union([Type.Literal('NoSchedule'), Type.Literal('PreferNoSchedule'), Type.Literal('NoExecute')], {
      description: 'Empty matches every effect.',
    }),
  ),
  tolerationSeconds: Type.Optional(Type.Integer({ format: 'int64' })),
});

/**
 * Where a service's pod may run, in the management cluster. Each field left
 * out takes its default, which schedules on any node: no nodeSelector, no
 * affinity, and tolerations of the control-plane taints (so a cluster whose
 * only nodes are control-plane nodes runs it too). A field given replaces its default.
 */
export const ServicePlacement = Type.Object(
  {
    nodeSelector: Type.Optional(
      Type.Record(Type.String(), Type.String({ maxLength: 63 }), {
        description: "Labels the node must carry (the pod's nodeSelector).",
        maxProperties: 64,
      }),
    ),
    tolerations: Type.Optional(
      Type.Array(Toleration, {
        description:
          "The pod's tolerations. Default: the control-plane taints (node-role.kubernetes.io/control-plane, /master).",
        maxItems: 64,
      }),
    ),
    affinity: Type.Optional(
      Type.Object(
        {},
        {
          description:
            "The pod's affinity (core/v1 Affinity: nodeAffinity, podAffinity, podAntiAffinity), as it is.",
          'x-kubernetes-preserve-unknown-fields': true,
        },
      ),
    ),
  },
  { description: "Where the service's pod may run; empty: on any node." },
);

export const HostLabelSelector = LabelSelectorSchema({
  description: 'The BareMetalHosts this role may take; empty selects every host.',
});

export const NodeSet = Type.Object(
  {
    labelSelector: Type.Optional(HostLabelSelector),
    topologyKey: Type.Optional(
      Type.String({
        description:
          'A host label: at most one host of this role per value (domain), e.g. topology.nodewarden.dev/rack. ' +
          'Hosts without the label are not constrained.',
        minLength: 1,
        maxLength: 317,
      }),
    ),
    topologyScope: Type.Optional(
      Type.Union([Type.Literal('Role'), Type.Literal('Cluster')], {
        description:
          'Role: one host of this role per domain. Cluster: also no domain shared with a host of the other role.',
        default: 'Role',
      }),
    ),
    count: Type.Object({
      active: Type.Integer({ description: 'Hosts in service.', minimum: 0, maximum: 1000 }),
      standby: Type.Optional(
        Type.Integer({
          description: 'Spare hosts held for this role, promoted when an active host fails.',
          minimum: 0,
          maximum: 1000,
          default: 0,
        }),
      ),
    }),
  },
  {
    ...cel({
      rule: "!has(self.topologyScope) || self.topologyScope == 'Role' || has(self.topologyKey)",
      message: 'topologyScope Cluster needs a topologyKey',
    }),
  },
);

export const ControlPlaneLoadBalancer = Type.Object({
  nodePort: Type.Integer({ description: 'The NodePort the Kubernetes API is served on.', ...NODE_PORT }),
  nodeInterfaceId: INTERFACE_ID,
  image: IMAGE,
  placement: Type.Optional(ServicePlacement),
});

export const WorkerLoadBalancer = Type.Object({
  nodePortRange: Type.Object(
    {
      start: Type.Integer({ ...NODE_PORT }),
      end: Type.Integer({ ...NODE_PORT }),
    },
    {
      description: 'One frontend per port, forwarded to the same port on the workers.',
      'x-kubernetes-validations': [
        {
          rule: 'self.start <= self.end',
          message: 'nodePortRange.start must not be above nodePortRange.end',
        },
        { rule: 'self.end - self.start < 256', message: 'nodePortRange spans at most 256 ports' },
      ],
    },
  ),
  nodeInterfaceId: INTERFACE_ID,
  image: IMAGE,
  placement: Type.Optional(ServicePlacement),
});

export const JumpHost = Type.Object({
  nodePort: Type.Integer({ description: 'The NodePort SSH (22) is served on.', ...NODE_PORT }),
  sshAuthorizedKeys: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 16384 }), {
      description: 'Public keys allowed to log in (OpenSSH authorized_keys lines).',
      maxItems: 64,
    }),
  ),
  nodeSSHPrivateKeys: Type.String({
    description:
      "A Secret in the cluster's namespace whose keys are the private keys used to reach the hosts.",
    minLength: 1,
    maxLength: 253,
  }),
  nodeInterfaceId: INTERFACE_ID,
  image: IMAGE,
  placement: Type.Optional(ServicePlacement),
});

const inWorkerRange = (port: string) =>
  `has(self.workerLoadBalancer) && ${port} >= self.workerLoadBalancer.nodePortRange.start && ${port} <= self.workerLoadBalancer.nodePortRange.end`;

export const TenantServices = Type.Object(
  {
    controlPlaneLoadBalancer: Type.Optional(ControlPlaneLoadBalancer),
    workerLoadBalancer: Type.Optional(WorkerLoadBalancer),
    jumpHost: Type.Optional(JumpHost),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: `!has(self.controlPlaneLoadBalancer) || !(${inWorkerRange('self.controlPlaneLoadBalancer.nodePort')})`,
        message: 'controlPlaneLoadBalancer.nodePort lies inside workerLoadBalancer.nodePortRange',
      },
      {
        rule: `!has(self.jumpHost) || !(${inWorkerRange('self.jumpHost.nodePort')})`,
        message: 'jumpHost.nodePort lies inside workerLoadBalancer.nodePortRange',
      },
      {
        rule: '!has(self.jumpHost) || !has(self.controlPlaneLoadBalancer) || self.jumpHost.nodePort != self.controlPlaneLoadBalancer.nodePort',
        message: 'jumpHost.nodePort equals controlPlaneLoadBalancer.nodePort',
      },
    ],
  },
);

export const TenantClusterSpec = Type.Object({
  nodes: Type.Record(Type.String(), NodeSet, {
    description: 'The hosts per role: keys ControlPlane and Worker.',
    minProperties: 1,
    maxProperties: 2,
    ...cel({
      rule: "self.all(role, role in ['ControlPlane', 'Worker'])",
      message: 'nodes keys must be ControlPlane or Worker',
    }),
  }),
  services: Type.Optional(TenantServices),
});

export const HostHealths = ['Healthy', 'Failed'] as const;
export type HostHealth = (typeof HostHealths)[number];

export const TenantHostStatus = Type.Object({
  name: Type.String({ maxLength: 253 }),
  namespace: Type.String({ maxLength: 63 }),
  domain: Type.Optional(Type.String({ description: "The host's topologyKey value.", maxLength: 63 })),
  rack: Type.Optional(Type.String({ description: "The host's rack label.", maxLength: 63 })),
  ip: Type.Optional(
    Type.String({ description: "The host's address on its role's load-balancer interface.", maxLength: 64 }),
  ),
  standby: Type.Boolean(),
  health: Type.Union([Type.Literal('Healthy'), Type.Literal('Failed')]),
  healthReason: Type.Optional(Type.String({ maxLength: 1024 })),
});

const HostList = Type.Optional(
  Type.Array(TenantHostStatus, {
    maxItems: 2000,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['namespace', 'name'],
  }),
);

export const TenantClusterStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: 'int64' })),
  conditions: Type.Optional(
    Type.Array(Condition, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  ),
  hosts: Type.Optional(
    Type.Object({ ControlPlane: HostList, Worker: HostList }, { description: 'The claimed hosts per role.' }),
  ),
  desiredHosts: Type.Optional(Type.Integer({ minimum: 0 })),
  claimedHosts: Type.Optional(Type.Integer({ minimum: 0 })),
});

export const TenantClusters = defineCustomResource({
  ...TenantClusterKind,
  singular: 'tenantcluster',
  shortNames: ['tc'],
  categories: ['nodewarden'],
  description:
    'A tenant cluster carved out of BareMetalHosts (SIP parity): hosts per role under topology constraints, ' +
    'and its support services.',
  spec: TenantClusterSpec,
  status: TenantClusterStatus,
  validations: [
    {
      rule: 'size(self.metadata.name) <= 63',
      message: 'name must be at most 63 characters: it is a label value on every claimed host',
    },
  ],
  printerColumns: [
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Scheduled', type: 'string', jsonPath: '.status.conditions[?(@.type=="Scheduled")].status' },
    { name: 'Services', type: 'string', jsonPath: '.status.conditions[?(@.type=="ServicesReady")].status' },
    {
      name: 'Running',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="ServicesRunning")].status',
      description: "The services' pods",
    },
    { name: 'Hosts', type: 'integer', jsonPath: '.status.claimedHosts', description: 'Hosts claimed' },
    { name: 'Desired', type: 'integer', jsonPath: '.status.desiredHosts' },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      priority: 1,
    },
  ],
});

export type TenantCluster = ResourceOf<typeof TenantClusters>;
export type TenantClusterSpecType = TenantCluster['spec'];
export type TenantClusterStatusType = NonNullable<TenantCluster['status']>;
export type NodeSetSpec = TenantClusterSpecType['nodes'][string];
export type TenantServicesSpec = NonNullable<TenantClusterSpecType['services']>;
export type ServicePlacementSpec = NonNullable<
  NonNullable<TenantServicesSpec['controlPlaneLoadBalancer']>['placement']
>;
export type TenantHostStatusType = NonNullable<
  NonNullable<TenantClusterStatusType['hosts']>['Worker']
>[number];

/** Label keys nodewarden puts on a claimed host. */
export const TENANT_LABELS = {
  clusterNamespace: 'baremetal.nodewarden.dev/cluster-namespace',
  clusterName: 'baremetal.nodewarden.dev/cluster-name',
  role: 'baremetal.nodewarden.dev/role',
  standby: 'baremetal.nodewarden.dev/standby',
} as const;

/** The anchor's labels, written too with --sip-compatible-labels (Treasuremap #172). */
export const SIP_LABELS = {
  clusterNamespace: 'sip.airshipit.org/cluster-namespace',
  clusterName: 'sip.airshipit.org/cluster-name',
  role: 'sip.airshipit.org/node-type',
} as const;

/** The finalizer that unlabels the hosts before the cluster goes. */
export const TENANT_FINALIZER = 'baremetal.nodewarden.dev/tenantcluster';
