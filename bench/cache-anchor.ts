// The controller-runtime anchor for bench/cache.ts: the same measurement taken
// of a minimal Go operator (bench/anchor/, controller-runtime) on the same
// cluster in the same run — cache sync time, memory after sync, API requests/s
// at idle, and event-to-reconcile latency of `bench/sent` node stamps.
//
// From bench/cache.ts:   const anchor = await measureAnchor(kubeconfigPath, patchNodes);
// Alone, on a cluster that exists (patches 300 worker-* nodes itself):
//   node bench/cache-anchor.ts --kubeconfig PATH [--duration-idle 20s]
import { execFile, spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/client.ts';
import { Nodes } from '../src/runtime/resources.ts';

export interface AnchorFigures {
  syncSeconds: number;
  /** Go heap after two GCs, once the initial events drained; heapAllocBeforeMiB is the same before the manager existed. */
  heapAllocMiB: number;
  heapInuseMiB: number;
  heapAllocBeforeMiB: number;
  rssMiB: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  samples: number;
  requestsPerSecondIdle: number;
  idleWindowSeconds: number;
  controllerRuntime: string;
  goVersion: string;
}

export interface AnchorOptions {
  /** Idle window over which the anchor counts its API requests (Go duration). Default 20s. */
  durationIdle?: string;
  /** Limit for build + sync + idle window, before READY. Default 20 minutes. */
  readyTimeoutMs?: number;
  /** Wait after patchNodes() for the last events to reach the reconciler. Default 2000 ms, as bench/cache.ts. */
  drainMs?: number;
}

const here = dirname(fileURLToPath(import.meta.url));

/** Builds the anchor if its sources changed (first build: minutes) and returns the binary's path. */
export async function buildAnchor(): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [join(here, 'anchor', 'build.sh')], {
    maxBuffer: 16 * 2 ** 20,
  });
  const path = stdout.trim().split('\n').pop();
  if (!path) throw new Error('bench/anchor/build.sh printed no path');
  return path;
}

/**
 * Runs the controller-runtime anchor against the cluster: it syncs its cache, measures
 * memory and idle API requests, then patchNodes() runs while it records latencies.
 */
export async function measureAnchor(
  kubeconfigPath: string,
  patchNodes: () => Promise<void>,
  opts: AnchorOptions = {},
): Promise<AnchorFigures> {
  const bin = await buildAnchor();
  const args = ['--kubeconfig', kubeconfigPath, '--duration-idle', opts.durationIdle ?? '20s'];
  return measureProcess({ command: bin, args }, patchNodes, opts);
}

/**
 * Runs a process that speaks the anchor's protocol (READY, then REPORT on stdin answered
 * with one JSON line of AnchorFigures): the anchor, or nodewarden's own (bench/cache-operator.ts).
 */
export async function measureProcess(
  run: { name?: string; command: string; args: string[]; env?: NodeJS.ProcessEnv },
  patchNodes: () => Promise<void>,
  opts: AnchorOptions = {},
): Promise<AnchorFigures> {
  const child = spawn(run.command, run.args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(run.env ? { env: run.env } : {}),
  });
  const name = run.name ?? 'cache-anchor';
  child.stdin.on('error', () => {}); // a dead child surfaces through `exited` below
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    stderr = (stderr + d).slice(-4000);
  });
  const exited = new Promise<number | null>((res) => child.once('close', (code) => res(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextLine = async (what: string, timeoutMs: number): Promise<string> => {
    // Promise.race handles the losers' rejections; the abort frees the timer, or it would hold the process.
    const timer = new AbortController();
    const timeout = sleep(timeoutMs, undefined, { signal: timer.signal }).then(
      () => {
        throw new Error(`${name}: no ${what} within ${timeoutMs / 1000} s`);
      },
      () => new Promise<never>(() => {}),
    );
    const gone = exited.then((code) => {
      throw new Error(`${name} exited (${code}) before ${what}: ${stderr.trim()}`);
    });
    const line = lines.next().then((r) => {
      if (r.done) throw new Error(`${name} closed stdout before ${what}: ${stderr.trim()}`);
      return r.value;
    });
    try {
      return await Promise.race([line, gone, timeout]);
    } finally {
      timer.abort();
    }
  };
  try {
    const ready = await nextLine('READY', opts.readyTimeoutMs ?? 20 * 60_000);
    if (ready.trim() !== 'READY') throw new Error(`${name}: expected READY, got ${ready}`);
    await patchNodes();
    await sleep(opts.drainMs ?? 2000);
    child.stdin.write('REPORT\n');
    const report = await nextLine('its report', 60_000);
    await exited;
    return JSON.parse(report) as AnchorFigures;
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }
}

/** One line per figure, in the words bench/cache.ts uses. */
export function formatAnchor(a: AnchorFigures): string {
  return [
    // bench/cache-operator.ts reports the same figures under its own name.
    a.controllerRuntime.startsWith('nodewarden')
      ? `${a.controllerRuntime} (${a.goVersion}):`
      : `controller-runtime ${a.controllerRuntime} anchor (${a.goVersion}):`,
    `  cache sync: ${a.syncSeconds.toFixed(1)} s; heap after GC: ${a.heapAllocMiB.toFixed(0)} MiB allocated` +
      ` (${(a.heapAllocMiB - a.heapAllocBeforeMiB).toFixed(0)} MiB held by the cache), ${a.heapInuseMiB.toFixed(0)} MiB in use;` +
      ` process RSS ${a.rssMiB.toFixed(0)} MiB`,
    `  event-to-reconcile latency over ${a.samples} events: p50 ${a.latencyP50Ms} ms, p99 ${a.latencyP99Ms} ms`,
    `  steady-state API requests: ${a.requestsPerSecondIdle.toFixed(2)} per second (${a.idleWindowSeconds.toFixed(0)} s idle window)`,
  ].join('\n');
}

/** Stamps 300 nodes one at a time, 20 ms apart, as bench/cache.ts does. */
export async function stampNodes(client: KubeClient, names: string[], count = 300): Promise<void> {
  for (let i = 0; i < count; i++) {
    const name = names[i % names.length];
    if (name === undefined) throw new Error('no nodes to stamp');
    await client.patch(
      Nodes,
      name,
      undefined,
      { metadata: { annotations: { 'bench/sent': String(Date.now()) } } },
      { type: 'merge' },
    );
    await sleep(20);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { kubeconfig: { type: 'string' }, 'duration-idle': { type: 'string', default: '20s' } },
  });
  if (!values.kubeconfig) {
    console.error('usage: node bench/cache-anchor.ts --kubeconfig PATH [--duration-idle 20s]');
    process.exit(2);
  }
  const kc = new KubeConfig();
  kc.loadFromFile(values.kubeconfig);
  const client = KubeClient.fromKubeConfig(kc, { qps: 0 });
  try {
    const nodes = await client.listAll<{ metadata?: { name?: string } }>(Nodes);
    const names = nodes.items
      .map((n) => n.metadata?.name ?? '')
      .filter((n) => /^worker-\d+$/.test(n))
      .sort();
    if (names.length === 0) throw new Error('the cluster has no worker-NNN nodes');
    const figures = await measureAnchor(values.kubeconfig, () => stampNodes(client, names), {
      durationIdle: values['duration-idle'],
    });
    console.log(formatAnchor(figures));
    console.log(JSON.stringify(figures));
  } finally {
    client.close();
  }
}
