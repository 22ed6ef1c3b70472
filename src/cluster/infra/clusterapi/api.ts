// infrastructure.nodewarden.dev/v1alpha1: a Cluster API infrastructure provider
// for a local cluster's simulated machines. Real Cluster API controllers,
// simulated infrastructure: a NodewardenMachine "boots" by registering a kwok
// Node after a delay, as the simulated cloud's instances do. Its template carries
// the `image` field a rollout changes (the path an infrastructure template's
// image sits at differs per provider; ours is spec.template.spec.image).
// The CRDs carry the label by which Cluster API finds which of its contracts a
// provider's version implements (cluster.x-k8s.io/<contract>: <our versions>).
import Type from 'typebox';
import {
  type CustomResourceDefinitionManifest,
  defineCustomResource,
  type ResourceOf,
} from '../../../api/crd.ts';

export const GROUP = 'infrastructure.nodewarden.dev';
export const VERSION = 'v1alpha1';
/** Cluster API's v1beta2 contract, as its controllers read it from a provider CRD's labels. */
export const CONTRACT_LABEL = 'cluster.x-k8s.io/v1beta2';

/** On a NodewardenMachine (or its template's spec.template.metadata): the machine never boots. */
export const NEVER_BOOT_ANNOTATION = 'infrastructure.nodewarden.dev/never-boot';

const MachineSpec = Type.Object({
  image: Type.String({
    minLength: 1,
    description: 'The image the machine boots; its Node is labelled with it.',
  }),
  providerID: Type.Optional(
    Type.String({
      description: 'Set by the provider once the machine exists (nodewarden://<namespace>/<name>).',
    }),
  ),
  bootDelaySeconds: Type.Optional(
    Type.Integer({ minimum: 0, description: 'How long the machine takes to register its Node. Default 2.' }),
  ),
  adoptExistingNode: Type.Optional(
    Type.Boolean({
      description:
        'The machine stands for a Node that exists already (say, a control plane made another way), found by ' +
        'spec.providerID: its Node is neither created nor deleted.',
    }),
  ),
  zone: Type.Optional(
    Type.String({ description: 'The Node\'s topology.kubernetes.io/zone. Default "zone-a".' }),
  ),
  pool: Type.Optional(Type.String({ description: "The Node's nodewarden.dev/pool label." })),
});

const MachineStatus = Type.Object({
  initialization: Type.Optional(
    Type.Object({
      provisioned: Type.Optional(
        Type.Boolean({ description: 'Cluster API v1beta2 contract: the machine exists and runs.' }),
      ),
    }),
  ),
  ready: Type.Optional(Type.Boolean({ description: 'Cluster API v1beta1 contract: the same.' })),
  addresses: Type.Optional(
    Type.Array(Type.Object({ type: Type.String(), address: Type.String() }), {
      description: 'The addresses of the machine (its hostname).',
    }),
  ),
  bootedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When its Node registered.' })),
});

export const NodewardenMachines = withContract(
  defineCustomResource({
    group: GROUP,
    version: VERSION,
    kind: 'NodewardenMachine',
    plural: 'nodewardenmachines',
    scope: 'Namespaced',
    categories: ['cluster-api'],
    description: "A local cluster's simulated machine, as a Cluster API infrastructure machine.",
    spec: MachineSpec,
    status: MachineStatus,
    printerColumns: [
      { name: 'Image', type: 'string', jsonPath: '.spec.image' },
      { name: 'ProviderID', type: 'string', jsonPath: '.spec.providerID' },
      { name: 'Provisioned', type: 'boolean', jsonPath: '.status.initialization.provisioned' },
    ],
  }),
);

export const NodewardenMachineTemplates = withContract(
  defineCustomResource({
    group: GROUP,
    version: VERSION,
    kind: 'NodewardenMachineTemplate',
    plural: 'nodewardenmachinetemplates',
    scope: 'Namespaced',
    categories: ['cluster-api'],
    description:
      'The NodewardenMachines a MachineDeployment makes; immutable, as Cluster API expects of templates.',
    spec: Type.Object({
      template: Type.Object({
        metadata: Type.Optional(
          Type.Object({
            labels: Type.Optional(Type.Record(Type.String(), Type.String())),
            annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
          }),
        ),
        spec: MachineSpec,
      }),
    }),
    printerColumns: [{ name: 'Image', type: 'string', jsonPath: '.spec.template.spec.image' }],
    validations: [{ rule: 'self.spec == oldSelf.spec', message: 'a machine template is immutable' }],
  }),
);

export const NodewardenClusters = withContract(
  defineCustomResource({
    group: GROUP,
    version: VERSION,
    kind: 'NodewardenCluster',
    plural: 'nodewardenclusters',
    scope: 'Namespaced',
    categories: ['cluster-api'],
    description:
      "A local cluster as a Cluster API infrastructure cluster: nothing to provision, its API server's endpoint given.",
    spec: Type.Object({
      controlPlaneEndpoint: Type.Optional(
        Type.Object({ host: Type.String(), port: Type.Integer({ minimum: 1, maximum: 65535 }) }),
      ),
    }),
    status: Type.Object({
      initialization: Type.Optional(Type.Object({ provisioned: Type.Optional(Type.Boolean()) })),
      ready: Type.Optional(Type.Boolean()),
    }),
  }),
);

export type NodewardenCluster = ResourceOf<typeof NodewardenClusters>;
export type NodewardenMachine = ResourceOf<typeof NodewardenMachines>;
export type NodewardenMachineTemplate = ResourceOf<typeof NodewardenMachineTemplates>;

/** Adds Cluster API's contract label to a definition's CRD. */
function withContract<D extends { crd(): CustomResourceDefinitionManifest }>(def: D): D {
  const crd = def.crd.bind(def);
  return {
    ...def,
    crd: () => {
      const m = crd();
      return {
        ...m,
        metadata: { ...m.metadata, labels: { ...m.metadata.labels, [CONTRACT_LABEL]: VERSION } },
      };
    },
  };
}
