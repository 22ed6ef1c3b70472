// Which cloud the operator replaces nodes through, from its flags. Real clouds
// (AWS, GCP, Azure, Cluster API) plug in here as further `--cloud-provider`
// values, each implementing provider.ts.
import { findEndpoint } from '../../cluster/infra/kit/discovery.ts';
import type { KubeClient } from '../../runtime/client.ts';
import type { CloudProvider } from './interface.ts';
import { SimulatedCloudProvider } from './simulated.ts';

export const CLOUD_PROVIDERS = ['none', 'simulated'] as const;

export interface CloudFlags {
  provider: string;
  /** The simulated cloud's URL; found through the cluster's ConfigMap when absent. */
  endpoint?: string;
  clusterId?: string;
}

export interface CloudSetup {
  cloud?: CloudProvider;
  clusterId: string;
}

export async function cloudFromFlags(flags: CloudFlags, client: KubeClient): Promise<CloudSetup> {
  switch (flags.provider) {
    case 'none':
      return { clusterId: flags.clusterId ?? 'nodewarden' };
    case 'simulated': {
      const found = flags.endpoint ? undefined : await findEndpoint(client, 'cloud');
      const endpoint = flags.endpoint ?? found?.endpoint;
      if (!endpoint) {
        throw new Error(
          '--cloud-provider simulated: no --cloud-endpoint given and the cluster has no kube-system/nodewarden-simulated-cloud ConfigMap (is it a nodewarden local cluster?)',
        );
      }
      return {
        cloud: new SimulatedCloudProvider({ endpoint }),
        clusterId: flags.clusterId ?? (found?.cluster || 'nodewarden'),
      };
    }
    default:
      throw new Error(
        `--cloud-provider must be one of ${CLOUD_PROVIDERS.join(', ')}, not "${flags.provider}"`,
      );
  }
}
