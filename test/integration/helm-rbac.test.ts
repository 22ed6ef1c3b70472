// The chart's RBAC is enough, and no more: install the chart, take a token of
// its ServiceAccount (the TokenRequest API, as `kubectl create token` does),
// and run the real operator out of cluster with nothing but that token through
// one maintenance and one rolling upgrade. Not one request may be refused.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { V1Node } from '@kubernetes/client-node';
import { type KVMCluster, type KVMClusterSpecType, KVMClusters } from '../../src/api/kvm.ts';
import { NodeMaintenances } from '../../src/api/maintenance.ts';
import { NodeVersions } from '../../src/api/upgrade.ts';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { Namespaces, Nodes, Secrets } from '../../src/runtime/resources.ts';
import { Upgrade } from '../../src/upgrade/names.ts';
import { eventually, testKubeConfig, testKubeconfigPath } from '../harness/cluster.ts';
import { startOperator } from '../harness/operator.ts';
import { ClusterRoleBindings, ClusterRoles, selfGrant } from '../harness/rbac.ts';
import { getNodeVersion, groupNodes, imageOf, rolloutDone, TestCloud } from '../harness/rollout.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe("the chart's RBAC, as the operator's own token", { timeout: 420_000 }, () => {
  const admin = KubeClient.fromKubeConfig(testKubeConfig());
  const id = Date.now().toString(36).slice(-5);
  const ns = `helmrbac-${id}`;
  const release = `rbac${id}`;
  const group = `helmrbac-${id}`;
  let cloud: TestCloud | undefined;
  let helmPath = '';
  const helm = (...args: string[]) =>
    run(helmPath, args, { cwd: ROOT, env: { ...process.env, KUBECONFIG: testKubeconfigPath() } });

  after(async () => {
    await admin.delete(NodeVersions.type, Upgrade.defaultNodeVersion, undefined, { ignoreNotFound: true });
    await cloud?.deleteGroupInstances(group).catch(() => {});
    if (helmPath) await helm('uninstall', release, '-n', ns).catch(() => {});
    admin.close();
  });

  it("runs a maintenance, a rollout and a KVMCluster's life with no request refused", async () => {
    helmPath = (await run('hack/build-helm.sh', [], { cwd: ROOT })).stdout.trim().split('\n').at(-1)!;
    // No webhook: its certificate and configuration need a Service that reaches the pod.
    await helm(
      'install',
      release,
      'charts/nodewarden',
      '-n',
      ns,
      '--create-namespace',
      '--force-conflicts',
      '--set',
      'replicas=1',
      '--set',
      'webhook.enabled=false',
    );
    const { kubectl } = await controlPlaneBinaries({ quiet: true });
    const sa = (
      await run(kubectl, [
        '--kubeconfig',
        testKubeconfigPath(),
        '-n',
        ns,
        'get',
        'serviceaccount',
        '-o',
        'name',
      ])
    ).stdout
      .split('\n')
      .find((l) => l.includes(release))!
      .replace('serviceaccount/', '');
    const token = (
      await run(kubectl, [
        '--kubeconfig',
        testKubeconfigPath(),
        '-n',
        ns,
        'create',
        'token',
        sa,
        '--duration',
        '1h',
      ])
    ).stdout.trim();
    const cluster = testKubeConfig().getCurrentCluster()!;
    const dir = mkdtempSync(join(tmpdir(), 'helmrbac-'));
    const kubeconfig = join(dir, 'kubeconfig.yaml');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'c',
            cluster: {
              server: cluster.server,
              ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}),
              ...(cluster.caFile ? { 'certificate-authority': cluster.caFile } : {}),
            },
          },
        ],
        users: [{ name: 'sa', user: { token } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'sa' } }],
        'current-context': 'c',
      }),
    );

    cloud = await TestCloud.connect(admin);
    await cloud.call('POST', '/settings', { bootDelayMs: 500 });
    await cloud.createGroups(`helmrbac-cluster-${id}`, [{ id: group, role: 'Worker', size: 2 }]);
    await eventually('2 nodes', async () =>
      (await groupNodes(admin, group)).length === 2 ? true : undefined,
    );

    const op = startOperator([
      '--kubeconfig',
      kubeconfig,
      '--leader-elect',
      '--leader-election-namespace',
      ns,
      '--webhook-bind-address',
      '0',
      '--cloud-provider',
      'simulated',
      '--cloud-endpoint',
      cloud.endpoint,
      '--cluster-id',
      `helmrbac-cluster-${id}`,
      '--maintenance-lease-namespace',
      ns,
    ]);
    try {
      // One maintenance: cordon and drain a node, then give it back.
      const node = (await groupNodes(admin, group))[0]!.metadata!.name!;
      await admin.create(
        NodeMaintenances.type,
        NodeMaintenances.make({ name: `rbac-${id}` }, { nodeName: node, reason: 'rbac' }) as never,
      );
      await eventually(
        'the maintenance Succeeded',
        async () => {
          const nm = await admin.get<{ status?: { phase?: string } }>(NodeMaintenances.type, `rbac-${id}`);
          return nm.status?.phase === 'Succeeded' ? true : undefined;
        },
        60_000,
      );
      await admin.delete(NodeMaintenances.type, `rbac-${id}`);
      await eventually('the node schedulable again', async () =>
        (await admin.get<V1Node>(Nodes, node)).spec?.unschedulable ? undefined : true,
      );

      // One rollout round of the group.
      await admin.create(NodeVersions.type, {
        apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
        kind: 'NodeVersion',
        metadata: { name: Upgrade.defaultNodeVersion },
        spec: { image: 'nwos-2.0.0', strategy: { maxSurge: 2, maxUnavailable: 2 } },
      });
      await eventually(
        'the rollout done',
        async () => (rolloutDone(await getNodeVersion(admin, Upgrade.defaultNodeVersion)) ? true : undefined),
        120_000,
      );
      assert.deepEqual((await groupNodes(admin, group)).map(imageOf), ['nwos-2.0.0', 'nwos-2.0.0']);
      // Deleted while the operator runs, so its finalizer comes off (as the chart's account too).
      await admin.delete(NodeVersions.type, Upgrade.defaultNodeVersion);
      await eventually('the NodeVersion gone', async () =>
        (await admin.list(NodeVersions.type)).items.some(
          (v) => v.metadata?.name === Upgrade.defaultNodeVersion,
        )
          ? undefined
          : true,
      );
      await kvmClusterLife(admin, ns, `rbac${id}`);

      // The operator's own count of refused requests, from its /metrics.
      const served = op.logs.find((l) => l.msg === 'serving metrics') as
        | { address?: { address: string; port: number } }
        | undefined;
      assert.ok(served?.address, 'the operator named no metrics address');
      const { address, port } = served.address;
      const metrics = await (await fetch(`http://${address}:${port}/metrics`)).text();
      const refusedCount = [
        ...metrics.matchAll(/^rest_client_requests_total\{[^}]*code="403"[^}]*\} (\d+)/gm),
      ].reduce((a, m) => a + Number(m[1]), 0);
      assert.match(metrics, /^rest_client_requests_total\{/m);
      assert.equal(refusedCount, 0, 'requests refused with 403');
    } catch (err) {
      // What the operator said is the first thing to read when this fails.
      for (const l of op.logs.slice(-30)) process.stderr.write(`[operator] ${JSON.stringify(l)}\n`);
      throw err;
    } finally {
      await op.stop();
    }
    const refused = op.logs.filter((l) => /\b403\b|forbidden/i.test(JSON.stringify(l)));
    assert.deepEqual(refused, [], 'the operator was refused a request');
    // And no more: the token cannot grant itself roles or read the cluster's roles. (It may make
    // namespaces: a KVMCluster's VMs live in one of their own, as the anchor's.)
    const kc = testKubeConfig();
    kc.loadFromFile(kubeconfig);
    const asOperator = KubeClient.fromKubeConfig(kc);
    const forbidden = (err: { statusCode?: number }) => err.statusCode === 403;
    await assert.rejects(asOperator.create(ClusterRoleBindings, selfGrant(`x-${id}`)), forbidden);
    await assert.rejects(asOperator.list(ClusterRoles), forbidden);
    asOperator.close();
  });
});

