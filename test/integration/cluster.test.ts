// The local cluster is a real Kubernetes control plane: these prove the parts
// every later capability relies on (scheduling, controllers, PDB status, GC,
// persistence across down/up).
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  PolicyV1Api,
  type V1Pod,
  VersionApi,
} from '@kubernetes/client-node';
import { Labels, parsePools } from '../../src/cluster/fleet.ts';
import { isReady, stateDir } from '../../src/cluster/local-cluster.ts';
import { pinnedVersions } from '../../src/cluster/toolchain.ts';
import { nodewarden } from '../harness/binary.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import { openLocalClusters } from '../harness/local-clusters.ts';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const policy = kc.makeApiClient(PolicyV1Api);

const runningAndReady = (p: V1Pod) =>
  p.status?.phase === 'Running' &&
  (p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);

describe('the local control plane', () => {
  it('serves the pinned Kubernetes version', async () => {
    const v = await kc.makeApiClient(VersionApi).getCode();
    assert.equal(v.gitVersion, pinnedVersions().kube);
  });

  it('has the whole simulated fleet Ready, with the labels of a real fleet', async () => {
    const nodes = (await core.listNode()).items;
    assert.equal(nodes.length, 9);
    assert.ok(nodes.every(isReady), 'every node is Ready');
    const zones = new Set(nodes.map((n) => n.metadata?.labels?.[Labels.zone]));
    assert.equal(zones.size, 3);
    const cps = nodes.filter((n) => n.metadata?.labels?.[Labels.controlPlane] === '');
    assert.equal(cps.length, 3);
    assert.ok(nodes.every((n) => n.metadata?.labels?.[Labels.instanceType]));
    assert.equal(nodes[0]?.status?.allocatable?.pods, '110');
  });
});

describe('workloads on simulated nodes', () => {
  const ns = useNamespace('cluster');
  const labels = { app: 'web' };

  it("runs a Deployment's pods on worker nodes, Running and Ready", async () => {
    await apps.createNamespacedDeployment({
      namespace: ns(),
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 4,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'example/web:1' }] } },
        },
      },
    });
    const pods = await eventually('4 running pods', async () => {
      const items = (await core.listNamespacedPod({ namespace: ns(), labelSelector: 'app=web' })).items;
      return items.length === 4 && items.every(runningAndReady) ? items : undefined;
    });
    const nodes = new Set(pods.map((p) => p.spec?.nodeName));
    assert.ok(
      [...nodes].every((n) => n?.startsWith('worker-')),
      'control-plane taint keeps pods off cp nodes',
    );
  });

  it("computes a PodDisruptionBudget's status", async () => {
    await policy.createNamespacedPodDisruptionBudget({
      namespace: ns(),
      body: { metadata: { name: 'web' }, spec: { minAvailable: 3, selector: { matchLabels: labels } } },
    });
    const status = await eventually('PDB status', async () => {
      const pdb = await policy.readNamespacedPodDisruptionBudget({ namespace: ns(), name: 'web' });
      return pdb.status?.observedGeneration === 1 && pdb.status.expectedPods === 4 ? pdb.status : undefined;
    });
    assert.equal(status.currentHealthy, 4);
    assert.equal(status.desiredHealthy, 3);
    assert.equal(status.disruptionsAllowed, 1);
  });

  it('runs a DaemonSet pod on every node that tolerates it', async () => {
    await apps.createNamespacedDaemonSet({
      namespace: ns(),
      body: {
        metadata: { name: 'agent' },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: {
            metadata: { labels: { app: 'agent' } },
            spec: { containers: [{ name: 'agent', image: 'example/agent:1' }] },
          },
        },
      },
    });
    const ready = await eventually('daemonset rolled out', async () => {
      const ds = await apps.readNamespacedDaemonSet({ namespace: ns(), name: 'agent' });
      const s = ds.status;
      return s && s.desiredNumberScheduled === 6 && s.numberReady === 6 ? s.numberReady : undefined;
    });
    assert.equal(ready, 6, 'one per worker; control-plane nodes are tainted');
  });

  it('garbage-collects ReplicaSets and pods when their Deployment is deleted', async () => {
    await apps.deleteNamespacedDeployment({ namespace: ns(), name: 'web', propagationPolicy: 'Background' });
    await eventually('pods and replicasets gone', async () => {
      const pods = (await core.listNamespacedPod({ namespace: ns(), labelSelector: 'app=web' })).items;
      const rs = (await apps.listNamespacedReplicaSet({ namespace: ns() })).items;
      return pods.length === 0 && rs.length === 0 ? true : undefined;
    });
  });

  it('finishes deleting a namespace (the namespace controller runs)', async () => {
    const name = `${ns()}-gone`;
    await core.createNamespace({ body: { metadata: { name } } });
    await core.createNamespacedConfigMap({
      namespace: name,
      body: { metadata: { name: 'x' }, data: { a: 'b' } },
    });
    await core.deleteNamespace({ name });
    await eventually(
      'namespace removed',
      async () => {
        try {
          await core.readNamespace({ name });
          return undefined;
        } catch (err) {
          return (err as { code?: number }).code === 404 ? true : undefined;
        }
      },
      60_000,
    );
  });
});

