// Benchmark: real nodes (kubelet + containerd + kube-proxy in network namespaces), in one run:
//  1. the operator's image (hack/build-image.sh): compressed size; build time cold (no cached
//     production node_modules: a fresh cache folder holding only the Debian base) and warm;
//  2. `cluster up --real-nodes N` until the real nodes are Ready, and the whole `up`: cold (a new
//     cluster) and warm (after `cluster down`);
//  3. memory: each real node's processes (its cgroup <node>/node), the relays (<cluster>/relay),
//     and the operator pod installed by Helm from the image built in 1;
//  4. the drain of a real node with 30 real pods (testapp serve, readinessProbe, preStop hook,
//     terminationGracePeriodSeconds 10, PDB maxUnavailable 1): NodeMaintenance (the in-cluster
//     operator of 3), `kubectl drain`, and medik8s NMO (out of cluster), each on a fresh identical
//     workload on the same node, uncordoned between.
// Figures are printed side by side, never asserted.
//
//   make bench-real-nodes      BENCH_REAL_NODES (default 2)  NMO_BIN (a built NMO; else built here)
//                              BENCH_SECTIONS (default image,up,memory,drain)
import { execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { benchClusters } from './harness.ts';

const { controlPlaneBinaries, REPO_ROOT } = await import('../src/cluster/toolchain.ts');

const run = promisify(execFile);
const NODES = Number(process.env.BENCH_REAL_NODES ?? 2);
const PODS = 30;
const NAME = 'nwbench';
const TARGET = 'real-000';
const OTHER = 'real-001';
const VERSION = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).version as string;
const TESTAPP = `localhost/nodewarden-testapp:${VERSION}`;
const NMO_VERSION = 'v0.21.0';
/** Which parts to measure (image,up,memory,drain); memory and drain need the image built, warm if not measured. */
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? 'image,up,memory,drain').split(','));
const CACHE =
  process.env.NODEWARDEN_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'nodewarden');

const { clusters, cleanup } = await benchClusters();
const work = mkdtempSync(join(tmpdir(), 'nw-bench-real-'));
const kubectlBin = (await controlPlaneBinaries({ quiet: true })).kubectl;
const kubeconfig = () => clusters.kubeconfigPath(NAME);
const k = async (...args: string[]) =>
  (await run(kubectlBin, ['--kubeconfig', kubeconfig(), ...args], { maxBuffer: 1 << 26 })).stdout;
const seconds = (since: number) => (performance.now() - since) / 1000;
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const summary: string[] = [];
const report = (line: string) => {
  console.log(line);
  summary.push(line);
};

