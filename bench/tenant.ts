// Benchmark: BENCH_HOSTS bare-metal hosts (default 1000) in BENCH_RACKS racks
// (default 40), BENCH_CLUSTERS TenantClusters (default 50) of 3 control-plane
// hosts + 5 workers + 1 standby worker, one per rack per role, created at
// once. Prints the time until every cluster is Ready, API requests per
// claimed host, operator CPU and peak RSS, and the time one cluster takes to
// replace a failed host. The hosts are made healthy by writing their status
// directly (the host controller does not run): this measures scheduling, not
// Redfish (bench/baremetal.ts does that).
// The anchor, Airship SIP, reconciles one cluster at a time by design and
// cannot run here (Go, no build); no side-by-side figure.
//
//   node bench/tenant.ts
import type { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

import { benchClusters, operatorFigures, spawnBenchOperator } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { BareMetalHosts, RACK_LABEL } = await import('../src/api/baremetal.ts');
const { TenantClusters } = await import('../src/api/tenant.ts');
const { CustomResourceDefinitions } = await import('../src/runtime/resources.ts');

const HOSTS = Number(process.env.BENCH_HOSTS ?? 1000);
const RACKS = Number(process.env.BENCH_RACKS ?? 40);
const CLUSTERS = Number(process.env.BENCH_CLUSTERS ?? 50);
const METRICS = '127.0.0.1:18483';
const NS = 'default';

type Host = { metadata: { name: string; namespace: string }; status?: unknown };
type Tc = {
  metadata: { name: string };
  status?: {
    conditions?: { type: string; status: string }[];
    hosts?: { Worker?: { name: string; namespace: string; standby: boolean }[] };
  };
};

const { clusters, cleanup } = await benchClusters();
const name = 'bench-tenant';
let operator: ReturnType<typeof spawn> | undefined;

/** Runs `fn` over `items`, `n` at a time. */
async function pool<T>(items: readonly T[], n: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

try {
  await clusters.up({
    name,
    pools: poolsForNodeCount(3),
    timeoutMs: 600_000,
    infraFlags: { 'bare-metal-hosts': `${HOSTS}:racks=${RACKS}` },
  });
  const client = KubeClient.fromKubeConfig(clusters.kubeConfig(name), { qps: 0 });
  // `make install` for this one CRD: the local cluster carries only the hosts' own.
  await client.create(CustomResourceDefinitions, TenantClusters.crd() as never);
  for (let i = 0; ; i++) {
    try {
      await client.list(TenantClusters.type, { namespace: NS });
      break;
    } catch (err) {
      if (i > 100) throw err;
      await sleep(100);
    }
  }
  const hosts = (await client.listAll<Host>(BareMetalHosts.type)).items;
  if (hosts.length !== HOSTS) throw new Error(`expected ${HOSTS} BareMetalHosts, found ${hosts.length}`);
  const healthy = { provisioning: { state: 'available' }, operationalStatus: 'OK', poweredOn: true };
  await pool(hosts, 16, (h) =>
    client.patch(
      BareMetalHosts.type,
      h.metadata.name,
      h.metadata.namespace,
      { status: healthy },
      {
        type: 'merge',
        subresource: 'status',
      },
    ),
  );

  operator = spawnBenchOperator(clusters.kubeconfigPath(name), METRICS, ['--controllers', 'tenantcluster']);
  // Up once it serves metrics.
  let before: Awaited<ReturnType<typeof operatorFigures>> | undefined;
  for (let i = 0; !before; i++) {
    before = await operatorFigures(operator.pid!, METRICS).catch(() => undefined);
    if (!before && i > 120) throw new Error('the operator serves no metrics after 60 s');
    if (!before) await sleep(500);
  }
  const start = performance.now();
  const names = Array.from({ length: CLUSTERS }, (_, i) => `tenant-${i}`);
  const role = (active: number, standby: number) => ({ topologyKey: RACK_LABEL, count: { active, standby } });
  await pool(names, 16, (n) =>
    client.create(
      TenantClusters.type,
      TenantClusters.make(
        { name: n, namespace: NS },
        { nodes: { ControlPlane: role(3, 0), Worker: role(5, 1) } },
      ) as never,
    ),
  );
  const list = async () => (await client.list<Tc>(TenantClusters.type, { namespace: NS })).items;
  const ready = (t: Tc) =>
    t.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  let peakRss = 0;
  let said = -1;
  for (;;) {
    const items = await list();
    peakRss = Math.max(peakRss, (await operatorFigures(operator.pid!, METRICS)).rssMiB);
    const n = items.filter(ready).length;
    if (n !== said) {
      console.error(`  ${n}/${CLUSTERS} Ready after ${((performance.now() - start) / 1000).toFixed(1)} s`);
      said = n;
    }
    if (n === CLUSTERS) break;
    if ((performance.now() - start) / 1000 > 600) throw new Error('not every cluster Ready after 10 min');
    await sleep(250);
  }
  const seconds = (performance.now() - start) / 1000;
  const after = await operatorFigures(operator.pid!, METRICS);
  const claimed = CLUSTERS * 9;
  if (process.env.BENCH_DEBUG) {
    const m = await (await fetch(`http://${METRICS}/metrics`)).text();
    console.error(
      m
        .split('\n')
        .filter((l) => /^(rest_client_requests_total|nodewarden_tenant_)/.test(l))
        .join('\n'),
    );
  }

  // One host fails: the time until its cluster holds a healthy replacement and is Ready again.
  const victimCluster = (await list()).find((t) => t.metadata.name === 'tenant-0')!;
  const victim = victimCluster.status!.hosts!.Worker!.find((h) => !h.standby)!;
  const failAt = performance.now();
  await client.patch(
    BareMetalHosts.type,
    victim.name,
    victim.namespace,
    {
      status: {
        operationalStatus: 'error',
        errorType: 'registration error',
        errorMessage: 'BMC gone (bench)',
      },
    },
    { type: 'merge', subresource: 'status' },
  );
  for (;;) {
    const t = (await list()).find((x) => x.metadata.name === 'tenant-0')!;
    const w = t.status?.hosts?.Worker ?? [];
    if (ready(t) && !w.some((h) => h.name === victim.name) && w.length === 6) break;
    if ((performance.now() - failAt) / 1000 > 120) throw new Error('failed host not replaced in 2 min');
    await sleep(50);
  }
  const replaceMs = performance.now() - failAt;

  console.log(
    `tenant clusters: ${CLUSTERS} TenantClusters (3 control plane + 5 workers + 1 standby, one per rack) ` +
      `on ${HOSTS} hosts in ${RACKS} racks`,
  );
  console.log(
    `  nodewarden:  all Ready in ${seconds.toFixed(1)} s; API requests per claimed host ` +
      `${((after.requests - before.requests) / claimed).toFixed(1)}; operator CPU ` +
      `${(after.cpuSeconds - before.cpuSeconds).toFixed(1)} s, RSS peak ${peakRss.toFixed(0)} MiB; ` +
      `failed host replaced (standby promoted, fresh standby claimed) in ${replaceMs.toFixed(0)} ms`,
  );
  console.log(
    '  anchor:      Airship SIP reconciles one SIPCluster at a time (no concurrency); not runnable here',
  );
  operator.kill('SIGTERM');
  client.close();
} finally {
  operator?.kill('SIGKILL');
  await cleanup();
}
