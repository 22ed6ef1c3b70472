// Cluster API's kinds (cluster.x-k8s.io/v1beta2) as nodewarden talks to them:
// not ours, Cluster API's own CRDs define them. The labels and annotations its
// controllers and cluster-autoscaler agree on, and the few fields of its
// objects the upgrade capability's clusterapi provider and the local cluster's
// simulated Cluster API infrastructure read and write.
import { builtInKind, type ObjectMeta } from '../runtime/resources.ts';

const G = 'cluster.x-k8s.io';
export const CLUSTER_API_VERSION = 'v1beta2';

export const Clusters = builtInKind(G, CLUSTER_API_VERSION, 'Cluster', 'clusters', true);
export const Machines = builtInKind(G, CLUSTER_API_VERSION, 'Machine', 'machines', true);
export const MachineSets = builtInKind(G, CLUSTER_API_VERSION, 'MachineSet', 'machinesets', true);
export const MachineDeployments = builtInKind(
  G,
  CLUSTER_API_VERSION,
  'MachineDeployment',
  'machinedeployments',
  true,
);

export const CapiLabels = {
  clusterName: 'cluster.x-k8s.io/cluster-name',
  controlPlane: 'cluster.x-k8s.io/control-plane',
  deploymentName: 'cluster.x-k8s.io/deployment-name',
  setName: 'cluster.x-k8s.io/set-name',
} as const;

export const CapiAnnotations = {
  /** A Machine the MachineSet removes first when it scales down (as cluster-autoscaler marks one). */
  deleteMachine: 'cluster.x-k8s.io/delete-machine',
  /** Cluster API skips its own drain of the Machine's Node (ours is done by then). */
  excludeNodeDraining: 'machine.cluster.x-k8s.io/exclude-node-draining',
  autoscalerMin: 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size',
  autoscalerMax: 'cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size',
  /** Set by Cluster API on an infrastructure machine: the template it was cloned from. */
  clonedFromName: 'cluster.x-k8s.io/cloned-from-name',
} as const;

/** A reference to a provider's object, as v1beta2 writes it (apiGroup, not apiVersion). */
export interface ContractRef {
  apiGroup: string;
  kind: string;
  name: string;
}

export interface MachineDeployment {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: {
    clusterName: string;
    replicas?: number;
    rollout?: { strategy?: { type?: 'RollingUpdate' | 'OnDelete' } };
    selector?: { matchLabels?: Record<string, string> };
    template: { metadata?: { labels?: Record<string, string> }; spec: MachineSpec };
  };
  status?: {
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    upToDateReplicas?: number;
  };
}

export interface MachineSet {
  metadata: ObjectMeta;
  spec: { replicas?: number; template: { spec: { infrastructureRef: ContractRef } } };
  status?: { replicas?: number };
}

export interface MachineSpec {
  clusterName: string;
  version?: string;
  bootstrap?: { dataSecretName?: string };
  infrastructureRef: ContractRef;
  providerID?: string;
}

export interface Machine {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: MachineSpec;
  status?: {
    phase?: string;
    nodeRef?: { name: string };
    initialization?: { infrastructureProvisioned?: boolean };
  };
}