/** `nodewarden args…` from source, as a user runs it; throws with its output when it fails. */
async function nodewarden(...args: string[]): Promise<string> {
  const r = await run(join(REPO_ROOT, 'bin/nodewarden'), args, {
    env: { ...process.env, NODEWARDEN_FROM_SOURCE: '1' },
    maxBuffer: 1 << 24,
  });
  return r.stdout + r.stderr;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

async function apply(...objects: object[]): Promise<void> {
  const file = join(work, `apply-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  await k('apply', '-f', file);
}

// ---------------------------------------------------------------- 1. the image
async function buildImage(cacheRoot: string): Promise<{ seconds: number; layers: string }> {
  const t = performance.now();
  const r = await run('bash', [join(REPO_ROOT, 'hack/build-image.sh'), join(work, 'nodewarden.tar')], {
    cwd: REPO_ROOT,
    env: { ...process.env, NODEWARDEN_CACHE: cacheRoot },
    maxBuffer: 1 << 24,
  });
  return {
    seconds: seconds(t),
    layers: /layers .*MiB compressed = [\d.]+ MiB/.exec(r.stdout)?.[0] ?? r.stdout,
  };
}

async function imageFigures(): Promise<void> {
  // Cold as build-image.sh caches: no production node_modules (npm ci again) and a fresh compile;
  // the Debian base (mmdebstrap) is kept, linked from the shared cache, which stays untouched.
  const cold = join(work, 'cache');
  mkdirSync(join(cold, 'image'), { recursive: true });
  for (const base of readdirSync(join(CACHE, 'image')).filter((d) => d.startsWith('base-')))
    symlinkSync(join(CACHE, 'image', base), join(cold, 'image', base));
  const c = await buildImage(cold);
  const w = await buildImage(CACHE);
  report(
    `image: ${w.layers}; archive ${(readFileSync(join(work, 'nodewarden.tar')).length / 2 ** 20).toFixed(1)} MiB`,
  );
  report(
    `image build: cold (npm ci --omit=dev + tsc, base cached) ${c.seconds.toFixed(1)} s, warm ${w.seconds.toFixed(1)} s  [load ${load()}]`,
  );
}

// ---------------------------------------------------------------- 2. up until real nodes Ready
interface NodeJson {
  metadata: { name: string };
  status: { conditions?: { type: string; status: string; lastHeartbeatTime?: string }[] };
}

/** Seconds from `up` to every real node Ready (posted after `up` began), and of the whole `up`. */
async function timedUp(args: string[]): Promise<{ ready: number; up: number }> {
  const t = performance.now();
  const startedAt = Math.floor(Date.now() / 1000) * 1000;
  let upSeconds = 0;
  const up = nodewarden('cluster', 'up', '--name', NAME, ...args, '--timeout', '5m').then(() => {
    upSeconds = seconds(t);
  });
  let failed: unknown;
  up.catch((err) => {
    failed = err;
  });
  const ready = await until(
    `${NODES} real nodes Ready`,
    async () => {
      if (failed) return -1; // `up` failed: stop waiting, throw its error below
      if (!existsSync(kubeconfig())) return undefined;
      const nodes = JSON.parse(await k('get', 'nodes', '-l', 'nodewarden.dev/real=true', '-o', 'json'))
        .items as NodeJson[];
      const fresh = nodes.filter((n) =>
        n.status.conditions?.some(
          (c) =>
            c.type === 'Ready' && c.status === 'True' && Date.parse(c.lastHeartbeatTime ?? '') >= startedAt,
        ),
      );
      return fresh.length === NODES ? seconds(t) : undefined;
    },
    600_000,
  );
  await up;
  return { ready, up: upSeconds };
}

async function upFigures(): Promise<void> {
  const cold = await timedUp(['--nodes', '1', '--real-nodes', String(NODES)]);
  report(
    `up, cold (new cluster, ${NODES} real + 1 kwok node): ${NODES} real nodes Ready ${cold.ready.toFixed(1)} s, whole up ${cold.up.toFixed(1)} s  [load ${load()}]`,
  );
  const d = performance.now();
  await nodewarden('cluster', 'down', '--name', NAME);
  const downSeconds = seconds(d);
  const warm = await timedUp([]);
  report(
    `up, warm (after down in ${downSeconds.toFixed(1)} s): real nodes Ready ${warm.ready.toFixed(1)} s, whole up ${warm.up.toFixed(1)} s  [load ${load()}]`,
  );
  report(
    "anchor: kind's docs give no node-Ready time (only `create cluster --wait`); no anchor measured here",
  );
}

// ---------------------------------------------------------------- 3. memory
const MEMORY_ROOT = '/sys/fs/cgroup/memory';
const rssMiB = (pid: string) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** RSS of the processes in a memory cgroup, summed by command name ("containerd-shim-runc-v2 ×2"). */
function cgroupProcesses(cgroup: string): { total: number; parts: string } {
  const byName = new Map<string, { mib: number; n: number }>();
  for (const pid of readFileSync(join(MEMORY_ROOT, cgroup, 'cgroup.procs'), 'utf8')
    .split('\n')
    .filter(Boolean)) {
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      const name = comm === 'MainThread' ? 'node' : comm; // Node names its main thread so
      const e = byName.get(name) ?? { mib: 0, n: 0 };
      byName.set(name, { mib: e.mib + rssMiB(pid), n: e.n + 1 });
    } catch {
      // exited meanwhile
    }
  }
  const total = [...byName.values()].reduce((a, e) => a + e.mib, 0);
  const parts = [...byName]
    .map(([name, e]) => `${name}${e.n > 1 ? ` ×${e.n}` : ''} ${e.mib.toFixed(0)}`)
    .join(', ');
  return { total, parts };
}

function findCgroup(under: string, leaf: string): string | undefined {
  for (const entry of readdirSync(join(MEMORY_ROOT, under), { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = join(under, entry.name);
    if (entry.name.includes(leaf)) return path;
    const found = findCgroup(path, leaf);
    if (found) return found;
  }
  return undefined;
}

async function installOperator(): Promise<void> {
  await nodewarden('cluster', 'load-image', '--name', NAME, join(work, 'nodewarden.tar'));
  const helm = (await run('hack/build-helm.sh', [], { cwd: REPO_ROOT })).stdout.trim().split('\n').at(-1)!;
  // One replica, on the node that is never drained, so the drains below move only the workload.
  await run(
    helm,
    ['install', 'nodewarden', 'charts/nodewarden', '-n', 'nodewarden-system', '--create-namespace'].concat([
      '--set',
      'replicas=1',
      '--set-string',
      `nodeSelector.kubernetes\\.io/hostname=${OTHER}`,
    ]),
    { cwd: REPO_ROOT, env: { ...process.env, KUBECONFIG: kubeconfig() } },
  );
}

async function memoryFigures(): Promise<void> {
  await installOperator();
  const pod = await until(
    'the operator pod Ready',
    async () => {
      const pods = JSON.parse(await k('get', 'pods', '-n', 'nodewarden-system', '-o', 'json')).items;
      const p = pods[0];
      return p?.status.containerStatuses?.[0]?.ready ? p : undefined;
    },
    300_000,
  );
  await sleep(15_000); // past start-up: informers synced, leader elected
  const cluster = `nodewarden/${NAME}`;
  for (const node of [TARGET, OTHER]) {
    const m = cgroupProcesses(`${cluster}/${node}/node`);
    const pods = (await k('get', 'pods', '-A', '--field-selector', `spec.nodeName=${node}`, '-o', 'name'))
      .split('\n')
      .filter(Boolean).length;
    report(`memory, real node ${node} (${pods} pods): RSS ${m.total.toFixed(0)} MiB (${m.parts})`);
  }
  const relay = cgroupProcesses(`${cluster}/relay`);
  report(
    `memory, the cluster's relays (${cluster}/relay): RSS ${relay.total.toFixed(0)} MiB (${relay.parts})`,
  );
  const id = String(pod.status.containerStatuses[0].containerID).replace('containerd://', '');
  const cg = findCgroup(`${cluster}/${pod.spec.nodeName}`, id);
  if (!cg) report(`memory, operator pod: container ${id} not found under ${cluster}`);
  else {
    const usage = Number(readFileSync(join(MEMORY_ROOT, cg, 'memory.usage_in_bytes'), 'utf8')) / 2 ** 20;
    const stat = readFileSync(join(MEMORY_ROOT, cg, 'memory.stat'), 'utf8');
    const rss = Number(/^total_rss (\d+)/m.exec(stat)?.[1] ?? 0) / 2 ** 20;
    report(
      `memory, operator pod (Helm, 1 replica, idle leader): container VmRSS ${cgroupProcesses(cg).total.toFixed(0)} MiB; cgroup usage ${usage.toFixed(0)} MiB (rss ${rss.toFixed(0)} MiB + cache)`,
    );
  }
}

// ---------------------------------------------------------------- 4. the drains
const workload = (ns: string) => [
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'drainee', namespace: ns },
    spec: {
      replicas: PODS,
      selector: { matchLabels: { app: 'drainee' } },
      template: {
        metadata: { labels: { app: 'drainee' } },
        spec: {
          nodeSelector: { 'nodewarden.dev/real': 'true' },
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: 'web',
              image: TESTAPP,
              imagePullPolicy: 'Never',
              args: ['serve', '--port', '8080'],
              readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
              lifecycle: {
                preStop: {
                  exec: { command: ['/testapp', 'prestop', '--file', '/proof/prestop.log', '--sleep', '1'] },
                },
              },
              volumeMounts: [{ name: 'proof', mountPath: '/proof' }],
            },
          ],
          volumes: [{ name: 'proof', emptyDir: {} }],
        },
      },
    },
  },
  {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: 'drainee', namespace: ns },
    spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'drainee' } } },
  },
];

