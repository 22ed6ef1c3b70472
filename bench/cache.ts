// Benchmark: the shared cache at fleet scale on a real local cluster.
// Prints: time to sync and heap held for BENCH_NODES nodes (default 1000) and
// BENCH_PODS pods (default 30000), event-to-reconcile latency p50/p99 at that
// size, and the API requests per second the operator issues at steady state.
//
//   node --expose-gc bench/cache.ts          (make bench-cache)
import { setTimeout as sleep } from 'node:timers/promises';

import { benchClusters } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { mapConcurrently } = await import('../src/runtime/pool.ts');
const { Manager } = await import('../src/runtime/manager.ts');
const { createLogger } = await import('../src/runtime/log.ts');
const { registry } = await import('../src/runtime/metrics.ts');
const R = await import('../src/runtime/resources.ts');

const NODES = Number(process.env.BENCH_NODES ?? 1000);
const PODS = Number(process.env.BENCH_PODS ?? 30000);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const heapMiB = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

const { clusters, cleanup } = await benchClusters();
const name = 'bench-cache';
try {
  let t = performance.now();
  await clusters.up({ name, pools: poolsForNodeCount(NODES), timeoutMs: 600_000 });
  console.log(`cluster with ${NODES} Ready nodes in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const kc = clusters.kubeConfig(name);
  const admin = KubeClient.fromKubeConfig(kc, { qps: 0 });
  await admin.create(R.Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'load' } });
  // Pods are created already bound to nodes (spread evenly), as a DaemonSet controller does:
  // the scheduler on 2 cores manages ~25 pods/s, which would make this benchmark about the scheduler.
  t = performance.now();
  const width = Math.max(3, String(NODES - 1).length);
  await mapConcurrently(
    Array.from({ length: PODS }, (_, i) => i),
    { concurrency: 32 },
    (i) =>
      admin.create(R.Pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `load-${i}`,
          namespace: 'load',
          labels: { app: `load-${i % 30}` },
        },
        spec: {
          nodeName: `worker-${String(i % NODES).padStart(width, '0')}`,
          containers: [{ name: 'c', image: 'example/load:1', resources: { requests: { cpu: '1m' } } }],
        },
      }),
  );
  console.log(`${PODS} pods created in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const deadline = Date.now() + 300_000;
  for (;;) {
    const pods = await admin.listAll<{ status?: { phase?: string } }>(R.Pods, { namespace: 'load' });
    const n = pods.items.filter((p) => p.status?.phase === 'Running').length;
    process.stderr.write(`\r${n}/${PODS} pods Running`);
    if (n >= PODS || Date.now() > deadline) {
      console.log(`\n${n}/${PODS} pods Running after ${((performance.now() - t) / 1000).toFixed(1)} s`);
      break;
    }
    await sleep(5000);
  }

  // --- the operator's side: one manager caching every node and pod.
  const before = heapMiB();
  const mgr = new Manager({ kubeConfig: kc, log: createLogger({ level: 'silent' }) });
  const latencies: number[] = [];
  mgr
    .controller('latency')
    .for(R.Nodes)
    .watches(R.Pods, () => [])
    .withWorkers(4)
    .complete(async (req) => {
      const node = mgr.cache.get(R.Nodes, req.name);
      const sent = Number(node?.metadata?.annotations?.['bench/sent'] ?? 0);
      if (sent > 0) latencies.push(Date.now() - sent);
    });
  const stop = new AbortController();
  t = performance.now();
  const running = mgr.start(stop.signal);
  await mgr.cache.waitForSync();
  const syncSeconds = (performance.now() - t) / 1000;
  await sleep(3000); // the initial adds drain through the controller
  const held = heapMiB() - before;
  console.log(
    `cache sync of ${NODES} nodes + ${PODS} pods: ${syncSeconds.toFixed(1)} s; heap held: ${held.toFixed(0)} MiB; process RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
  );

  // Event-to-reconcile latency: annotate nodes one at a time; the reconcile reads the stamp from the cache.
  latencies.length = 0;
  for (let i = 0; i < 300; i++) {
    await admin.patch(
      R.Nodes,
      `worker-${String(i % NODES).padStart(Math.max(3, String(NODES - 1).length), '0')}`,
      undefined,
      { metadata: { annotations: { 'bench/sent': String(Date.now()) } } },
      { type: 'merge' },
    );
    await sleep(20);
  }
  await sleep(2000);
  const sorted = [...latencies].sort((a, b) => a - b);
  const pct = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
  console.log(
    `event-to-reconcile latency over ${sorted.length} events: p50 ${pct(50)} ms, p99 ${pct(99)} ms`,
  );

  // Steady state: count the operator's API requests over an idle window.
  const count = async () => {
    const m = await registry.getSingleMetric('rest_client_requests_total')?.get();
    return m?.values.reduce((a, v) => a + v.value, 0) ?? 0;
  };
  const c0 = await count();
  await sleep(20_000);
  const c1 = await count();
  console.log(`steady-state API requests: ${((c1 - c0) / 20).toFixed(2)} per second (20 s idle window)`);
  stop.abort();
  await running;

  // --- the anchor: a controller-runtime operator, measured the same way on the same cluster.
  const { measureAnchor, formatAnchor, stampNodes } = await import('./cache-anchor.ts');
  const workers = Array.from({ length: NODES }, (_, i) => `worker-${String(i).padStart(width, '0')}`);
  const anchor = await measureAnchor(clusters.kubeconfigPath(name), () => stampNodes(admin, workers));
  console.log(formatAnchor(anchor));
  const goHeld = anchor.heapAllocMiB - anchor.heapAllocBeforeMiB;
  console.log(
    `vs controller-runtime: heap held ${(held / goHeld).toFixed(2)}x (goal <= 1.5x); ` +
      `latency p50 ${pct(50)} vs ${anchor.latencyP50Ms} ms, p99 ${pct(99)} vs ${anchor.latencyP99Ms} ms`,
  );
  admin.close();
} finally {
  await cleanup();
}
