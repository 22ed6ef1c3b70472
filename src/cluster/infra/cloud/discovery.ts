// How the operator finds the simulated cloud of the cluster it runs against:
// a ConfigMap the add-on writes each time the cloud starts (its port may
// change across `cluster down` + `up`), read where a real operator would read
// its cloud's endpoint from configuration.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeClient } from '../../../runtime/client.ts';
import { isNotFound } from '../../../runtime/errors.ts';
import { ConfigMaps } from '../../../runtime/resources.ts';

export const SIMULATED_CLOUD_CONFIGMAP = { namespace: 'kube-system', name: 'nodewarden-simulated-cloud' };

export interface SimulatedCloudEndpoint {
  /** Base URL of the cloud API, e.g. http://127.0.0.1:41234. */
  endpoint: string;
  /** The cluster id its scaling groups are tagged with (listScalingGroups). */
  cluster: string;
}

/** The simulated cloud the cluster names, or undefined if it names none. */
export async function simulatedCloudEndpoint(
  client: KubeClient,
): Promise<SimulatedCloudEndpoint | undefined> {
  const { namespace, name } = SIMULATED_CLOUD_CONFIGMAP;
  let cm: V1ConfigMap;
  try {
    cm = await client.get<V1ConfigMap>(ConfigMaps, name, namespace);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const endpoint = cm.data?.endpoint;
  if (!endpoint) return undefined;
  return { endpoint, cluster: cm.data?.cluster ?? '' };
}

/** Creates or updates the ConfigMap (server-side apply: one call either way). */
export async function publishSimulatedCloud(
  client: KubeClient,
  cloud: SimulatedCloudEndpoint,
): Promise<void> {
  const { namespace, name } = SIMULATED_CLOUD_CONFIGMAP;
  const body = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'nodewarden-cluster' } },
    data: { endpoint: cloud.endpoint, cluster: cloud.cluster },
  };
  await client.patch(ConfigMaps, name, namespace, body, { type: 'apply', force: true });
}
