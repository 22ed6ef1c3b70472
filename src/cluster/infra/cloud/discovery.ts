// How the operator finds the simulated cloud of the cluster it runs against:
// the kit's endpoint ConfigMap, kube-system/nodewarden-simulated-cloud, with
// the cluster id its scaling groups are tagged with beside the URL.
import type { KubeClient } from '../../../runtime/client.ts';
import { endpointConfigMap, findEndpoint, publishEndpoint } from '../kit/discovery.ts';

export const SIMULATED_CLOUD_CONFIGMAP = endpointConfigMap('cloud');

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
  const found = await findEndpoint(client, 'cloud');
  return found && { endpoint: found.endpoint, cluster: found.cluster ?? '' };
}

export async function publishSimulatedCloud(
  client: KubeClient,
  cloud: SimulatedCloudEndpoint,
): Promise<void> {
  await publishEndpoint(client, 'cloud', { endpoint: cloud.endpoint, cluster: cloud.cluster });
}
