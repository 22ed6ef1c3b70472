// Benchmark: a VirtualHostPool of 1 node × BENCH_VMS small VMs (default 10;
// 1 vCPU, 256 MiB, a 2 GB disk) on each backend, side by side: the simulated
// BMC fleet, and real libvirt domains (QEMU; KVM where a kernel boots on it,
// else TCG) behind the VM host agent that `cluster up --vm-hosts` starts for
// the node. Prints the time from the pool's creation until every VM's host is
// `available`, and until every VM runs (online: true), the memory per VM
// (QEMU's resident set; the fleet's VMs are records in one process), and what
// the VM host costs besides (the agent, libvirtd). Needs root and libvirt.
//
//   make bench-vmhosts-libvirt
import { execFile, type spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { benchClusters, operatorFigures, spawnBenchOperator } from './harness.ts';

const { parsePools } = await import('../src/cluster/fleet.ts');
const { infraDir } = await import('../src/cluster/control-plane.ts');
const { agentOf, VM_HOSTS_FLAG, vmHostsAddon } = await import('../src/cluster/infra/vm-hosts/addon.ts');
const { libvirtdMissing } = await import('../src/baremetal/virtualhosts/hypervisors/libvirt/libvirtd.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { BareMetalHosts } = await import('../src/api/baremetal.ts');
const { VirtualHostPools } = await import('../src/api/virtualhosts.ts');
const { POOL_LABEL } = await import('../src/baremetal/virtualhosts/objects.ts');
const { Nodes } = await import('../src/runtime/resources.ts');

const VMS = Number(process.env.BENCH_VMS ?? 10);
const MEMORY_MIB = 256;
const METRICS = '127.0.0.1:18483';
const NAME = 'bench-vmhosts';
const LIBVIRT_NODE = 'hv-000';
const SIMULATED_NODE = 'hv-001';
const TIMEOUT_S = 900;

const missing = await libvirtdMissing();
if (missing) {
  console.log(`VM hosts on libvirt: not run here: ${missing}`);
  process.exit(0);
}

type Host = {
  metadata: { name: string };
  status?: { provisioning?: { state?: string }; poweredOn?: boolean };
};
interface Figures {
  available: number;
  running: number;
  perVmMiB?: number;
  hostMiB?: number;
  operatorRssMiB: number;
}

/** Resident MiB of processes whose command line names a path under `dir`, split into QEMU guests and the rest. */
function residentUnder(dir: string): { guests: number[]; rest: number } {
  const guests: number[] = [];
  let rest = 0;
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (!cmd.includes(`${dir}/`)) continue;
      const kib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
      if (cmd.includes('qemu-system')) guests.push(kib / 1024);
      else rest += kib / 1024;
    } catch {
      // gone meanwhile
    }
  }
  return { guests, rest };
}

