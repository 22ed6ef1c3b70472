// A self-hosted Cluster API cluster on a local cluster: a `Cluster` whose
// kubeconfig Secret points at the very API server Cluster API runs against,
// so its Machines' Nodes are the local cluster's nodes; one control-plane
// Machine standing for an existing control-plane Node (Cluster API counts the
// control plane initialized once such a Machine has its Node, and only then
// watches Nodes); and builders for the worker MachineDeployments and their
// NodewardenMachineTemplates. Bootstrap is skipped: machines name an empty data Secret.
import { readFileSync } from 'node:fs';
import type { V1Node } from '@kubernetes/client-node';
import {
  CapiLabels,
  Clusters,
  type MachineDeployment,
  MachineDeployments,
  Machines,
} from '../../../api/clusterapi.ts';
import type { KubeClient } from '../../../runtime/client.ts';
import { Nodes, Secrets } from '../../../runtime/resources.ts';
import {
  GROUP,
  NodewardenClusters,
  NodewardenMachines,
  type NodewardenMachineTemplate,
  NodewardenMachineTemplates,
} from './api.ts';

/** The empty bootstrap data Secret every machine names (bootstrap.dataSecretName): nothing to bootstrap. */
export const NO_BOOTSTRAP_SECRET = 'nodewarden-no-bootstrap';

export interface SelfHostedCluster {
  namespace: string;
  name: string;
  kubernetesVersion: string;
  /** The existing Node the control-plane Machine stands for. */
  controlPlaneNode: string;
}

export async function createSelfHostedCluster(
  client: KubeClient,
  o: {
    namespace: string;
    name: string;
    kubeconfigPath: string;
    kubernetesVersion: string;
    apiServer: string;
  },
): Promise<SelfHostedCluster> {
  const { namespace, name } = o;
  const labels = { [CapiLabels.clusterName]: name };
  await client.create(Secrets, {
    metadata: { name: `${name}-kubeconfig`, namespace, labels },
    type: 'cluster.x-k8s.io/secret',
    data: { value: readFileSync(o.kubeconfigPath).toString('base64') },
  });
  await client.create(Secrets, {
    metadata: { name: NO_BOOTSTRAP_SECRET, namespace, labels },
    data: { value: '' },
  });
  // The endpoint is the API server the kubeconfig names: the cluster is itself.
  const server = new URL(o.apiServer);
  const controlPlaneEndpoint = { host: server.hostname, port: Number(server.port || 443) };
  await client.create(
    NodewardenClusters.type,
    NodewardenClusters.make({ name, namespace }, { controlPlaneEndpoint }),
  );
  await client.create(Clusters, {
    metadata: { name, namespace },
    spec: {
      controlPlaneEndpoint,
      infrastructureRef: { apiGroup: GROUP, kind: 'NodewardenCluster', name },
    },
  });
  const cp = (
    await client.list<V1Node>(Nodes, { labelSelector: 'node-role.kubernetes.io/control-plane' })
  ).items
    .filter((n) => n.spec?.providerID)
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))[0];
  if (!cp?.metadata?.name) throw new Error('the local cluster has no control-plane Node with a providerID');
  const node = cp.metadata.name;
  await client.create(NodewardenMachines.type, {
    metadata: { name: node, namespace, labels: { ...labels, [CapiLabels.controlPlane]: '' } },
    spec: { image: 'existing', providerID: cp.spec?.providerID, adoptExistingNode: true },
  });
  await client.create(Machines, {
    metadata: { name: node, namespace, labels: { ...labels, [CapiLabels.controlPlane]: '' } },
    spec: {
      clusterName: name,
      version: o.kubernetesVersion,
      bootstrap: { dataSecretName: NO_BOOTSTRAP_SECRET },
      infrastructureRef: { apiGroup: GROUP, kind: 'NodewardenMachine', name: node },
    },
  });
  return { namespace, name, kubernetesVersion: o.kubernetesVersion, controlPlaneNode: node };
}

export function machineTemplate(
  namespace: string,
  name: string,
  spec: NodewardenMachineTemplate['spec']['template']['spec'],
): NodewardenMachineTemplate {
  return NodewardenMachineTemplates.make({ name, namespace }, { template: { spec } });
}

/** A worker MachineDeployment of `replicas` machines from `template`. */
export function workerDeployment(
  c: SelfHostedCluster,
  o: {
    name: string;
    replicas: number;
    template: string;
    strategy?: 'OnDelete' | 'RollingUpdate';
    annotations?: Record<string, string>;
  },
): MachineDeployment {
  const select = { 'nodewarden.dev/machine-deployment': o.name };
  return {
    apiVersion: `${MachineDeployments.group}/${MachineDeployments.version}`,
    kind: MachineDeployments.kind,
    metadata: {
      name: o.name,
      namespace: c.namespace,
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      clusterName: c.name,
      replicas: o.replicas,
      rollout: { strategy: { type: o.strategy ?? 'OnDelete' } },
      selector: { matchLabels: select },
      template: {
        metadata: { labels: select },
        spec: {
          clusterName: c.name,
          version: c.kubernetesVersion,
          bootstrap: { dataSecretName: NO_BOOTSTRAP_SECRET },
          infrastructureRef: { apiGroup: GROUP, kind: 'NodewardenMachineTemplate', name: o.template },
        },
      },
    },
  };
}
