// Benchmark: NodeMaintenance drains on a real local cluster.
//  1. One node with 110 pods: time to Succeeded, against `kubectl drain --ignore-daemonsets
//     --delete-emptydir-data --force` of an identical node in the same run (ratio; goal <= 1.0).
//  2. BENCH_NODES nodes (default 1000), BENCH_MAINTENANCES simultaneous maintenances (default
//     100) of nodes with BENCH_PODS_PER_NODE pods (default 10): total time, operator CPU and
//     memory, API requests per drained pod.
//
//   make bench-maintenance
import { execFile, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { benchClusters, operatorFigures } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { mapConcurrently } = await import('../src/runtime/pool.ts');
const { NodeMaintenances } = await import('../src/api/maintenance.ts');
const R = await import('../src/runtime/resources.ts');

const NODES = Number(process.env.BENCH_NODES ?? 1000);
const MAINTENANCES = Number(process.env.BENCH_MAINTENANCES ?? 100);
const PODS_PER_NODE = Number(process.env.BENCH_PODS_PER_NODE ?? 10);
const NM = NodeMaintenances.type;
const METRICS = '127.0.0.1:18480';
const width = Math.max(3, String(NODES - 1).length);
const nodeName = (i: number) => `worker-${String(i).padStart(width, '0')}`;

const { clusters, cleanup } = await benchClusters();
const name = 'bench-maint';

type Obj = import('../src/runtime/resources.ts').K8sObject & { status?: { phase?: string } };

async function createPods(
  client: import('../src/runtime/client.ts').KubeClient,
  nodes: string[],
  perNode: number,
): Promise<void> {
  const todo = nodes.flatMap((n) => Array.from({ length: perNode }, (_, i) => ({ n, i })));
  await mapConcurrently(todo, { concurrency: 32 }, ({ n, i }) =>
    client.create(R.Pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `p-${n}-${i}`, namespace: 'load', labels: { app: 'load' } },
      spec: { nodeName: n, containers: [{ name: 'c', image: 'example/load:1' }] },
    }),
  );
  for (;;) {
    const pods = await client.listAll<Obj>(R.Pods, { namespace: 'load' });
    if (pods.items.filter((p) => p.status?.phase === 'Running').length >= todo.length) return;
    await sleep(500);
  }
}

try {
  const t0 = performance.now();
  await clusters.up({ name, pools: poolsForNodeCount(NODES), timeoutMs: 600_000 });
  console.log(`cluster with ${NODES} Ready nodes in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const kubeconfig = clusters.kubeconfigPath(name);
  const client = KubeClient.fromKubeConfig(clusters.kubeConfig(name), { qps: 0 });
  const kubectl = clusters.binaries().kubectl;
  await promisify(execFile)(kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', 'config/crd/bases/']);
  await client.create(R.Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'load' } });

  const operator = spawn(
    process.execPath,
    [
      'src/cmd/main.ts',
      'operator',
      '--kubeconfig',
      kubeconfig,
      '--controllers',
      'nodemaintenance',
      '--metrics-bind-address',
      METRICS,
      '--health-probe-bind-address',
      '127.0.0.1:0',
      '--webhook-bind-address',
      '0',
      '--maintenance-lease-namespace',
      'load',
      '--qps',
      '500',
      '--burst',
      '1000',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  await sleep(3000);

  // --- 1. one node, 110 pods: us against kubectl drain
  await createPods(client, [nodeName(0), nodeName(1)], 110);
  let t = performance.now();
  await promisify(execFile)(
    kubectl,
    [
      '--kubeconfig',
      kubeconfig,
      'drain',
      nodeName(1),
      '--ignore-daemonsets',
      '--delete-emptydir-data',
      '--force',
    ],
    { maxBuffer: 1 << 24 },
  );
  const kubectlSeconds = (performance.now() - t) / 1000;
  t = performance.now();
  await client.create(NM, {
    apiVersion: NodeMaintenances.apiVersion,
    kind: 'NodeMaintenance',
    metadata: { name: 'single' },
    spec: { nodeName: nodeName(0) },
  });
  while ((await client.get<Obj>(NM, 'single')).status?.phase !== 'Succeeded') await sleep(100);
  const oursSeconds = (performance.now() - t) / 1000;
  console.log(
    `110-pod node: NodeMaintenance ${oursSeconds.toFixed(2)} s, kubectl drain ${kubectlSeconds.toFixed(2)} s, ratio ${(oursSeconds / kubectlSeconds).toFixed(2)}`,
  );

  // --- 2. many maintenances at once
  const targets = Array.from({ length: MAINTENANCES }, (_, i) => nodeName(i + 2));
  await createPods(client, targets, PODS_PER_NODE);
  await sleep(2000);
  const before = await operatorFigures(operator.pid!, METRICS);
  t = performance.now();
  await Promise.all(
    targets.map((n) =>
      client.create(NM, {
        apiVersion: NodeMaintenances.apiVersion,
        kind: 'NodeMaintenance',
        metadata: { name: `m-${n}` },
        spec: { nodeName: n },
      }),
    ),
  );
  let peakRss = 0;
  for (;;) {
    const all = await client.list<Obj>(NM, {});
    const succeeded = all.items.filter(
      (m) => m.metadata?.name?.startsWith('m-') && m.status?.phase === 'Succeeded',
    ).length;
    peakRss = Math.max(peakRss, (await operatorFigures(operator.pid!, METRICS)).rssMiB);
    if (succeeded >= MAINTENANCES) break;
    await sleep(250);
  }
  const seconds = (performance.now() - t) / 1000;
  const after = await operatorFigures(operator.pid!, METRICS);
  const drained = MAINTENANCES * PODS_PER_NODE;
  console.log(
    `${MAINTENANCES} simultaneous maintenances on a ${NODES}-node cluster (${drained} pods): all Succeeded in ${seconds.toFixed(1)} s; ` +
      `operator CPU ${(after.cpuSeconds - before.cpuSeconds).toFixed(1)} s, RSS peak ${peakRss.toFixed(0)} MiB; ` +
      `API requests per drained pod ${((after.requests - before.requests) / drained).toFixed(1)}`,
  );
  operator.kill('SIGTERM');
  client.close();
} finally {
  await cleanup();
}
