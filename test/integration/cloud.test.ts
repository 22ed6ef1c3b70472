// The simulated cloud every local cluster carries: started by `cluster up`,
// found through its ConfigMap, knowing the fleet's nodes as its instances,
// mirroring the instances it launches and deletes into the cluster, and
// keeping its state across `cluster down` + `up`.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { Labels, parsePools } from '../../src/cluster/fleet.ts';
import type { Instance, ScalingGroup, Settings } from '../../src/cluster/infra/cloud/state.ts';
import { isReady, type LocalClusters } from '../../src/cluster/local-cluster.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Nodes } from '../../src/runtime/resources.ts';
import { nodewarden } from '../harness/binary.ts';
import { type ClusterCloud, clusterCloud, findNode } from '../harness/cloud.ts';
import { eventually, testKubeConfig } from '../harness/cluster.ts';
import { openLocalClusters } from '../harness/local-clusters.ts';

const client = KubeClient.fromKubeConfig(testKubeConfig());
after(() => client.close());

describe("the harness cluster's simulated cloud", () => {
  let cloud: ClusterCloud;
  let saved: Settings;
  const created: string[] = [];

  before(async () => {
    cloud = await clusterCloud(client);
    // Short boots keep this file quick; the setting is put back after.
    saved = await cloud.call<Settings>('GET', '/settings');
    await cloud.call('POST', '/settings', { bootDelayMs: 500 });
  });

  after(async () => {
    for (const id of created)
      await cloud.call('DELETE', `/instances/${encodeURIComponent(id)}`).catch(() => {});
    await cloud?.call('POST', '/settings', saved).catch(() => {});
  });

  it('runs, named by its ConfigMap with the cluster it serves', async () => {
    assert.match(cloud.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(cloud.cluster, process.env.NODEWARDEN_TEST_CLUSTER);
    const groups = await cloud.call<ScalingGroup[]>('GET', `/groups?cluster=${cloud.cluster}`);
    assert.deepEqual(
      groups.map((g) => [g.id, g.role, g.launchImage]),
      [
        ['cp', 'ControlPlane', 'nwos-1.0.0'],
        ['worker', 'Worker', 'nwos-1.0.0'],
      ],
    );
  });

  it("knows every fleet node as a Ready instance of its pool's group", async () => {
    const nodes = (await client.listAll<V1Node>(Nodes)).items;
    const fleet = nodes.filter((n) => /^(cp|worker)-\d{3}$/.test(n.metadata?.name ?? ''));
    assert.equal(fleet.length, 9);
    for (const node of fleet) {
      const name = node.metadata!.name!;
      const pool = node.metadata!.labels![Labels.pool]!;
      assert.equal(node.spec?.providerID, `nwsim://${pool}/${name}`);
      const instance = await cloud.instance(node.spec!.providerID!);
      assert.deepEqual([instance.groupId, instance.state, instance.image], [pool, 'Ready', 'nwos-1.0.0']);
    }
  });

  it('launches an instance that joins as a Ready Node, and removes the Node with the instance', async () => {
    const i = await cloud.call<Instance>('POST', '/groups/worker/instances');
    created.push(i.providerID);
    assert.equal(i.state, 'Creating');
    const node = await eventually('the new Node Ready', async () => {
      const n = await findNode(client, i.nodeName);
      return n && isReady(n) ? n : undefined;
    });
    assert.equal(node.spec?.providerID, i.providerID);
    assert.equal(node.metadata?.labels?.[Labels.pool], 'worker');
    assert.equal(node.metadata?.labels?.[Labels.image], 'nwos-1.0.0');
    assert.equal((await cloud.instance(i.providerID)).state, 'Ready');

    await cloud.call('DELETE', `/instances/${encodeURIComponent(i.providerID)}`);
    await eventually('the Node gone', async () => ((await findNode(client, i.nodeName)) ? undefined : true));
    assert.equal((await cloud.instance(i.providerID)).state, 'Terminated');
  });

  it('keeps an instance that never joins in Creating, with no Node', async () => {
    await cloud.call('POST', '/faults', { neverJoinNext: { worker: 1 } });
    const i = await cloud.call<Instance>('POST', '/groups/worker/instances');
    created.push(i.providerID);
    await new Promise((r) => setTimeout(r, 2000)); // four boot delays
    assert.equal((await cloud.instance(i.providerID)).state, 'Creating');
    assert.equal(await findNode(client, i.nodeName), undefined);
  });
});

describe('nodewarden cloud, through the binary', () => {
  // Only the kubeconfig says which cluster: no --name, no $NODEWARDEN_CLUSTER.
  const env = { KUBECONFIG: process.env.NODEWARDEN_TEST_KUBECONFIG ?? '', NODEWARDEN_CLUSTER: '' };

  it("finds the cloud of the kubeconfig's current context, and prints it with -o json", async () => {
    const cloud = await clusterCloud(client);
    const { code, out, err } = await nodewarden(['cloud', 'status', '-o', 'json'], env);
    assert.equal(code, 0, err);
    const status = JSON.parse(out) as { endpoint: string; groups: ScalingGroup[] };
    assert.equal(status.endpoint, cloud.endpoint);
    assert.deepEqual(
      status.groups.map((g) => g.id),
      ['cp', 'worker'],
    );
  });

  it('refuses an unknown fault, and sets nothing', async () => {
    const { code, err } = await nodewarden(['cloud', 'faults', '--set', '{"neverJoin":{"worker":1}}'], env);
    assert.equal(code, 1);
    assert.match(err, /unknown fault "neverJoin"; the faults are neverJoinNext/);
    const { out } = await nodewarden(['cloud', 'faults', '-o', 'json'], env);
    assert.deepEqual((JSON.parse(out) as { neverJoinNext: unknown }).neverJoinNext, {});
  });

  it('reads groups and status without spending the faults meant for the operator', async () => {
    const cloud = await clusterCloud(client);
    try {
      assert.equal((await nodewarden(['cloud', 'faults', '--set', '{"failNextCalls":3}'], env)).code, 0);
      for (const verb of ['groups', 'status', 'instances']) {
        const { code, err } = await nodewarden(['cloud', verb], env);
        assert.equal(code, 0, `${verb}: ${err}`);
      }
      assert.equal((await cloud.call<{ failNextCalls: number }>('GET', '/faults')).failNextCalls, 3);
    } finally {
      await cloud.call('POST', '/faults', { clear: true });
    }
  });

  it('names the groups with -o name, for the cluster --cluster gives (the run’s own)', async () => {
    const cluster = process.env.NODEWARDEN_TEST_CLUSTER ?? 'nwtest';
    const byFlag = await nodewarden(['cloud', 'groups', '-o', 'name', '--cluster', cluster], {
      NODEWARDEN_CLUSTER: '',
      KUBECONFIG: '/nonexistent/kubeconfig.yaml',
    });
    assert.equal(byFlag.code, 0, byFlag.err);
    assert.equal(byFlag.out, 'cp\nworker\n');
    const byContext = await nodewarden(['cloud', 'groups', '-o', 'name'], env);
    assert.equal(byContext.out, byFlag.out);
  });
});

describe('the simulated cloud across cluster down and up', () => {
  const name = 'nwtest-cloud';
  let clusters: LocalClusters;

  before(async () => {
    clusters = await openLocalClusters({ quiet: true });
  });
  after(async () => {
    await clusters.delete(name);
  });

  it('keeps its instances, settings and faults, and never brings back a replaced fleet node', async () => {
    const first = await clusters.up({
      name,
      pools: parsePools('w=2'),
      infraFlags: { 'boot-delay': '300ms' },
    });
    assert.ok(first.infrastructure.cloud?.endpoint, 'cluster status shows the cloud');
    const own = KubeClient.fromKubeConfig(clusters.kubeConfig(name));
    try {
      const cloud = await clusterCloud(own);
      assert.equal(cloud.endpoint, first.infrastructure.cloud?.endpoint);
      assert.equal(cloud.cluster, name);
      // Replace w-000 the way a rollout does: a new instance, then the old one goes.
      const heir = await cloud.call<Instance>('POST', '/groups/w/instances');
      await eventually('the heir Ready', async () => {
        const n = await findNode(own, heir.nodeName);
        return n && isReady(n) ? true : undefined;
      });
      await cloud.call('DELETE', `/instances/${encodeURIComponent('nwsim://w/w-000')}`);
      await eventually('w-000 gone', async () => ((await findNode(own, 'w-000')) ? undefined : true));
      await cloud.call('POST', '/settings', { bootDelayMs: 700 });
      await cloud.call('POST', '/faults', { neverJoinNext: { w: 2 } });
    } finally {
      own.close();
    }

    await clusters.down(name);
    assert.equal(
      (await clusters.status(name)).infrastructure.cloud,
      undefined,
      'the cloud stops with the cluster',
    );
    await assert.rejects(fetch(`${first.infrastructure.cloud?.endpoint}/settings`));

    const again = await clusters.up({ name });
    assert.ok(again.infrastructure.cloud?.endpoint);
    const back = KubeClient.fromKubeConfig(clusters.kubeConfig(name));
    try {
      const cloud = await clusterCloud(back);
      assert.equal(
        cloud.endpoint,
        again.infrastructure.cloud?.endpoint,
        'the ConfigMap names the running cloud',
      );
      assert.deepEqual(await cloud.call('GET', '/settings'), { bootDelayMs: 700 });
      assert.deepEqual((await cloud.call<{ neverJoinNext: unknown }>('GET', '/faults')).neverJoinNext, {
        w: 2,
      });
      const nodes = (await back.listAll<V1Node>(Nodes)).items;
      assert.deepEqual(
        nodes.map((n) => n.metadata?.name).sort(),
        [
          ...(await cloud.call<ScalingGroup>('GET', '/groups/w')).instances.map((p) => p.split('/').pop()),
        ].sort(),
        "the Nodes are exactly the group's instances: w-000 stays gone",
      );
      assert.equal((await cloud.instance('nwsim://w/w-000')).state, 'Terminated');
    } finally {
      back.close();
    }
  });
});