interface PodJson {
  metadata: { deletionTimestamp?: string };
  spec: { nodeName?: string };
  status: { conditions?: { type: string; status: string }[] };
}
const readyOn = async (ns: string, node: string) =>
  (JSON.parse(await k('get', 'pods', '-n', ns, '-o', 'json')).items as PodJson[]).filter(
    (p) =>
      p.spec.nodeName === node &&
      !p.metadata.deletionTimestamp &&
      p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  ).length;

/** A fresh namespace with the 30 pods Ready on TARGET (OTHER cordoned meanwhile), and OTHER open again. */
async function placeWorkload(ns: string): Promise<void> {
  await k('create', 'namespace', ns);
  await k('cordon', OTHER);
  await apply(...workload(ns));
  await until(
    `${PODS} pods Ready on ${TARGET}`,
    async () => ((await readyOn(ns, TARGET)) === PODS ? true : undefined),
    600_000,
  );
  await k('uncordon', OTHER);
  await sleep(5000);
}

async function finished(ns: string): Promise<void> {
  await k('uncordon', TARGET);
  await k('delete', 'namespace', ns, '--wait', '--timeout', '300s');
}

async function phaseIs(resource: string, name: string, phase: string): Promise<void> {
  await until(
    `${resource} ${name} ${phase}`,
    async () =>
      (await k('get', resource, name, '-o', 'jsonpath={.status.phase}')).trim() === phase ? true : undefined,
    900_000,
  );
}

