// kvm.nodewarden.dev/v1alpha1 KVMCluster: a workload cluster whose nodes are
// VMs, one per pod in the management cluster. Its name is the cluster's id:
// the namespace its VM pods live in, and the name of its control plane.
// Parity anchor: giantswarm kvm-operator's KVMConfig
// (../shared/reference/kvm-workload-clusters.md §1). Unlike the anchor, node
// sizes sit next to the node ids, memory strings are checked at admission,
// node ids are unique across roles, and unhealthy-node replacement is
// configured by absolute durations instead of resync "ticks".
import Type from 'typebox';
import { defineCustomResource, type ResourceOf } from './crd.ts';
import { KVMClusterKind } from './kinds.ts';
import { Condition } from './maintenance.ts';
import { cel } from './openapi.ts';

export const KVM_GROUP = KVMClusterKind.group;

/** Durations as the runtime parses them, e.g. "30m", "1h30m", "90s". */
const DURATION = '^([0-9]+(.[0-9]+)?(s|m|h))+$';
/** QEMU-style memory sizes: decimal (M, G) or binary (Mi, Gi) units, e.g. "8G", "1536M", "4Gi". */
export const MEMORY_PATTERN = '^[1-9][0-9]{0,6}(\\.[0-9]{1,3})?(M|G|Mi|Gi)$';

const NodeId = Type.String({
  description:
    'Unique among the cluster\'s masters and workers; names its Deployment (master-<id>, worker-<id>), e.g. "m1".',
  pattern: '^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$',
  maxLength: 32,
});

export const HostVolume = Type.Object({
  mountTag: Type.String({
    description: 'The 9p mount tag the VM sees; also its mount point /mnt/<mountTag>.',
    pattern: '^[A-Za-z0-9_][-A-Za-z0-9_.]{0,30}$',
    maxLength: 31,
  }),
  hostPath: Type.String({
    description: 'The directory on the hypervisor host.',
    minLength: 1,
    maxLength: 4096,
  }),
});

export const KVMNode = Type.Object({
  id: NodeId,
  cpus: Type.Integer({ description: 'Virtual CPUs.', minimum: 1, maximum: 256 }),
  memory: Type.String({
    description: 'The VM\'s memory, e.g. "8G" (the pod asks for more: see the README for the formulas).',
    pattern: MEMORY_PATTERN,
    maxLength: 16,
  }),
  disk: Type.Optional(
    Type.Number({ description: 'The root disk in GB.', minimum: 1, maximum: 65536, default: 20 }),
  ),
  dockerVolumeSizeGB: Type.Optional(
    Type.Integer({
      description: 'The container runtime disk in GB (default 50).',
      minimum: 1,
      maximum: 65536,
    }),
  ),
  hostVolumes: Type.Optional(
    Type.Array(HostVolume, {
      description: 'Host directories shared into the VM (workers).',
      maxItems: 16,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['mountTag'],
    }),
  ),
});

const NodeList = (description: string, minItems: number, maxItems: number) =>
  Type.Array(KVMNode, {
    description,
    minItems,
    maxItems,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['id'],
  });

export const Release = Type.Object({
  version: Type.String({
    description: 'The release, e.g. "20.1.0"; a change rolls every node.',
    minLength: 1,
    maxLength: 64,
  }),
  kubernetesVersion: Type.String({
    description: 'The kubelet version the nodes run, e.g. "v1.37.1".',
    pattern: '^v?[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.-]+)?$',
    maxLength: 64,
  }),
  osVersion: Type.String({ description: 'The VM image, e.g. "4230.2.0".', minLength: 1, maxLength: 64 }),
});

const CIDR_FORM = { pattern: '^[0-9]{1,3}(\\.[0-9]{1,3}){3}/[0-9]{1,2}$', maxLength: 18 };
const CIDR = Type.String(CIDR_FORM);

export const Network = Type.Object({
  vni: Type.Integer({
    description:
      "The VXLAN network id of the cluster's VMs; unique among clusters. At most 42535: the VM's health port is 23000 + VNI (the anchor's scheme).",
    minimum: 1,
    maximum: 42_535,
  }),
  podCIDR: Type.Optional(
    Type.String({
      ...CIDR_FORM,
      description:
        "The pods' range in the workload cluster (default 10.200.0.0/16): each node's pods get the /25 its node index numbers, so /16 or larger.",
      ...cel({
        rule: 'isCIDR(self) && cidr(self).ip().family() == 4 && cidr(self).prefixLength() <= 16',
        message: 'must be an IPv4 range of /16 or larger, such as 10.200.0.0/16: each node takes a /25 of it',
      }),
    }),
  ),
  serviceCIDR: Type.Optional(CIDR),
});

