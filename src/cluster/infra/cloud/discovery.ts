// How the operator finds the simulated cloud of the cluster it runs against:
// the kit's endpoint ConfigMap, kube-system/nodewarden-simulated-cloud, with
// the cluster id its scaling groups are tagged with beside the URL.
import type { KubeClient } from '../../../runtime/client.ts';
import { findEndpoint, publishEndpoint } from '../kit/discovery.ts';
import { CLOUD_SIMULATOR, type SimulatedCloudEndpoint } from './protocol.ts';

/** The simulated cloud the cluster names, or undefined if it names none. */
export async function simulatedCloudEndpoint(
  client: KubeClient,
): Promise<SimulatedCloudEndpoint | undefined> {
  const found = await findEndpoint(client, CLOUD_SIMULATOR);
  return found && { endpoint: found.endpoint, cluster: found.cluster ?? '' };
}

export async function publishSimulatedCloud(
  client: KubeClient,
  cloud: SimulatedCloudEndpoint,
): Promise<void> {
  await publishEndpoint(client, CLOUD_SIMULATOR, { endpoint: cloud.endpoint, cluster: cloud.cluster });
}
