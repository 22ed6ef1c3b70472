// `--cloud-provider simulated`: the simulated cloud of a nodewarden local
// cluster, at --cloud-endpoint or where the cloud publishes itself in the
// cluster (the simulator kit's endpoint ConfigMap, with the cluster id its
// scaling groups are tagged with).
import type { ProviderFactory } from '../../../capability.ts';
import { CLOUD_SIMULATOR, type SimulatedCloudEndpoint } from '../../../cluster/infra/cloud/protocol.ts';
import { endpointConfigMap, findEndpoint } from '../../../cluster/infra/kit/discovery.ts';
import type { CloudConnection } from '../interface.ts';
import { SimulatedCloudProvider } from './provider.ts';

export const simulatedCloud: ProviderFactory<CloudConnection> = {
  kind: 'cloud',
  name: 'simulated',
  summary: "a nodewarden local cluster's simulated cloud",
  async create(flags, ctx) {
    const given = flags['cloud-endpoint'];
    const found: Partial<SimulatedCloudEndpoint> | undefined =
      typeof given === 'string' ? undefined : await findEndpoint(ctx.client, CLOUD_SIMULATOR);
    const endpoint = typeof given === 'string' ? given : found?.endpoint;
    if (!endpoint) {
      const { namespace, name } = endpointConfigMap(CLOUD_SIMULATOR);
      throw new Error(
        `--cloud-provider simulated: no --cloud-endpoint given and the cluster has no ${namespace}/${name} ConfigMap (is it a nodewarden local cluster?)`,
      );
    }
    return {
      cloud: new SimulatedCloudProvider({ endpoint }),
      ...(found?.cluster ? { clusterId: found.cluster } : {}),
    };
  },
};