export const ApiEndpoint = Type.Object({
  domain: Type.String({
    description: "The API server's DNS name, e.g. api.c1.example.com.",
    minLength: 1,
    maxLength: 253,
  }),
  securePort: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: 443 })),
});

export const PortMapping = Type.Object({
  name: Type.String({ pattern: '^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$', maxLength: 15 }),
  nodePort: Type.Optional(
    Type.Integer({
      description: "The management cluster's NodePort; allocated by the API server when omitted.",
      minimum: 30000,
      maximum: 32767,
    }),
  ),
  targetPort: Type.Integer({ description: 'The port on the workers.', minimum: 1, maximum: 65535 }),
});

export const SshUser = Type.Object({
  name: Type.String({ pattern: '^[a-z_][a-z0-9_-]{0,31}$', maxLength: 32 }),
  publicKey: Type.String({ minLength: 1, maxLength: 16384 }),
});

export const Storage = Type.Object(
  {
    type: Type.Union([Type.Literal('hostPath'), Type.Literal('persistentVolume')], { default: 'hostPath' }),
    storageClassName: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
  },
  {
    ...cel({
      rule: "self.type == 'persistentVolume' || !has(self.storageClassName)",
      message: 'storageClassName applies to storage.type persistentVolume only',
    }),
  },
);

export const UnhealthyNodes = Type.Object({
  terminate: Type.Boolean({ description: 'Replace the VM of a node NotReady for longer than notReadyFor.' }),
  notReadyFor: Type.Optional(Type.String({ pattern: DURATION, maxLength: 32, default: '30m' })),
  maxFraction: Type.Optional(
    Type.String({
      description: 'The most nodes replaced at once, as a share of the cluster (at least one).',
      pattern: '^([0-9]|[1-9][0-9]|100)%$',
      maxLength: 4,
      default: '10%',
    }),
  ),
  pauseBetween: Type.Optional(
    Type.String({
      description: 'The least time between two replacements.',
      pattern: DURATION,
      maxLength: 32,
      default: '10m',
    }),
  ),
});

export const KVMClusterSpec = Type.Object(
  {
    masters: NodeList('The control-plane nodes; at least one.', 1, 7),
    workers: Type.Optional(NodeList('The worker nodes.', 0, 200)),
    release: Release,
    network: Network,
    api: ApiEndpoint,
    portMappings: Type.Optional(
      Type.Array(PortMapping, {
        description: 'NodePorts of the worker Service; default http→30010 and https→30011 on the workers.',
        maxItems: 16,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
        'x-kubernetes-validations': [
          {
            rule: 'self.all(a, self.exists_one(b, b.targetPort == a.targetPort))',
            message: 'each targetPort may be mapped once (it is also the Service port)',
          },
          {
            rule: 'self.all(a, !has(a.nodePort) || self.exists_one(b, has(b.nodePort) && b.nodePort == a.nodePort))',
            message: 'each nodePort may be used once',
          },
        ],
      }),
    ),
    sshUsers: Type.Optional(
      Type.Array(SshUser, {
        maxItems: 32,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      }),
    ),
    storage: Type.Optional(Storage),
    unhealthyNodes: Type.Optional(UnhealthyNodes),
    drain: Type.Optional(
      Type.Object({
        timeout: Type.Optional(
          Type.String({
            description: 'Bound on draining a node before its VM goes.',
            pattern: DURATION,
            maxLength: 32,
            default: '10m',
          }),
        ),
      }),
    ),
  },
  {
    'x-kubernetes-validations': [
      {
        rule: '!has(self.workers) || self.masters.all(m, !self.workers.exists(w, w.id == m.id))',
        message: 'node ids must be unique across masters and workers',
      },
    ],
  },
);

export const NodeRoles = ['master', 'worker'] as const;
export type NodeRole = (typeof NodeRoles)[number];

export const KVMNodeStatus = Type.Object({
  name: Type.String({ description: "The workload Node (the VM pod's name).", maxLength: 253 }),
  id: Type.String({ maxLength: 32 }),
  role: Type.Union([Type.Literal('master'), Type.Literal('worker')]),
  version: Type.Optional(
    Type.String({ description: 'The kubelet version the Node reports.', maxLength: 64 }),
  ),
  release: Type.Optional(Type.String({ description: 'The release its VM was started with.', maxLength: 64 })),
  ready: Type.Boolean(),
  lastTransitionTime: Type.Optional(Type.String({ format: 'date-time' })),
  drain: Type.Optional(
    Type.Object({
      phase: Type.Union([Type.Literal('Draining'), Type.Literal('Drained'), Type.Literal('TimedOut')]),
      startedAt: Type.String({ format: 'date-time' }),
      podsLeft: Type.Optional(Type.Integer({ minimum: 0 })),
    }),
  ),
});

