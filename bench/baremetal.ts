// Benchmark: BENCH_HOSTS physical hosts (default 500) behind the local
// cluster's simulated BMC fleet, registered, inspected and `available` by the
// BareMetalHost controller over Redfish. Prints wall time, API requests per
// host, BMC (Redfish) requests per host, and operator CPU and memory.
// The anchor, metal3's baremetal-operator, drives Ironic, which inspects real
// hardware (minutes per host, by booting an agent); no run of it is possible
// here, and the line says so rather than quoting a figure.
//
//   make bench-baremetal
import { execFile, type spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { benchClusters, operatorFigures, spawnBenchOperator } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { BareMetalHosts } = await import('../src/api/baremetal.ts');

const { VirtualHostPools } = await import('../src/api/virtualhosts.ts');
const { Nodes } = await import('../src/runtime/resources.ts');

const HOSTS = Number(process.env.BENCH_HOSTS ?? 500);
const HYPERVISORS = Number(process.env.BENCH_HYPERVISORS ?? 20);
const VMS_PER_NODE = Number(process.env.BENCH_VMS ?? 8);
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
    pools: poolsForNodeCount(Math.max(3, HYPERVISORS + 3)),
    timeoutMs: 300_000,
    infraFlags: { 'bare-metal-hosts': `${HOSTS}:racks=${RACKS}` },
  });
  const racked = (performance.now() - t0) / 1000;
  // Our CRDs, as make install applies them (the BMC fleet installed metal3's BareMetalHost).
  await promisify(execFile)(clusters.binaries().kubectl, [
    '--kubeconfig',
    clusters.kubeconfigPath(name),
    'apply',
    '--server-side',
    '-f',
    'config/crd/bases/',
  ]);
  await sleep(2000); // Established
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
  operator = spawnBenchOperator(clusters.kubeconfigPath(name), METRICS, [
    '--controllers',
    'baremetalhost,virtualhostpool',
  ]);
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

  // VM hosts: a VirtualHostPool of HYPERVISORS nodes x VMS_PER_NODE VMs, until every VM's host is available.
  const workers = (
    await client.list<{ metadata: { name: string; labels?: Record<string, string> } }>(Nodes)
  ).items
    .filter((n) => !('node-role.kubernetes.io/control-plane' in (n.metadata.labels ?? {})))
    .slice(0, HYPERVISORS);
  for (const n of workers) {
    await client.patch(
      Nodes,
      n.metadata.name,
      undefined,
      { metadata: { labels: { 'bench/hypervisor': 'true' } } },
      { type: 'merge' },
    );
  }
  const vms = workers.length * VMS_PER_NODE;
  const poolBefore = await operatorFigures(operator.pid!, METRICS);
  const poolStart = performance.now();
  await client.create(VirtualHostPools.type, {
    apiVersion: VirtualHostPools.apiVersion,
    kind: 'VirtualHostPool',
    metadata: { name: 'bench', namespace: 'default' },
    spec: {
      nodeSelector: { matchLabels: { 'bench/hypervisor': 'true' } },
      networks: [
        {
          name: 'oam',
          subnet: '10.80.0.0/16',
          type: 'ipv4',
          staticAllocationStart: '10.80.1.1',
          staticAllocationStop: '10.80.9.254',
          dhcpAllocationStart: '10.80.16.0',
          dhcpAllocationStop: '10.80.31.255',
          instanceSubnetBitStep: 4,
        },
      ],
      nodes: [
        {
          name: 'worker',
          count: VMS_PER_NODE,
          cpus: 1,
          memoryMiB: 2048,
          diskGB: 10,
          networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
        },
      ],
      bmcCredentials: { username: 'admin', password: 'bench' },
    },
  } as never);
  let poolPeak = 0;
  for (;;) {
    const c = await count();
    poolPeak = Math.max(poolPeak, (await operatorFigures(operator.pid!, METRICS)).rssMiB);
    if (c.available >= HOSTS + vms) break;
    if ((performance.now() - poolStart) / 1000 > 900)
      throw new Error(`only ${c.available - HOSTS}/${vms} VM hosts available after 15 min`);
    await sleep(500);
  }
  const poolSeconds = (performance.now() - poolStart) / 1000;
  const poolAfter = await operatorFigures(operator.pid!, METRICS);
  console.log(`VM hosts: a VirtualHostPool of ${workers.length} hypervisors x ${VMS_PER_NODE} VMs`);
  console.log(
    `  nodewarden:  ${vms} VMs defined, their hosts registered, inspected and available in ${poolSeconds.toFixed(1)} s; ` +
      `API requests per VM ${((poolAfter.requests - poolBefore.requests) / vms).toFixed(1)}; operator CPU ` +
      `${(poolAfter.cpuSeconds - poolBefore.cpuSeconds).toFixed(1)} s, RSS peak ${poolPeak.toFixed(0)} MiB`,
  );
  console.log(
    "  anchor:      ViNO's own integration test allows 600 s for the CR to be Ready and 3600 s for a BareMetalHost " +
      'to reach ready (libvirt VMs; not runnable here)',
  );
  operator.kill('SIGTERM');
  client.close();
} finally {
  operator?.kill('SIGKILL');
  await cleanup();
}
