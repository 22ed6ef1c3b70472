// Benchmark: the shared cache at fleet scale on a real local cluster.
// Prints: time to sync, heap held and process RSS for BENCH_NODES nodes (default
// 1000) and BENCH_PODS pods (default 30000), event-to-reconcile latency p50/p99 at
// that size, and the API requests per second the operator issues at steady state;
// nodewarden's operator (bench/cache-operator.ts) and controller-runtime's
// (bench/anchor/) each in a process of its own, on the same cluster.
//
//   node --expose-gc bench/cache.ts          (make bench-cache)
import { readFileSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type AnchorFigures,
  formatAnchor,
  measureAnchor,
  measureProcess,
  stampNodes,
} from './cache-anchor.ts';
import { operatorNode } from './cache-operator.ts';
import { benchClusters } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { mapConcurrently } = await import('../src/runtime/pool.ts');
const { builtTwin } = await import('../src/cluster/infra/kit/process.ts');
const R = await import('../src/runtime/resources.ts');

const NODES = Number(process.env.BENCH_NODES ?? 1000);
const PODS = Number(process.env.BENCH_PODS ?? 30000);
const ROOT = join(import.meta.dirname, '..');

/**
 * bench/cache-operator.ts as the operator runs: on the compiled runtime when dist/ is up to
 * date (else src/, and Node's type stripping is in its figures), with bin/nodewarden's flags.
 * Its types are stripped here, into the state folder, so that the process itself runs plain JS.
 */
async function nodewardenOperator(kubeconfig: string) {
  const built = builtTwin(join(ROOT, 'src', 'runtime', 'manager.ts'));
  const runtimeDir = built ? join(ROOT, 'dist') : join(ROOT, 'src');
  const script = join(process.env.NODEWARDEN_STATE_DIR!, 'cache-operator.mjs');
  const source = readFileSync(join(import.meta.dirname, 'cache-operator.ts'), 'utf8');
  writeFileSync(script, stripTypeScriptTypes(source));
  return {
    name: 'cache-operator',
    command: process.execPath,
    args: [...operatorNode.flags, script, runtimeDir, kubeconfig, '20'],
    env: { ...process.env, ...operatorNode.env },
  };
}

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

  // --- the operator's side: one manager caching every node and pod, in its own process
  // (bench/cache-operator.ts), then the anchor, a controller-runtime operator, the same way.
  const workers = Array.from({ length: NODES }, (_, i) => `worker-${String(i).padStart(width, '0')}`);
  const kubeconfig = clusters.kubeconfigPath(name);
  const ours = await measureProcess(await nodewardenOperator(kubeconfig), () => stampNodes(admin, workers));
  console.log(formatAnchor(ours));
  const anchor = await measureAnchor(kubeconfig, () => stampNodes(admin, workers));
  console.log(formatAnchor(anchor));
  const held = (f: AnchorFigures) => f.heapAllocMiB - f.heapAllocBeforeMiB;
  console.log(
    `vs controller-runtime: process RSS ${ours.rssMiB.toFixed(0)} vs ${anchor.rssMiB.toFixed(0)} MiB, ` +
      `${(ours.rssMiB / anchor.rssMiB).toFixed(2)}x (goal <= 1.5x); heap held by the cache ` +
      `${held(ours).toFixed(0)} vs ${held(anchor).toFixed(0)} MiB, ${(held(ours) / held(anchor)).toFixed(2)}x; ` +
      `latency p50 ${ours.latencyP50Ms} vs ${anchor.latencyP50Ms} ms, p99 ${ours.latencyP99Ms} vs ${anchor.latencyP99Ms} ms; ` +
      `idle requests/s ${ours.requestsPerSecondIdle.toFixed(2)} vs ${anchor.requestsPerSecondIdle.toFixed(2)}`,
  );
  admin.close();
} finally {
  await cleanup();
}
