// Benchmark: BENCH_HOSTS physical hosts (default 500) behind the local
// cluster's simulated BMC fleet, registered, inspected and `available` by the
// BareMetalHost controller over Redfish. Prints wall time, API requests per
// host, BMC (Redfish) requests per host, and operator CPU and memory.
// The anchor, metal3's baremetal-operator, drives Ironic, which inspects real
// hardware (minutes per host, by booting an agent); no run of it is possible
// here, and the line says so rather than quoting a figure.
//
//   make bench-baremetal
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

import { benchClusters, operatorFigures } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { BareMetalHosts } = await import('../src/api/baremetal.ts');

const HOSTS = Number(process.env.BENCH_HOSTS ?? 500);
const RACKS = Number(process.env.BENCH_RACKS ?? 20);
const METRICS = '127.0.0.1:18482';

type Host = { status?: { provisioning?: { state?: string }; errorType?: string } };

const { clusters, cleanup } = await benchClusters();
const name = 'bench-baremetal';
let operator: ReturnType<typeof spawn> | undefined;

try {
  const t0 = performance.now();
  await clusters.up({
    name,
    pools: poolsForNodeCount(3),
    timeoutMs: 300_000,
    infraFlags: { 'bare-metal-hosts': `${HOSTS}:racks=${RACKS}` },
  });
  const racked = (performance.now() - t0) / 1000;
  const client = KubeClient.fromKubeConfig(clusters.kubeConfig(name), { qps: 0 });
  const count = async () => {
    const hosts = (await client.listAll<Host>(BareMetalHosts.type)).items;
    const available = hosts.filter((h) => h.status?.provisioning?.state === 'available').length;
    const errors = hosts.filter((h) => h.status?.errorType).length;
    return { total: hosts.length, available, errors };
  };
  const before0 = await count();
  if (before0.total !== HOSTS) throw new Error(`expected ${HOSTS} BareMetalHosts, found ${before0.total}`);

  const start = performance.now();
  operator = spawn(
    process.execPath,
    [
      'src/cmd/main.ts',
      'operator',
      '--kubeconfig',
      clusters.kubeconfigPath(name),
      '--controllers',
      'baremetalhost',
      '--metrics-bind-address',
      METRICS,
      '--health-probe-bind-address',
      '127.0.0.1:0',
      '--webhook-bind-address',
      '0',
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  // Figures from the operator's start: its own startup (and its first lists) are part of the cost.
  const before = { cpuSeconds: 0, requests: 0 };
  let peakRss = 0;
  let said = -1;
  for (;;) {
    const c = await count();
    const now = await operatorFigures(operator.pid!, METRICS).catch(() => undefined); // not serving yet
    if (now) peakRss = Math.max(peakRss, now.rssMiB);
    if (c.available === HOSTS) break;
    if (c.available !== said && c.available % 100 === 0) {
      console.error(
        `  ${c.available}/${HOSTS} available after ${((performance.now() - start) / 1000).toFixed(0)} s`,
      );
      said = c.available;
    }
    if ((performance.now() - start) / 1000 > 900)
      throw new Error(`only ${c.available}/${HOSTS} available after 15 min`);
    await sleep(500);
  }
  const seconds = (performance.now() - start) / 1000;
  const after = await operatorFigures(operator.pid!, METRICS);
  console.log(
    `bare-metal hosts: ${HOSTS} physical hosts in ${RACKS} racks (cluster up with them: ${racked.toFixed(1)} s)`,
  );
  console.log(
    `  nodewarden:  ${HOSTS} registered, inspected and available in ${seconds.toFixed(1)} s ` +
      `(${((seconds * 1000) / HOSTS).toFixed(0)} ms/host); API requests per host ` +
      `${((after.requests - before.requests) / HOSTS).toFixed(1)}; operator CPU ` +
      `${(after.cpuSeconds - before.cpuSeconds).toFixed(1)} s, RSS peak ${peakRss.toFixed(0)} MiB`,
  );
  console.log(
    '  anchor:      metal3 baremetal-operator drives Ironic, which inspects by booting an agent on each host; ' +
      'it cannot run here (no Ironic, no bootable machines), so there is no side-by-side figure',
  );
  operator.kill('SIGTERM');
  client.close();
} finally {
  operator?.kill('SIGKILL');
  await cleanup();
}
