// Starts one real local cluster for the whole integration run, and deletes it
// at the end even when tests fail. Suites isolate themselves by namespace
// (measured: a namespace per suite costs milliseconds, a cluster per suite
// seconds). Test files run in child processes that inherit the env set here.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const NAME = 'nwtest';

export async function globalSetup(): Promise<void> {
  // A state folder of the run's own: never touches the user's clusters, and a
  // crashed earlier run cannot leave anything this one trips over.
  const state = process.env.NODEWARDEN_TEST_STATE_DIR ?? mkdtempSync(join(tmpdir(), 'nodewarden-test-'));
  process.env.NODEWARDEN_STATE_DIR = state;
  // What real nodes run (warm: found at once), built before any test so none pays for it in its timeout.
  const { nodeRuntime } = await import('../../src/cluster/toolchain.ts');
  await nodeRuntime();
  const { openLocalClusters } = await import('./local-clusters.ts');
  const { parsePools } = await import('../../src/cluster/fleet.ts');
  const clusters = await openLocalClusters();
  const started = Date.now();
  const info = await clusters.up({
    name: NAME,
    pools: parsePools(TEST_FLEET),
    progress: (m) => process.stderr.write(`[harness] ${m}\n`),
  });
  await installCustomResources(clusters.kubeConfig(NAME));
  process.stderr.write(`[harness] cluster ready in ${Date.now() - started} ms: ${info.kubeconfig}\n`);
  process.env.NODEWARDEN_TEST_KUBECONFIG = info.kubeconfig;
  process.env.NODEWARDEN_TEST_CLUSTER = NAME;
}

/** Every CRD the suite ships, as `make install` would apply them, Established before tests start. */
export async function installCustomResources(
  kc: import('@kubernetes/client-node').KubeConfig,
): Promise<void> {
  const { customResources } = await import('../../src/capabilities.ts');
  const { KubeClient } = await import('../../src/runtime/client.ts');
  const { CustomResourceDefinitions } = await import('../../src/runtime/resources.ts');
  const client = KubeClient.fromKubeConfig(kc);
  try {
    for (const cr of customResources) {
      const crd = cr.crd();
      await client.create(CustomResourceDefinitions, crd as never);
      for (let i = 0; i < 100; i++) {
        const got = await client.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
          CustomResourceDefinitions,
          crd.metadata.name,
        );
        if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    client.close();
  }
}

export async function globalTeardown(): Promise<void> {
  const state = process.env.NODEWARDEN_STATE_DIR;
  if (!state || process.env.NODEWARDEN_TEST_KEEP_CLUSTER === '1') return;
  const { openLocalClusters } = await import('./local-clusters.ts');
  const clusters = await openLocalClusters({ quiet: true });
  for (const name of clusters.list()) {
    await clusters
      .delete(name)
      .catch((err: unknown) => process.stderr.write(`[harness] delete ${name}: ${String(err)}\n`));
  }
  if (!process.env.NODEWARDEN_TEST_STATE_DIR) rmSync(state, { recursive: true, force: true });
}

/** The fleet every suite sees: 3 control-plane nodes and 6 workers in 3 zones. */
export const TEST_FLEET = 'cp=3:role=control-plane;worker=6:racks=2';
