// Which cloud the operator replaces nodes through, from its flags: one factory
// per `--cloud-provider` value, each implementation in its own folder beside
// interface.ts (simulated/: the local cluster's simulated cloud; clusterapi/: Cluster API).
import type { FlagValues, OptionsContext, ProviderFactory } from '../../capability.ts';
import { clusterApiCloud } from './clusterapi/factory.ts';
import type { CloudConnection, CloudProvider } from './interface.ts';
import { simulatedCloud } from './simulated/factory.ts';

const noCloud: ProviderFactory<CloudConnection> = {
  kind: 'cloud',
  name: 'none',
  summary: 'no cloud: the upgrade controllers that replace nodes stay off',
  create: async () => undefined,
};

export const cloudProviders: readonly ProviderFactory<CloudConnection>[] = [
  noCloud,
  simulatedCloud,
  clusterApiCloud,
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