export const KVMClusterStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0, format: 'int64' })),
  conditions: Type.Optional(
    Type.Array(Condition, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  ),
  nodes: Type.Optional(Type.Array(KVMNodeStatus, { maxItems: 500 })),
  nodeIndexes: Type.Optional(
    Type.Record(Type.String(), Type.Integer({ minimum: 1 }), {
      description:
        "Node id → a small integer, stable for the node's life (the lowest free one; holes reused).",
    }),
  ),
  versions: Type.Optional(
    Type.Array(
      Type.Object({
        release: Type.String({ maxLength: 64 }),
        lastTransitionTime: Type.String({ format: 'date-time' }),
      }),
      { description: 'The releases the cluster reached, newest last (at most 5).', maxItems: 5 },
    ),
  ),
  readyNodes: Type.Optional(Type.Integer({ minimum: 0 })),
  desiredNodes: Type.Optional(Type.Integer({ minimum: 0 })),
  kubeconfigSecret: Type.Optional(
    Type.String({ description: "The Secret holding the workload cluster's kubeconfig.", maxLength: 253 }),
  ),
  lastUnhealthyReplacement: Type.Optional(Type.String({ format: 'date-time' })),
});

export const KVMClusters = defineCustomResource({
  ...KVMClusterKind,
  singular: 'kvmcluster',
  shortNames: ['kvmc'],
  categories: ['nodewarden'],
  description:
    'A workload cluster whose nodes are VMs in pods of this cluster (giantswarm kvm-operator parity); ' +
    'its name is the cluster id and the namespace of its VM pods.',
  spec: KVMClusterSpec,
  status: KVMClusterStatus,
  validations: [
    {
      rule: "self.metadata.name.matches('^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$')",
      message:
        'name must be a DNS label of at most 32 characters starting with a letter: it names a namespace and a control plane',
    },
  ],
  printerColumns: [
    { name: 'Release', type: 'string', jsonPath: '.spec.release.version' },
    { name: 'Created', type: 'string', jsonPath: '.status.conditions[?(@.type=="Created")].status' },
    { name: 'Updating', type: 'string', jsonPath: '.status.conditions[?(@.type=="Updating")].status' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyNodes', description: 'Ready workload nodes' },
    { name: 'Desired', type: 'integer', jsonPath: '.status.desiredNodes' },
    { name: 'VNI', type: 'integer', jsonPath: '.spec.network.vni', priority: 1 },
  ],
});

export type KVMCluster = ResourceOf<typeof KVMClusters>;
export type KVMClusterSpecType = KVMCluster['spec'];
export type KVMClusterStatusType = NonNullable<KVMCluster['status']>;
export type KVMNodeSpec = KVMClusterSpecType['masters'][number];
export type KVMNodeStatusType = NonNullable<KVMClusterStatusType['nodes']>[number];

/** Labels on everything the operator makes for a cluster. */
export const KVM_LABELS = {
  cluster: 'kvm.nodewarden.dev/cluster',
  role: 'kvm.nodewarden.dev/role',
  nodeId: 'kvm.nodewarden.dev/node-id',
  managedBy: 'app.kubernetes.io/managed-by',
  /**
   * "true" on a master's VM pod while its VM is a Ready workload node: the masters' disruption
   * budget counts only these (a pod reads Ready long before its VM serves).
   */
  serving: 'kvm.nodewarden.dev/serving',
} as const;

/** Annotations on VM pods (templates) and Deployments. */
export const KVM_ANNOTATIONS = {
  /** The release the node's VM runs. */
  release: 'kvm.nodewarden.dev/release-version',
  /** A digest of everything that, changed, must roll the node (release, CPUs, memory, disks, Ignition). */
  nodeSpec: 'kvm.nodewarden.dev/node-spec-hash',
  /** Set on a VM pod once its workload node is drained (or the drain timed out): the VM may go. */
  drained: 'kvm.nodewarden.dev/drained',
  /** When its drain began. */
  drainStarted: 'kvm.nodewarden.dev/drain-started',
  /**
   * On a master's VM pod the rollout evicts for an update, written just before the eviction (and
   * taken back if it is refused): who took it, for anyone looking from outside.
   */
  rolloutEviction: 'kvm.nodewarden.dev/rollout-eviction',
} as const;

/** Holds a KVMCluster until its namespace, pods and control plane are gone. */
export const KVM_FINALIZER = 'kvm.nodewarden.dev/cluster';
/** Holds a VM pod until its workload node is drained. */
export const VM_DRAIN_FINALIZER = 'kvm.nodewarden.dev/drain';
