// The upgrade benchmark's rollout through Cluster API: the real core manager
// (built from the Go module proxy, run out of cluster) on the benchmark's local
// cluster, self-hosted, with nodewarden's simulated machines (kwok Nodes after a
// boot delay). A MachineDeployment of `nodes` is rolled to a new image by the
// operator with --cloud-provider clusterapi at `surge`; the figures are the ones
// the simulated cloud's rollout prints, so the two lines compare.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { type Clusters, operatorFigures, spawnBenchOperator } from './harness.ts';

const { KubeClient } = await import('../src/runtime/client.ts');
const { NodeVersions, ScalingGroups } = await import('../src/api/upgrade.ts');
const { MachineDeployments } = await import('../src/api/clusterapi.ts');
const { startClusterApi } = await import('../src/cluster/infra/clusterapi/environment.ts');
const { createSelfHostedCluster, machineTemplate, workerDeployment } = await import(
  '../src/cluster/infra/clusterapi/self-hosted.ts'
);
const { NodewardenMachineTemplates } = await import('../src/cluster/infra/clusterapi/api.ts');
const { pinnedVersions } = await import('../src/cluster/toolchain.ts');
const { createLogger } = await import('../src/runtime/log.ts');
const { isReady } = await import('../src/runtime/conditions.ts');
const { rolloutDone } = await import('../src/upgrade/format.ts');
const R = await import('../src/runtime/resources.ts');

type K8sObject = import('../src/runtime/resources.ts').K8sObject;
type Client = import('../src/runtime/client.ts').KubeClient;

export interface RolloutFigures {
  seconds: number;
  requestsPerNode: number;
  cpuSeconds: number;
  peakRssMiB: number;
}

const METRICS = '127.0.0.1:18482';
const NS = 'bench-capi';
const POOL = 'bench';

/** Rolls a MachineDeployment of `nodes` to a new image through Cluster API; its figures. */
export async function clusterApiRollout(
  clusters: Clusters,
  name: string,
  o: { nodes: number; surge: number; bootDelayMs: number },
): Promise<RolloutFigures> {
  const kubeconfigPath = clusters.kubeconfigPath(name);
  const kubeConfig = clusters.kubeConfig(name);
  const client = KubeClient.fromKubeConfig(kubeConfig, { qps: 0 });
  const kubernetesVersion = pinnedVersions().kube;
  const env = await startClusterApi({
    client,
    kubeConfig,
    kubeconfigPath,
    workDir: mkdtempSync(join(tmpdir(), 'nodewarden-bench-capi-')),
    kubernetesVersion,
    log: createLogger({ level: 'silent' }),
  });
  let operator: ReturnType<typeof spawnBenchOperator> | undefined;
  try {
    await client.create(R.Namespaces, { metadata: { name: NS } });
    const cluster = await createSelfHostedCluster(client, {
      namespace: NS,
      name: 'selfhosted',
      kubeconfigPath,
      kubernetesVersion,
      apiServer: kubeConfig.getCurrentCluster()?.server ?? '',
    });
    const bootDelaySeconds = o.bootDelayMs / 1000;
    await client.create(
      NodewardenMachineTemplates.type,
      machineTemplate(NS, `${POOL}-tpl`, { image: 'nwos-1.0.0', bootDelaySeconds, pool: POOL }),
    );
    await client.create(
      MachineDeployments,
      workerDeployment(cluster, {
        name: POOL,
        replicas: o.nodes,
        template: `${POOL}-tpl`,
      }) as unknown as K8sObject,
    );
    await readyNodes(client, o.nodes);
    operator = spawnBenchOperator(kubeconfigPath, METRICS, [
      '--cloud-provider',
      'clusterapi',
      '--cluster-id',
      `${NS}/selfhosted`,
      '--clusterapi-namespace',
      NS,
      '--controllers',
      'nodemaintenance,nodeversion,scalinggroup,pendingnode',
    ]);
    await sleep(3000);
    const figures = await rollout(client, operator.pid!, o);
    // Its finalizer is lifted by the operator, so before the operator stops.
    await client.delete(NodeVersions.type, 'capi');
    await sleep(2000);
    return figures;
  } finally {
    operator?.kill('SIGTERM');
    client.close();
    await env.stop();
  }
}

/** Waits for the MachineDeployment's Nodes to be Ready, saying how far it got. */
async function readyNodes(client: Client, nodes: number): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const list = await client.list<K8sObject>(R.Nodes, { labelSelector: `nodewarden.dev/pool=${POOL}` });
    const ready = list.items.filter((n) => isReady(n as never)).length;
    if (ready >= nodes) break;
    if (performance.now() - t0 > 600_000) throw new Error(`only ${ready} of ${nodes} Machines' Nodes Ready`);
    await sleep(1000);
  }
  console.error(`  clusterapi: ${nodes} Machines Ready in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/** The rollout itself, timed from the NodeVersion's creation to its end. */
async function rollout(
  client: Client,
  pid: number,
  o: { nodes: number; surge: number },
): Promise<RolloutFigures> {
  await client.create(ScalingGroups.type, {
    apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
    kind: 'ScalingGroup',
    metadata: { name: 'capi' },
    spec: { groupId: `${NS}/${POOL}`, nodeVersion: 'capi', role: 'Worker', min: 1, max: o.nodes },
  });
  await sleep(1000);
  const before = await operatorFigures(pid, METRICS);
  const t0 = performance.now();
  await client.create(NodeVersions.type, {
    apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
    kind: 'NodeVersion',
    metadata: { name: 'capi' },
    spec: { image: 'nwos-2.0.0', strategy: { maxSurge: o.surge, maxUnavailable: o.surge } },
  });
  let peakRss = 0;
  let lastSaid = -1;
  for (;;) {
    const nv = await client.get<K8sObject & { status?: { replaced?: number } }>(NodeVersions.type, 'capi');
    peakRss = Math.max(peakRss, (await operatorFigures(pid, METRICS)).rssMiB);
    if (rolloutDone(nv as unknown as Parameters<typeof rolloutDone>[0])) break;
    const replaced = nv.status?.replaced ?? 0;
    if (replaced !== lastSaid && replaced % 10 === 0) {
      const secs = ((performance.now() - t0) / 1000).toFixed(0);
      console.error(`  clusterapi surge ${o.surge}: ${replaced}/${o.nodes} replaced after ${secs} s`);
      lastSaid = replaced;
    }
    await sleep(500);
  }
  const seconds = (performance.now() - t0) / 1000;
  const after = await operatorFigures(pid, METRICS);
  return {
    seconds,
    requestsPerNode: (after.requests - before.requests) / o.nodes,
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    peakRssMiB: peakRss,
  };
}