async function drainWithNodeMaintenance(): Promise<number> {
  const t = performance.now();
  await apply({
    apiVersion: 'maintenance.nodewarden.dev/v1alpha1',
    kind: 'NodeMaintenance',
    metadata: { name: 'bench' },
    spec: { nodeName: TARGET, reason: 'bench' },
  });
  await phaseIs('nodemaintenances.maintenance.nodewarden.dev', 'bench', 'Succeeded');
  const s = seconds(t);
  await k('delete', 'nodemaintenances.maintenance.nodewarden.dev', 'bench');
  await until(
    'uncordoned',
    async () =>
      (await k('get', 'node', TARGET, '-o', 'jsonpath={.spec.unschedulable}')).trim() === ''
        ? true
        : undefined,
    120_000,
  );
  return s;
}

async function drainWithKubectl(): Promise<number> {
  const t = performance.now();
  await k('drain', TARGET, '--ignore-daemonsets', '--delete-emptydir-data');
  return seconds(t);
}

/** NMO built by hack/build-nmo.sh (cached), or NMO_BIN with the CRDs of that build. */
async function nmoBinary(): Promise<{ bin: string; crds: string; patched: boolean }> {
  const r = await run('bash', [join(REPO_ROOT, 'hack/build-nmo.sh'), NMO_VERSION], { maxBuffer: 1 << 24 });
  const dir = r.stdout.trim().split('\n').at(-1)!;
  return {
    bin: process.env.NMO_BIN ?? join(dir, 'nmo'),
    crds: join(dir, 'crd'),
    patched: existsSync(join(dir, 'PATCHED')),
  };
}

