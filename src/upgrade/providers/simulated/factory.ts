// `--cloud-provider simulated`: the simulated cloud of a nodewarden local
// cluster, at --cloud-endpoint or where the cloud publishes itself in the
// cluster (the simulator kit's endpoint ConfigMap, with the cluster id its
// scaling groups are tagged with): its loopback URL for an operator on the
// host, the one recorded for pods for an operator in a pod on a real node.
import type { ProviderFactory } from '../../../capability.ts';
import { CLOUD_SIMULATOR } from '../../../cluster/infra/cloud/protocol.ts';
import {
  endpointConfigMap,
  endpointFor,
  findEndpoint,
  IN_CLUSTER_ENDPOINT_KEY,
} from '../../../cluster/infra/kit/discovery.ts';
import type { CloudConnection } from '../interface.ts';
import { SimulatedCloudProvider } from './provider.ts';

export const simulatedCloud: ProviderFactory<CloudConnection> = {
  kind: 'cloud',
  name: 'simulated',
  summary: "a nodewarden local cluster's simulated cloud",
  async create(flags, ctx) {
    const given = flags['cloud-endpoint'];
    if (typeof given === 'string') return { cloud: new SimulatedCloudProvider({ endpoint: given }) };
    const found = await findEndpoint(ctx.client, CLOUD_SIMULATOR);
    const endpoint = found && endpointFor(found, ctx.runsIn);
    if (!found || !endpoint) throw new Error(noEndpoint(found !== undefined));
    return {
      cloud: new SimulatedCloudProvider({ endpoint }),
      ...(found.cluster ? { clusterId: found.cluster } : {}),
    };
  },
};

function noEndpoint(published: boolean): string {
  const { namespace, name } = endpointConfigMap(CLOUD_SIMULATOR);
  const where = `${namespace}/${name}`;
  if (!published)
    return `--cloud-provider simulated: no --cloud-endpoint given and the cluster has no ${where} ConfigMap (is it a nodewarden local cluster?)`;
  // Published with no URL for pods: the host's is always there, so the operator runs in a pod.
  return `--cloud-provider simulated: ${where} has no ${IN_CLUSTER_ENDPOINT_KEY}: an operator in a pod reaches the simulated cloud only on a local cluster with real nodes (cluster up --real-nodes N)`;
}