describe('cluster down and up', () => {
  it('keeps every object, and several clusters run side by side', async () => {
    const clusters = await openLocalClusters({ quiet: true });
    const name = 'nwtest-restart';
    const first = await clusters.up({ name, pools: [] });
    assert.equal(first.state, 'running');
    assert.notEqual(first.server, kc.getCurrentCluster()?.server, 'its own port, beside the shared cluster');

    const api = clusters.kubeConfig(name).makeApiClient(CoreV1Api);
    await api.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'survivor' }, data: { kept: 'yes' } },
    });
    await clusters.down(name);
    assert.equal((await clusters.status(name)).state, 'stopped');

    const again = await clusters.up({ name });
    assert.equal(again.state, 'running');
    const cm = await clusters.kubeConfig(name).makeApiClient(CoreV1Api).readNamespacedConfigMap({
      namespace: 'default',
      name: 'survivor',
    });
    assert.equal(cm.data?.kept, 'yes');
    assert.equal(await clusters.delete(name), true);
    assert.equal((await clusters.status(name)).state, 'absent');
    const left = readdirSync(stateDir(), { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.includes(name),
    );
    assert.deepEqual(left, [], 'no file of the deleted cluster is left in the state folder');
  });
});

describe('a restarted cluster works as a new one', () => {
  // kwok, the nodes' kubelet, plays pods only on nodes whose Lease it holds; a restarted kwok
  // used to find its predecessor's leases in the way and leave pods Pending and Terminating.
  it('starts and removes pods within seconds of up, and kwok keeps every node heartbeat', async () => {
    const clusters = await openLocalClusters({ quiet: true });
    const name = 'nwtest-rerun';
    await clusters.up({ name, pools: parsePools('worker=3') });
    try {
      const deploy = (app: string, replicas: number) =>
        clusters
          .kubeConfig(name)
          .makeApiClient(AppsV1Api)
          .createNamespacedDeployment({
            namespace: 'default',
            body: {
              metadata: { name: app },
              spec: {
                replicas,
                selector: { matchLabels: { app } },
                template: {
                  metadata: { labels: { app } },
                  spec: { containers: [{ name: app, image: 'x/y:1' }] },
                },
              },
            },
          });
      const pods = async (app: string) =>
        (
          await clusters
            .kubeConfig(name)
            .makeApiClient(CoreV1Api)
            .listNamespacedPod({ namespace: 'default', labelSelector: `app=${app}` })
        ).items;
      await deploy('before', 2);
      const old = await eventually('2 pods running before the restart', async () => {
        const items = await pods('before');
        return items.length === 2 && items.every(runningAndReady) ? items : undefined;
      });

      await clusters.down(name);
      const upStarted = Date.now();
      await clusters.up({ name });
      const upReturned = Date.now();

      await deploy('after', 3);
      await eventually(
        "a new Deployment's 3 pods Running",
        async () => {
          const items = await pods('after');
          return items.length === 3 && items.every(runningAndReady) ? true : undefined;
        },
        20_000,
      );
      const gone = old[0]!.metadata!.name!;
      await clusters
        .kubeConfig(name)
        .makeApiClient(CoreV1Api)
        .deleteNamespacedPod({ namespace: 'default', name: gone });
      await eventually(
        'a pod from before the restart, deleted after it, gone',
        async () => ((await pods('before')).some((p) => p.metadata?.name === gone) ? undefined : true),
        20_000,
      );
      const worked = (Date.now() - upReturned) / 1000;
      assert.ok(worked < 30, `pods started and went within ${worked}s of up`);

      const leases = (
        await clusters
          .kubeConfig(name)
          .makeApiClient(CoordinationV1Api)
          .listNamespacedLease({ namespace: 'kube-node-lease' })
      ).items.filter((l) => l.metadata?.name?.startsWith('worker-'));
      assert.equal(leases.length, 3, 'one heartbeat lease per node');
      assert.equal(new Set(leases.map((l) => l.spec?.holderIdentity)).size, 1, 'one kwok holds them all');
      for (const l of leases)
        assert.ok(
          new Date(l.spec?.renewTime ?? 0).getTime() >= upStarted,
          `lease ${l.metadata?.name} renewed since the restart (${l.spec?.renewTime})`,
        );
    } finally {
      await clusters.delete(name);
    }
  });
});

describe('nodewarden cluster, through the binary', () => {
  const name = process.env.NODEWARDEN_TEST_CLUSTER ?? 'nwtest';

  it('says a running cluster is running when asked to bring it up', async () => {
    const { code, out, err } = await nodewarden(['cluster', 'up', '--name', name]);
    assert.equal(code, 0);
    assert.match(err, new RegExp(`cluster "${name}" is already running`));
    assert.match(out, /^state {7}running$/m);
  });

  it('lists the clusters under a header', async () => {
    const { code, out } = await nodewarden(['cluster', 'list']);
    assert.equal(code, 0);
    const [header, ...rows] = out.trimEnd().split('\n');
    assert.match(header ?? '', /^NAME +STATE +SERVER$/);
    assert.ok(
      rows.some((r) => new RegExp(`^${name} +running +https://`).test(r)),
      out,
    );
  });
});
