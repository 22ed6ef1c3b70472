// `--cloud-provider clusterapi`: nodes replaced through Cluster API on the
// cluster the operator runs against (the management cluster). Scaling groups
// are the worker MachineDeployments of the Cluster named by --cluster-id
// (`<namespace>/<name>` or a name).
import type { ProviderFactory } from '../../../capability.ts';
import type { CloudConnection } from '../interface.ts';
import { parseImagePaths } from './image-paths.ts';
import { ClusterApiProvider } from './provider.ts';
import { clusterApiRbac } from './rbac.ts';

export const clusterApiCloud: ProviderFactory<CloudConnection> = {
  kind: 'cloud',
  name: 'clusterapi',
  summary:
    "Cluster API: a Cluster's worker MachineDeployments (strategy OnDelete), on any infrastructure provider",
  rbac: clusterApiRbac,
  async create(flags, ctx) {
    const clusterId = flags['cluster-id'];
    if (typeof clusterId !== 'string' || !clusterId)
      throw new Error(
        '--cloud-provider clusterapi needs --cluster-id: the Cluster, as <namespace>/<name> or <name>',
      );
    const namespace = flags['clusterapi-namespace'];
    return {
      cloud: new ClusterApiProvider({
        client: ctx.client,
        imagePaths: parseImagePaths(
          typeof flags['clusterapi-image-path'] === 'string' ? flags['clusterapi-image-path'] : undefined,
        ),
        setOnDelete: flags['clusterapi-set-on-delete'] === true,
        ...(typeof namespace === 'string' && namespace ? { namespace } : {}),
      }),
      clusterId,
    };
  },
};
