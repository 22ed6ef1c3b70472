// The nodewarden side of bench/cache.ts, in a process of its own as the
// controller-runtime anchor (bench/anchor/main.go) is, and speaking its protocol:
// a manager caching every node and pod with one controller reading `bench/sent`
// node stamps syncs, settles, measures heap and RSS and its API requests over an
// idle window, prints READY, records latencies while the driver stamps nodes, and
// on the stdin line REPORT prints one JSON line (AnchorFigures) and exits.
//
// Its own process, so that RSS is an operator's, not the bench's (client-node, the
// 30,000 pod creations). bench/cache.ts runs it as bin/nodewarden runs the operator:
// the compiled runtime from dist/ (type stripping alone adds ~17 MiB) and the same
// V8 and malloc settings (operatorNode below).
//
//   node [flags] bench/cache-operator.ts RUNTIME_DIR KUBECONFIG [IDLE_SECONDS]
//   RUNTIME_DIR: dist/ (built) or src/, whichever the driver chose; this file imports
//   nothing else, so that a stripped copy of it runs from anywhere.
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

type ManagerModule = typeof import('../src/runtime/manager.ts');
type LogModule = typeof import('../src/runtime/log.ts');
type KubeconfigModule = typeof import('../src/runtime/kubeconfig.ts');
type ResourcesModule = typeof import('../src/runtime/resources.ts');
type MetricsModule = typeof import('../src/runtime/metrics.ts');

/** How bin/nodewarden starts the operator (keep the two the same; see its comments). */
export const operatorNode = {
  flags: ['--max-semi-space-size=1', '--no-opt', '--no-maglev', '--expose-gc'],
  env: { MALLOC_ARENA_MAX: '2' },
};

async function main(runtimeDir: string, kubeconfig: string, idleSeconds: number): Promise<void> {
  const ext = runtimeDir.endsWith('src') || runtimeDir.endsWith('src/') ? 'ts' : 'js';
  const load = (path: string) => import(`${runtimeDir}/runtime/${path}.${ext}`);
  const { Manager } = (await load('manager')) as ManagerModule;
  const { createLogger } = (await load('log')) as LogModule;
  const { KubeConfig } = (await load('kubeconfig')) as KubeconfigModule;
  const R = (await load('resources')) as ResourcesModule;
  const { registry } = (await load('metrics')) as MetricsModule;

  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const heapMiB = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed / 2 ** 20;
  };
  const requests = async () => {
    const m = await registry.getSingleMetric('rest_client_requests_total')?.get();
    return m?.values.reduce((a, v) => a + v.value, 0) ?? 0;
  };

  const before = heapMiB();
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const mgr = new Manager({ kubeConfig: kc, log: createLogger({ level: 'silent' }) });
  // As the anchor: stamps sent before READY are ignored, and each stamp counts once per node
  // (a node's later status updates reconcile it again with the same stamp).
  const latencies: number[] = [];
  const seen = new Map<string, number>();
  let from = 0;
  mgr
    .controller('latency')
    .for(R.Nodes)
    .watches(R.Pods, () => [])
    .withWorkers(4)
    .complete(async (req) => {
      const node = mgr.cache.get(R.Nodes, req.name);
      const sent = Number(node?.metadata?.annotations?.['bench/sent'] ?? 0);
      if (from === 0 || sent < from || seen.get(req.name) === sent) return;
      seen.set(req.name, sent);
      latencies.push(Date.now() - sent);
    });
  const stop = new AbortController();
  const t0 = performance.now();
  const running = mgr.start(stop.signal);
  await mgr.cache.waitForSync();
  const syncSeconds = (performance.now() - t0) / 1000;
  await sleep(3000); // the initial adds drain through the controller, as the anchor's settle
  const heapAllocMiB = heapMiB();
  const usage = process.memoryUsage();
  const c0 = await requests();
  const t1 = performance.now();
  await sleep(idleSeconds * 1000);
  const idleWindowSeconds = (performance.now() - t1) / 1000;
  const requestsPerSecondIdle = ((await requests()) - c0) / idleWindowSeconds;

  from = Date.now();
  console.log('READY');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() !== 'REPORT') continue;
    const sorted = [...latencies].sort((a, b) => a - b);
    const pct = (p: number) =>
      sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
    console.log(
      JSON.stringify({
        syncSeconds,
        heapAllocMiB,
        heapInuseMiB: usage.heapTotal / 2 ** 20,
        heapAllocBeforeMiB: before,
        rssMiB: usage.rss / 2 ** 20,
        latencyP50Ms: pct(50),
        latencyP99Ms: pct(99),
        samples: sorted.length,
        requestsPerSecondIdle,
        idleWindowSeconds,
        controllerRuntime: `nodewarden runtime (${ext === 'js' ? 'dist' : 'src'})`,
        goVersion: `node ${process.versions.node}`,
      }),
    );
    stop.abort();
    await running;
    process.exit(0);
  }
  console.error('stdin closed before REPORT');
  process.exit(1);
}

const [runtimeDir, kubeconfig, idle] = process.argv.slice(2);
if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('cache-operator.mjs')) {
  if (!runtimeDir || !kubeconfig) {
    console.error('usage: node bench/cache-operator.ts RUNTIME_DIR KUBECONFIG [IDLE_SECONDS]');
    process.exit(2);
  }
  await main(runtimeDir, kubeconfig, Number(idle ?? 20));
}
