// Local clusters as the nodewarden command opens them: carrying every
// simulator the capabilities list (the simulated cloud, …).
import { capabilities, simulatorsOf } from '../../src/capabilities.ts';
import { LocalClusters } from '../../src/cluster/local-cluster.ts';

export async function openLocalClusters(opts: { quiet?: boolean } = {}): Promise<LocalClusters> {
  return LocalClusters.open({ ...opts, infrastructure: await simulatorsOf(capabilities) });
}
