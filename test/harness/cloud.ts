// What a test needs to talk to a local cluster's simulated cloud: found the way
// the operator finds it (the ConfigMap), called over its HTTP API.
import type { V1Node } from '@kubernetes/client-node';
import { cloudRequest } from '../../src/cluster/infra/cloud/api.ts';
import { simulatedCloudEndpoint } from '../../src/cluster/infra/cloud/discovery.ts';
import type { Instance } from '../../src/cluster/infra/cloud/state.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { Nodes } from '../../src/runtime/resources.ts';

export interface ClusterCloud {
  endpoint: string;
  cluster: string;
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  instance(providerID: string): Promise<Instance>;
}

export async function clusterCloud(client: KubeClient): Promise<ClusterCloud> {
  const found = await simulatedCloudEndpoint(client);
  if (!found)
    throw new Error('the cluster names no simulated cloud (kube-system/nodewarden-simulated-cloud)');
  const call = <T>(method: string, path: string, body?: unknown) =>
    cloudRequest<T>(found.endpoint, method, path, body);
  return {
    ...found,
    call,
    instance: (providerID) => call<Instance>('GET', `/instances/${encodeURIComponent(providerID)}`),
  };
}

/** The Node of that name, or undefined if there is none. */
export async function findNode(client: KubeClient, name: string): Promise<V1Node | undefined> {
  try {
    return await client.get<V1Node>(Nodes, name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