const { clusters, cleanup } = await benchClusters();
let operator: ReturnType<typeof spawn> | undefined;
try {
  const t0 = performance.now();
  await clusters.up({
    name: NAME,
    pools: parsePools('hv=2'),
    timeoutMs: 300_000,
    infraFlags: { [VM_HOSTS_FLAG]: LIBVIRT_NODE },
  });
  console.error(
    `cluster up with a VM host on ${LIBVIRT_NODE}: ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  for (const dir of ['config/crd/bases/', 'config/crd/ecosystem/metal3.io_baremetalhosts.yaml'])
    await promisify(execFile)(clusters.binaries().kubectl, [
      ...[
        '--kubeconfig',
        clusters.kubeconfigPath(NAME),
        'apply',
        '--server-side',
        '--force-conflicts',
        '-f',
        dir,
      ],
    ]);
  await sleep(2000); // Established
  const client = KubeClient.fromKubeConfig(clusters.kubeConfig(NAME), { qps: 0 });
  const vmHost = agentOf({ dir: infraDir(NAME, vmHostsAddon.name) }, LIBVIRT_NODE);

  async function runPool(backend: 'simulated' | 'libvirt', node: string): Promise<Figures> {
    operator = spawnBenchOperator(clusters.kubeconfigPath(NAME), METRICS, [
      ...['--controllers', 'baremetalhost,virtualhostpool', '--vm-hypervisors', backend],
      ...['--baremetal-resync', '5s'],
    ]);
    const label = `bench/${backend}`;
    await client.patch(
      Nodes,
      node,
      undefined,
      { metadata: { labels: { [label]: 'true' } } },
      { type: 'merge' },
    );
    const pool = `bench-${backend}`;
    const start = performance.now();
    await client.create(VirtualHostPools.type, poolObject(pool, label));
    const hosts = async () =>
      (
        await client.list<Host>(BareMetalHosts.type, {
          namespace: 'default',
          labelSelector: `${POOL_LABEL}=${pool}`,
        })
      ).items;
    let available = 0;
    let peak = 0;
    for (;;) {
      const hs = await hosts();
      const figures = await operatorFigures(operator.pid!, METRICS).catch(() => undefined);
      peak = Math.max(peak, figures?.rssMiB ?? 0);
      const ready = hs.filter((h) => h.status?.provisioning?.state === 'available');
      if (!available && hs.length === VMS && ready.length === VMS)
        available = (performance.now() - start) / 1000;
      if (available && ready.every((h) => h.status?.poweredOn === true)) break;
      if ((performance.now() - start) / 1000 > TIMEOUT_S)
        throw new Error(`${backend}: ${ready.length}/${VMS} available after ${TIMEOUT_S} s`);
      await sleep(250);
    }
    const running = (performance.now() - start) / 1000;
    const memory = backend === 'libvirt' ? residentUnder(vmHost.state) : undefined;
    await client.delete(VirtualHostPools.type, pool, 'default');
    for (let i = 0; i < 600 && (await client.list(VirtualHostPools.type)).items.length > 0; i++)
      await sleep(500);
    operator.kill('SIGTERM');
    await new Promise((r) => operator!.once('exit', r));
    operator = undefined;
    return {
      available,
      running,
      operatorRssMiB: peak,
      ...(memory
        ? {
            perVmMiB: memory.guests.reduce((a, b) => a + b, 0) / Math.max(memory.guests.length, 1),
            hostMiB: memory.rest,
          }
        : {}),
    };
  }

  const simulated = await runPool('simulated', SIMULATED_NODE);
  const libvirt = await runPool('libvirt', LIBVIRT_NODE);
  const accel = /guests: (kvm|qemu)/.exec(readFileSync(vmHost.proc.logFile, 'utf8'))?.[1] ?? '?';
  console.log(`VM hosts: a VirtualHostPool of 1 node x ${VMS} VMs (1 vCPU, ${MEMORY_MIB} MiB, 2 GB disk)`);
  console.log(
    `  simulated fleet:  all available in ${simulated.available.toFixed(1)} s, all on in ${simulated.running.toFixed(1)} s; ` +
      `a VM is a record in the fleet's process; operator RSS peak ${simulated.operatorRssMiB.toFixed(0)} MiB`,
  );
  console.log(
    `  libvirt (${accel === 'kvm' ? 'KVM' : 'QEMU TCG'}): all available in ${libvirt.available.toFixed(1)} s, all running in ${libvirt.running.toFixed(1)} s; ` +
      `QEMU resident ${libvirt.perVmMiB?.toFixed(0)} MiB per VM (no OS booted); agent + libvirtd + virtlogd ` +
      `${libvirt.hostMiB?.toFixed(0)} MiB; operator RSS peak ${libvirt.operatorRssMiB.toFixed(0)} MiB`,
  );
  client.close();
} finally {
  operator?.kill('SIGKILL');
  await cleanup();
}

function poolObject(name: string, label: string) {
  return {
    apiVersion: VirtualHostPools.apiVersion,
    kind: 'VirtualHostPool',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeSelector: { matchLabels: { [label]: 'true' } },
      networks: [
        {
          name: 'oam',
          subnet: '10.81.0.0/16',
          staticAllocationStart: '10.81.1.1',
          staticAllocationStop: '10.81.9.254',
          dhcpAllocationStart: '10.81.16.0',
          dhcpAllocationStop: '10.81.31.255',
          instanceSubnetBitStep: 4,
        },
      ],
      nodes: [
        {
          name: 'worker',
          count: VMS,
          cpus: 1,
          memoryMiB: MEMORY_MIB,
          diskGB: 2,
          networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
        },
      ],
      bmcCredentials: { username: 'admin', password: 'bench' },
    },
  } as never;
}
