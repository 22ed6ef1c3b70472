// Benchmark: a rolling upgrade of BENCH_NODES worker nodes (default 100) in the
// local cluster's simulated cloud, boot delay BENCH_BOOT_DELAY_MS (default 5000),
// at each surge in BENCH_SURGES (default "1,10"; 1 is the anchor's fixed budget).
// Prints wall time, API requests per replaced node, and operator CPU and memory.
//
//   make bench-upgrade
import { execFile, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { benchClusters, operatorFigures } from './harness.ts';

const { poolsForNodeCount } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { NodeVersions, ScalingGroups } = await import('../src/api/upgrade.ts');
const { simulatedCloudEndpoint } = await import('../src/cluster/infra/cloud/discovery.ts');
const { rolloutDone } = await import('../src/upgrade/format.ts');
const { cloudRequest } = await import('../src/cluster/infra/cloud/api.ts');
const R = await import('../src/runtime/resources.ts');

const NODES = Number(process.env.BENCH_NODES ?? 100);
const BOOT_DELAY_MS = Number(process.env.BENCH_BOOT_DELAY_MS ?? 5000);
const SURGES = (process.env.BENCH_SURGES ?? '1,10').split(',').map(Number);
const METRICS = '127.0.0.1:18481';

type Obj = import('../src/runtime/resources.ts').K8sObject & {
  status?: {
    observedGeneration?: number;
    conditions?: { type: string; status: string }[];
    replaced?: number;
  };
};

const { clusters, cleanup } = await benchClusters();
const name = 'bench-upgrade';
let operator: ReturnType<typeof spawn> | undefined;

try {
  await clusters.up({ name, pools: poolsForNodeCount(3), timeoutMs: 300_000 });
  const kubeconfig = clusters.kubeconfigPath(name);
  const client = KubeClient.fromKubeConfig(clusters.kubeConfig(name), { qps: 0 });
  await promisify(execFile)(clusters.binaries().kubectl, [
    '--kubeconfig',
    kubeconfig,
    'apply',
    '-f',
    'config/crd/bases/',
  ]);
  await sleep(2000); // the CRDs are Established
  const found = await simulatedCloudEndpoint(client);
  if (!found) throw new Error('the local cluster has no simulated cloud');
  const cloud = (method: string, path: string, body?: unknown) =>
    cloudRequest(found.endpoint, method, path, body);
  await cloud('POST', '/settings', { bootDelayMs: 1000 }); // fleets come up fast; the rollout uses BOOT_DELAY_MS

  operator = spawn(
    process.execPath,
    [
      'src/cmd/main.ts',
      'operator',
      '--kubeconfig',
      kubeconfig,
      '--cloud-provider',
      'simulated',
      '--controllers',
      'nodemaintenance,nodeversion,scalinggroup,pendingnode',
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
  await sleep(3000);

  for (const surge of SURGES) {
    const group = `s${surge}`;
    await cloud('POST', '/settings', { bootDelayMs: 1000 });
    await cloud('POST', '/groups', {
      id: group,
      role: 'Worker',
      launchImage: 'nwos-1.0.0',
      kubernetesVersion: 'v1.37.1',
      cluster: `bench-${group}`,
      size: NODES,
    });
    for (;;) {
      const nodes = await client.list(R.Nodes, { labelSelector: `nodewarden.dev/scaling-group=${group}` });
      if (nodes.items.length >= NODES) break;
      await sleep(500);
    }
    await cloud('POST', '/settings', { bootDelayMs: BOOT_DELAY_MS });
    await client.create(ScalingGroups.type, {
      apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
      kind: 'ScalingGroup',
      metadata: { name: group },
      spec: { groupId: group, nodeVersion: group, role: 'Worker', min: 1, max: NODES },
    });
    await sleep(1000);
    const before = await operatorFigures(operator!.pid!, METRICS);
    const t0 = performance.now();
    await client.create(NodeVersions.type, {
      apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
      kind: 'NodeVersion',
      metadata: { name: group },
      spec: { image: 'nwos-2.0.0', strategy: { maxSurge: surge, maxUnavailable: surge } },
    });
    let peakRss = 0;
    let lastSaid = -1;
    for (;;) {
      const nv = await client.get<Obj>(NodeVersions.type, group);
      peakRss = Math.max(peakRss, (await operatorFigures(operator!.pid!, METRICS)).rssMiB);
      if (rolloutDone(nv as unknown as Parameters<typeof rolloutDone>[0])) break;
      const replaced = nv.status?.replaced ?? 0;
      if (replaced !== lastSaid && replaced % 10 === 0) {
        console.error(
          `  surge ${surge}: ${replaced}/${NODES} replaced after ${((performance.now() - t0) / 1000).toFixed(0)} s`,
        );
        lastSaid = replaced;
      }
      await sleep(500);
    }
    const seconds = (performance.now() - t0) / 1000;
    const after = await operatorFigures(operator!.pid!, METRICS);
    console.log(
      `surge ${String(surge).padStart(2)}: ${NODES} nodes replaced in ${seconds.toFixed(1)} s ` +
        `(${(seconds / NODES).toFixed(2)} s/node, boot delay ${BOOT_DELAY_MS / 1000} s); ` +
        `API requests per replaced node ${((after.requests - before.requests) / NODES).toFixed(1)}; ` +
        `operator CPU ${(after.cpuSeconds - before.cpuSeconds).toFixed(1)} s, RSS peak ${peakRss.toFixed(0)} MiB`,
    );
    await client.delete(NodeVersions.type, group);
    await client.delete(ScalingGroups.type, group);
    const instances = (await cloud('GET', `/groups/${group}/instances`)) as {
      providerID: string;
      state: string;
    }[];
    for (const i of instances) {
      if (i.state !== 'Terminated') await cloud('DELETE', `/instances/${encodeURIComponent(i.providerID)}`);
    }
  }
  operator.kill('SIGTERM');
  client.close();
} finally {
  operator?.kill('SIGKILL');
  await cleanup();
}
