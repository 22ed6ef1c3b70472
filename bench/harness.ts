// What every benchmark shares: a state folder of its own, and a local cluster
// that is deleted at the end — also when the run is interrupted (Ctrl-C).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.NODEWARDEN_STATE_DIR ??= mkdtempSync(join(tmpdir(), 'nodewarden-bench-'));
const { LocalClusters } = await import('../src/cluster/local-cluster.ts');

export type Clusters = Awaited<ReturnType<typeof LocalClusters.open>>;

/** Opens the local clusters, removing every one of them (and the state folder) on exit or interrupt. */
export async function benchClusters(): Promise<{ clusters: Clusters; cleanup: () => Promise<void> }> {
  const clusters = await LocalClusters.open();
  const cleanup = async () => {
    for (const name of clusters.list()) await clusters.delete(name).catch(() => {});
    rmSync(process.env.NODEWARDEN_STATE_DIR!, { recursive: true, force: true });
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      cleanup().finally(() => process.exit(130));
    });
  }
  return { clusters, cleanup };
}
