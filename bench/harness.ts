// What every benchmark shares: a state folder of its own, and a local cluster
// that is deleted at the end — also when the run is interrupted (Ctrl-C).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.NODEWARDEN_STATE_DIR ??= mkdtempSync(join(tmpdir(), 'nodewarden-bench-'));
const { LocalClusters } = await import('../src/cluster/local-cluster.ts');
const { capabilities, simulatorsOf } = await import('../src/capabilities.ts');

export type Clusters = Awaited<ReturnType<typeof LocalClusters.open>>;

/** Opens the local clusters, removing every one of them (and the state folder) on exit or interrupt. */
export async function benchClusters(): Promise<{ clusters: Clusters; cleanup: () => Promise<void> }> {
  // Clusters as the nodewarden command opens them: with every capability's simulators.
  const clusters = await LocalClusters.open({ infrastructure: await simulatorsOf(capabilities) });
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

/** An operator process's CPU so far, its RSS, and the API requests its /metrics at `metricsAddress` counted. */
export async function operatorFigures(
  pid: number,
  metricsAddress: string,
): Promise<{ cpuSeconds: number; rssMiB: number; requests: number }> {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]);
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  const metrics = await (await fetch(`http://${metricsAddress}/metrics`)).text();
  const requests = [...metrics.matchAll(/^rest_client_requests_total\{[^}]*\} (\d+)/gm)].reduce(
    (a, m) => a + Number(m[1]),
    0,
  );
  return { cpuSeconds: ticks / 100, rssMiB: rss, requests };
}

/**
 * `nodewarden operator` from source against a benchmark cluster, quiet, with
 * its metrics on `metricsAddress` (for operatorFigures) and no webhook.
 */
export function spawnBenchOperator(
  kubeconfig: string,
  metricsAddress: string,
  extraArgs: readonly string[],
): ChildProcess {
  return spawn(
    process.execPath,
    [
      'src/cmd/main.ts',
      'operator',
      '--kubeconfig',
      kubeconfig,
      '--metrics-bind-address',
      metricsAddress,
      '--health-probe-bind-address',
      '127.0.0.1:0',
      '--webhook-bind-address',
      '0',
      '--log-level',
      'warn',
      ...extraArgs,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}
