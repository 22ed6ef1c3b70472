// Which cloud the operator replaces nodes through, from its flags: one
// factory per `--cloud-provider` value. Real clouds (AWS, GCP, Azure, Cluster
// API) plug in as further factories, each implementing interface.ts.
import type { FlagValues, OptionsContext, ProviderFactory } from '../../capability.ts';
import { findEndpoint } from '../../cluster/infra/kit/discovery.ts';
import type { CloudProvider } from './interface.ts';
import { SimulatedCloudProvider } from './simulated.ts';

/** A cloud, and the cluster id it knows this cluster by when it says. */
export interface CloudConnection {
  cloud: CloudProvider;
  clusterId?: string;
}

export const cloudProviders: readonly ProviderFactory<CloudConnection>[] = [
  {
    kind: 'cloud',
    name: 'none',
    summary: 'no cloud: the upgrade controllers that replace nodes stay off',
    create: async () => undefined,
  },
  {
    kind: 'cloud',
    name: 'simulated',
    summary: "a nodewarden local cluster's simulated cloud",
    async create(flags, ctx) {
      const given = flags['cloud-endpoint'];
      const found = typeof given === 'string' ? undefined : await findEndpoint(ctx.client, 'cloud');
      const endpoint = typeof given === 'string' ? given : found?.endpoint;
      if (!endpoint) {
        throw new Error(
          '--cloud-provider simulated: no --cloud-endpoint given and the cluster has no kube-system/nodewarden-simulated-cloud ConfigMap (is it a nodewarden local cluster?)',
        );
      }
      return {
        cloud: new SimulatedCloudProvider({ endpoint }),
        ...(found?.cluster ? { clusterId: found.cluster } : {}),
      };
    },
  },
];

export const CLOUD_PROVIDERS = cloudProviders.map((p) => p.name);

export interface CloudSetup {
  cloud?: CloudProvider;
  clusterId: string;
}

/** The upgrade capability's options from its flags, through the factory --cloud-provider names. */
export async function cloudOptions(flags: FlagValues, ctx: OptionsContext): Promise<CloudSetup> {
  const name = String(flags['cloud-provider'] ?? 'none');
  const factory = cloudProviders.find((p) => p.name === name);
  if (!factory)
    throw new Error(`--cloud-provider must be one of ${CLOUD_PROVIDERS.join(', ')}, not "${name}"`);
  const connection = await factory.create(flags, ctx);
  const clusterId = flags['cluster-id'];
  return {
    ...(connection ? { cloud: connection.cloud } : {}),
    clusterId: typeof clusterId === 'string' ? clusterId : (connection?.clusterId ?? 'nodewarden'),
  };
}
