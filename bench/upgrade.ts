// Benchmark: a rolling upgrade of BENCH_NODES worker nodes (default 100) in the
// local cluster's simulated cloud, boot delay BENCH_BOOT_DELAY_MS (default 5000),
// at each surge in BENCH_SURGES (default "1,10"; 1 is the anchor's fixed budget);
// then the same rollout through Cluster API (the real core manager, simulated
// machines with the same boot delay) at BENCH_CLUSTERAPI_SURGE (default 10; 0
// skips it). Prints wall time, API requests per replaced node, and operator CPU
// and memory, the two providers' lines side by side at the end.
//
//   make bench-upgrade
import { execFile, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';

import { benchClusters, operatorFigures } from './harness.ts';
import { clusterApiRollout, type RolloutFigures } from './upgrade-clusterapi.ts';

const { parsePools } = await import('../src/cluster/fleet.ts');
const { KubeClient } = await import('../src/runtime/client.ts');
const { NodeVersions, ScalingGroups } = await import('../src/api/upgrade.ts');
const { simulatedCloudEndpoint } = await import('../src/cluster/infra/cloud/discovery.ts');
const { rolloutDone } = await import('../src/upgrade/format.ts');
const { cloudRequest } = await import('../src/cluster/infra/cloud/api.ts');
const R = await import('../src/runtime/resources.ts');

const NODES = Number(process.env.BENCH_NODES ?? 100);
const BOOT_DELAY_MS = Number(process.env.BENCH_BOOT_DELAY_MS ?? 5000);
const SURGES = (process.env.BENCH_SURGES ?? '1,10').split(',').map(Number);
const CLUSTERAPI_SURGE = Number(process.env.BENCH_CLUSTERAPI_SURGE ?? 10);
const METRICS = '127.0.0.1:18481';

const lines: string[] = [];
function say(provider: string, surge: number, f: RolloutFigures): void {
  const line =
    `${provider.padEnd(10)} surge ${String(surge).padStart(2)}: ${NODES} nodes replaced in ${f.seconds.toFixed(1)} s ` +
    `(${(f.seconds / NODES).toFixed(2)} s/node, boot delay ${BOOT_DELAY_MS / 1000} s); ` +
    `API requests per replaced node ${f.requestsPerNode.toFixed(1)}; ` +
    `operator CPU ${f.cpuSeconds.toFixed(1)} s, RSS peak ${f.peakRssMiB.toFixed(0)} MiB`;
  console.log(line);
  lines.push(line);
}

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
  // A control-plane node: the Cluster API rollout's self-hosted Cluster adopts it as its control plane.
  await clusters.up({ name, pools: parsePools('cp=1:role=control-plane;worker=2'), timeoutMs: 300_000 });
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
    say('simulated', surge, {
      seconds,
      requestsPerNode: (after.requests - before.requests) / NODES,
      cpuSeconds: after.cpuSeconds - before.cpuSeconds,
      peakRssMiB: peakRss,
    });
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
  await new Promise((r) => operator!.once('exit', r));
  client.close();
  if (CLUSTERAPI_SURGE > 0) {
    const f = await clusterApiRollout(clusters, name, {
      nodes: NODES,
      surge: CLUSTERAPI_SURGE,
      bootDelayMs: BOOT_DELAY_MS,
    });
    say('clusterapi', CLUSTERAPI_SURGE, f);
    console.log(`\nside by side:\n${lines.join('\n')}`);
  }
} finally {
  operator?.kill('SIGKILL');
  await cleanup();
}