async function drainWithNmo(nmo: { bin: string }): Promise<number> {
  const tmp = join(work, 'nmo-tmp');
  const certs = join(tmp, 'k8s-webhook-server', 'serving-certs');
  mkdirSync(certs, { recursive: true });
  await run(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1'].concat([
      '-keyout',
      join(certs, 'tls.key'),
      '-out',
      join(certs, 'tls.crt'),
    ]),
  );
  await k('create', 'namespace', 'nmo-leases').catch(() => '');
  const child = spawn(
    nmo.bin,
    ['--metrics-bind-address', '127.0.0.1:18641', '--health-probe-bind-address', '127.0.0.1:18642'],
    {
      env: { ...process.env, KUBECONFIG: kubeconfig(), TMPDIR: tmp, LEASE_NAMESPACE: 'nmo-leases' },
      stdio: ['ignore', 'ignore', 'ignore'],
    },
  );
  try {
    await until(
      'NMO ready',
      async () => ((await fetch('http://127.0.0.1:18642/readyz')).ok ? true : undefined),
      120_000,
    );
    await sleep(5000);
    const t = performance.now();
    await apply({
      apiVersion: 'nodemaintenance.medik8s.io/v1beta1',
      kind: 'NodeMaintenance',
      metadata: { name: 'bench' },
      spec: { nodeName: TARGET, reason: 'bench' },
    });
    await phaseIs('nodemaintenances.nodemaintenance.medik8s.io', 'bench', 'Succeeded');
    const s = seconds(t);
    await k('delete', 'nodemaintenances.nodemaintenance.medik8s.io', 'bench');
    await sleep(3000);
    return s;
  } finally {
    child.kill('SIGTERM');
  }
}

async function drainFigures(): Promise<void> {
  let nmo: Awaited<ReturnType<typeof nmoBinary>> | undefined;
  let nmoWhy = '';
  try {
    nmo = await nmoBinary();
    await k('apply', '-f', nmo.crds);
  } catch (err) {
    nmoWhy = String((err as Error).message).split('\n')[0]!;
  }
  const contenders: [string, () => Promise<number>][] = [
    ['NodeMaintenance (in-cluster operator, Helm)', drainWithNodeMaintenance],
    ['kubectl drain --ignore-daemonsets --delete-emptydir-data', drainWithKubectl],
  ];
  if (nmo) {
    const peer = nmo;
    const libs = peer.patched ? ', kubectl libs v0.34.1' : '';
    contenders.push([`medik8s NMO ${NMO_VERSION} (out of cluster${libs})`, () => drainWithNmo(peer)]);
  }
  const times: number[] = [];
  for (const [i, [label, drain]] of contenders.entries()) {
    const ns = `drain-${i}`;
    await placeWorkload(ns);
    const s = await drain();
    const left = await readyOn(ns, TARGET);
    const moved = await readyOn(ns, OTHER);
    times.push(s);
    report(
      `drain of ${TARGET}, ${PODS} pods (PDB maxUnavailable 1, preStop sleep 1, grace 10 s): ${label} ${s.toFixed(1)} s` +
        ` (${left} left, ${moved} Ready on ${OTHER} at the end)${i > 0 ? `; NodeMaintenance took ${(times[0]! / s).toFixed(1)}× this` : ''}  [load ${load()}]`,
    );
    await finished(ns);
  }
  if (!nmo) report(`drain: medik8s NMO left out: ${nmoWhy}`);
}

// ---------------------------------------------------------------- the run
try {
  report(`real-nodes bench, ${NODES} real nodes; load at start ${load()} (2 cores)`);
  const cluster = SECTIONS.has('memory') || SECTIONS.has('drain');
  if (SECTIONS.has('image')) await imageFigures();
  else if (cluster) await buildImage(CACHE);
  if (SECTIONS.has('up')) await upFigures();
  else if (cluster)
    await nodewarden('cluster', 'up', '--name', NAME, '--nodes', '1', '--real-nodes', String(NODES));
  if (cluster) await memoryFigures();
  if (SECTIONS.has('drain')) await drainFigures();
} finally {
  await cleanup();
  rmSync(work, { recursive: true, force: true });
}
console.log('\nsummary');
for (const line of summary) console.log(line);