/**
 * A one-master KVMCluster made Ready (its namespace, objects, PKI and kubeconfig Secret made by the
 * operator's server-side applies, which need create as well as patch) and deleted with nothing left.
 */
async function kvmClusterLife(admin: KubeClient, ns: string, id: string): Promise<void> {
  const spec: KVMClusterSpecType = {
    masters: [{ id: 'm1', cpus: 1, memory: '1G' }],
    workers: [{ id: 'w1', cpus: 1, memory: '1G', dockerVolumeSizeGB: 10 }],
    release: { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' },
    network: { vni: 3000 + (Date.now() % 1000) },
    api: { domain: `api.${id}.example.com` },
  };
  await admin.create(KVMClusters.type, KVMClusters.make({ name: id, namespace: ns }, spec) as never);
  await eventually(
    'the KVMCluster with 2 Ready nodes',
    async () => {
      const kc = await admin.get<KVMCluster>(KVMClusters.type, id, ns);
      return kc.status?.readyNodes === 2 ? true : undefined;
    },
    180_000,
    1000,
  );
  await admin.get(Secrets, `${id}-kubeconfig`, ns);
  await admin.delete(KVMClusters.type, id, ns);
  await eventually(
    'the KVMCluster and its namespace gone',
    async () => {
      const left = await Promise.all([
        admin.get(KVMClusters.type, id, ns).then(
          () => true,
          (e) => !isNotFound(e),
        ),
        admin.get(Namespaces, id).then(
          () => true,
          (e) => !isNotFound(e),
        ),
      ]);
      return left.some(Boolean) ? undefined : true;
    },
    180_000,
    1000,
  );
}
