// Local clusters as the nodewarden command opens them: carrying every
// simulator the capabilities list (the simulated cloud, …).
import { capabilities, simulatorsOf } from '../../src/capabilities.ts';
import { LocalClusters } from '../../src/cluster/local-cluster.ts';

export async function openLocalClusters(opts: { quiet?: boolean } = {}): Promise<LocalClusters> {
  return LocalClusters.open({ ...opts, infrastructure: await simulatorsOf(capabilities) });
}

/**
 * Brings up a fleetless cluster whose watches of `resources` (e.g. "configmaps",
 * "deployments.apps") break as a busy production server's do: etcd compacted every
 * 2 s, and those resources watched from etcd rather than the API server's watch cache
 * (whose history outlives compaction), so a watch away for a few seconds comes back
 * too old (410) and relists.
 */
export async function upWithCompactedWatches(
  clusters: LocalClusters,
  name: string,
  resources: readonly string[],
  extraArgs: readonly string[] = [],
): Promise<void> {
  await clusters.up({
    name,
    pools: [],
    extraArgs: [
      'kube-apiserver=etcd-compaction-interval=2s',
      `kube-apiserver=watch-cache-sizes=${resources.map((r) => `${r}#0`).join(',')}`,
      ...extraArgs,
    ],
  });
}
