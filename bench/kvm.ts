// Benchmark: workload clusters in VMs (KVMCluster) on a local cluster with
// its simulated hypervisor. Two figures, as issue #13 asks:
//  1. BENCH_KVM_CLUSTERS (default 5) clusters of 1 master + 3 workers created
//     at once: time until every one is Created (each VM a Ready node of its
//     own real control plane), and the memory the whole machine spent on it
//     (MemTotal − MemAvailable, before and after) with the operator's and
//     the hypervisor's RSS;
//  2. a release upgrade of a 1 master + BENCH_KVM_WORKERS (default 10) cluster
//     with a 5 s VM boot delay: wall time, time per node, and drain time per
//     node from the operator's own histogram.
// The anchor, giantswarm kvm-operator, needs KVM and its Go build and cannot
// run here; its fixed waits are printed beside ours instead (readiness probe
// 100 s initial delay per VM, preStop polling every 5 s), from its code.
//
//   node bench/kvm.ts
import type { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

import { benchClusters, operatorFigures, spawnBenchOperator } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { KVMClusters } = await import('../src/api/kvm.ts');
const { CustomResourceDefinitions } = await import('../src/runtime/resources.ts');
const { hypervisorRequest } = await import('../src/cluster/infra/hypervisor/api.ts');
const { consolePaths, HYPERVISOR_SIMULATOR } = await import('../src/cluster/infra/hypervisor/protocol.ts');
const { findEndpoint } = await import('../src/cluster/infra/kit/discovery.ts');
const { infraDir } = await import('../src/cluster/local-cluster.ts');

const CLUSTERS = Number(process.env.BENCH_KVM_CLUSTERS ?? 5);
const WORKERS = Number(process.env.BENCH_KVM_WORKERS ?? 10);
const METRICS = '127.0.0.1:18493';
const NS = 'default';
const RELEASE = { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' };
const NEXT = { version: '20.2.0', kubernetesVersion: 'v1.37.2', osVersion: '4230.2.1' };

type Kc = {
  metadata: { name: string };
  status?: {
    conditions?: { type: string; status: string }[];
    readyNodes?: number;
    versions?: { release: string }[];
  };
};

const machineUsedMiB = () => {
  const m = readFileSync('/proc/meminfo', 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(m)?.[1] ?? 0);
  return (kb('MemTotal') - kb('MemAvailable')) / 1024;
};
const rssMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

function spec(id: number, workers: number, vni: number) {
  return {
    masters: [{ id: 'm1', cpus: 1, memory: '1G' }],
    workers: Array.from({ length: workers }, (_, i) => ({ id: `w${i + 1}`, cpus: 1, memory: '1G' })),
    release: RELEASE,
    network: { vni },
    api: { domain: `api.b${id}.example.com` },
    drain: { timeout: '5m' },
  };
}

const { clusters, cleanup } = await benchClusters();
const name = 'bench-kvm';
let operator: ReturnType<typeof spawn> | undefined;

try {
  await clusters.up({ name, pools: poolsForNodeCount(Math.max(12, WORKERS + 2)), timeoutMs: 600_000 });
  const client = KubeClient.fromKubeConfig(clusters.kubeConfig(name), { qps: 0 });
  await client.create(CustomResourceDefinitions, KVMClusters.crd() as never);
  for (let i = 0; ; i++) {
    try {
      await client.list(KVMClusters.type, { namespace: NS });
      break;
    } catch (err) {
      if (i > 100) throw err;
      await sleep(100);
    }
  }
  const hv = await findEndpoint(client, HYPERVISOR_SIMULATOR);
  if (!hv) throw new Error('the bench cluster has no simulated hypervisor');
  const hvPid = Number(readFileSync(`${infraDir(name, 'hypervisor')}/hypervisor.pid`, 'utf8').trim() || 0);
  operator = spawnBenchOperator(clusters.kubeconfigPath(name), METRICS, [
    '--controllers',
    'kvmcluster,kvm-vm-drain',
  ]);
  await sleep(2000);

  const all = async () => (await client.list<Kc>(KVMClusters.type, { namespace: NS })).items;
  const cond = (k: Kc, t: string) => k.status?.conditions?.find((c) => c.type === t)?.status === 'True';

  // 1. Clusters created at once.
  const memBefore = machineUsedMiB();
  const t0 = Date.now();
  for (let i = 0; i < CLUSTERS; i++) {
    await client.create(
      KVMClusters.type,
      KVMClusters.make({ name: `b${i}`, namespace: NS }, spec(i, 3, 100 + i)) as never,
    );
  }
  let peakOperator = 0;
  for (;;) {
    peakOperator = Math.max(peakOperator, rssMiB(operator.pid!));
    const items = await all();
    if (items.length === CLUSTERS && items.every((k) => cond(k, 'Created') && k.status?.readyNodes === 4))
      break;
    if (Date.now() - t0 > 600_000) throw new Error('clusters not Created within 10 minutes');
    await sleep(250);
  }
  const createdS = (Date.now() - t0) / 1000;
  const memAfter = machineUsedMiB();
  const hvRss = hvPid ? rssMiB(hvPid) : Number.NaN;

  // Out of the way before the upgrade: deletion time too.
  const td = Date.now();
  for (let i = 0; i < CLUSTERS; i++) await client.delete(KVMClusters.type, `b${i}`, NS);
  while ((await all()).length > 0) {
    if (Date.now() - td > 600_000) throw new Error('clusters not deleted within 10 minutes');
    await sleep(250);
  }
  const deletedS = (Date.now() - td) / 1000;

  // 2. A 1 + WORKERS cluster upgraded with a 5 s boot delay.
  await client.create(
    KVMClusters.type,
    KVMClusters.make({ name: 'up', namespace: NS }, spec(99, WORKERS, 999)) as never,
  );
  const nodes = 1 + WORKERS;
  for (;;) {
    const k = (await all()).find((x) => x.metadata.name === 'up');
    if (k && cond(k, 'Created') && k.status?.readyNodes === nodes) break;
    await sleep(250);
  }
  await hypervisorRequest(hv.endpoint, 'PUT', consolePaths.settings, { bootDelayMs: 5000 });
  const before = await operatorFigures(operator.pid!, METRICS);
  const drainBefore = await drainHistogram();
  const tu = Date.now();
  await client.patch(KVMClusters.type, 'up', NS, { spec: { release: NEXT } }, { type: 'merge' });
  for (;;) {
    const k = (await all()).find((x) => x.metadata.name === 'up');
    if (k?.status?.versions?.at(-1)?.release === NEXT.version && cond(k, 'Updated')) break;
    if (Date.now() - tu > 1_800_000) throw new Error('upgrade not done within 30 minutes');
    await sleep(250);
  }
  const upgradeS = (Date.now() - tu) / 1000;
  const after = await operatorFigures(operator.pid!, METRICS);
  const drainAfter = await drainHistogram();
  const drains = drainAfter.count - drainBefore.count;
  const drainMean = drains > 0 ? (drainAfter.sum - drainBefore.sum) / drains : Number.NaN;

  const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  console.log(`\nKVMCluster benchmark (machine: ${(await import('node:os')).cpus().length} cores)`);
  console.log('| what | nodewarden | anchor (kvm-operator, from its code) |');
  console.log('| --- | --- | --- |');
  console.log(
    `| ${CLUSTERS} clusters of 1+3 created at once, all Created | ${f(createdS)} s | each VM Ready ≥ 100 s (readiness initialDelaySeconds) |`,
  );
  console.log(
    `| machine memory for them (MemTotal − MemAvailable) | +${f(memAfter - memBefore, 0)} MiB | - |`,
  );
  console.log(
    `| operator peak RSS / hypervisor RSS | ${f(peakOperator, 0)} / ${f(hvRss, 0)} MiB | 250 Mi limit (its chart) |`,
  );
  console.log(`| ${CLUSTERS} clusters deleted | ${f(deletedS)} s | - |`);
  console.log(`| upgrade of 1+${WORKERS} (boot 5 s), wall | ${f(upgradeS)} s | - |`);
  console.log(`| per node | ${f(upgradeS / nodes)} s | ≥ 100 s readiness delay + boot + drain |`);
  console.log(`| drain per node (mean of ${drains}) | ${f(drainMean, 2)} s | preStop polls every 5 s |`);
  console.log(`| operator API requests during the upgrade | ${after.requests - before.requests} | - |`);
} finally {
  operator?.kill('SIGTERM');
  await cleanup();
}

async function drainHistogram(): Promise<{ sum: number; count: number }> {
  const text = await (await fetch(`http://${METRICS}/metrics`)).text();
  const sum = Number(/^nodewarden_kvm_drain_seconds_sum (\S+)/m.exec(text)?.[1] ?? 0);
  const count = Number(/^nodewarden_kvm_drain_seconds_count (\S+)/m.exec(text)?.[1] ?? 0);
  return { sum, count };
}
