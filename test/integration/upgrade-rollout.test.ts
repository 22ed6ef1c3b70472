// Rolling upgrades end to end: the operator (a child process, as users run it)
// replaces simulated-cloud nodes in the real control plane. Each test makes a
// fleet of its own in the harness cluster's cloud and removes it afterwards.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { NodeMaintenances } from '../../src/api/maintenance.ts';
import { AutoscalingStrategies, NodeVersions, PendingNodes } from '../../src/api/upgrade.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Deployments, Events, Nodes, PodDisruptionBudgets, Pods } from '../../src/runtime/resources.ts';
import { upgradeCommand } from '../../src/upgrade/cli.ts';
import { eventually, testKubeConfig, testKubeconfigPath, useNamespace } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';
import {
  createNodeVersion,
  createScalingGroups,
  type GroupDef,
  getNodeVersion,
  groupNodes,
  imageOf,
  isReady,
  removeFleet,
  rolloutDone,
  TestCloud,
} from '../harness/rollout.ts';

const NEW_IMAGE = 'nwos-2.0.0';
const CONTROLLERS = 'nodemaintenance,nodeversion,scalinggroup,pendingnode,autoscalingstrategy';

describe('rolling upgrades', { timeout: 600_000 }, () => {
  const ns = useNamespace('rollout');
  const client = KubeClient.fromKubeConfig(testKubeConfig(), { qps: 0 });
  let cloud: TestCloud;
  let operator: OperatorProcess | undefined;
  const run = Date.now().toString(36).slice(-5);

  /** One pod of a 1-replica Deployment on group `g`'s nodes, under a PDB that never lets it go (minAvailable 1); resolves once it runs. */
  async function guardedPod(name: string, g: string): Promise<void> {
    const app = { app: name };
    await client.create(Deployments, {
      metadata: { name, namespace: ns() },
      spec: {
        replicas: 1,
        selector: { matchLabels: app },
        template: {
          metadata: { labels: app },
          spec: {
            nodeSelector: { 'nodewarden.dev/scaling-group': g },
            containers: [{ name, image: `example/${name}:1` }],
          },
        },
      },
    });
    await client.create(PodDisruptionBudgets, {
      metadata: { name, namespace: ns() },
      spec: { minAvailable: 1, selector: { matchLabels: app } },
    });
    await eventually(`the ${name} pod Running`, async () => {
      const pods = (await client.list<PodLike>(Pods, { namespace: ns(), labelSelector: `app=${name}` }))
        .items;
      return pods.some(running) ? true : undefined;
    });
  }

  const start = () => {
    operator = startOperator([
      '--cloud-provider',
      'simulated',
      '--controllers',
      CONTROLLERS,
      '--webhook-bind-address',
      '0',
      '--maintenance-lease-namespace',
      ns(),
    ]);
    return operator;
  };

  before(async () => {
    cloud = await TestCloud.connect(client);
    await cloud.call('POST', '/settings', { bootDelayMs: 1000 });
    start();
  });
  after(async () => {
    await operator?.stop();
    await cloud?.call('POST', '/settings', { bootDelayMs: 5000 }).catch(() => {});
    await cloud?.call('POST', '/faults', { clear: true }).catch(() => {});
    client.close();
  });

  async function fleet(name: string, groups: GroupDef[]): Promise<void> {
    await cloud.createGroups(`it-${name}`, groups);
    const want = groups.reduce((n, g) => n + g.size, 0);
    await eventually(
      `${want} Ready nodes of fleet ${name}`,
      async () => {
        const nodes = (await Promise.all(groups.map((g) => groupNodes(client, g.id)))).flat();
        return nodes.filter(isReady).length === want ? true : undefined;
      },
      60_000,
    );
  }

  async function converged(name: string, timeoutMs: number) {
    return eventually(
      `NodeVersion ${name} to finish`,
      async () => {
        const nv = await getNodeVersion(client, name);
        return rolloutDone(nv) ? nv : undefined;
      },
      timeoutMs,
      250,
    );
  }

  it('replaces 3 control-plane and 30 worker nodes at surge 3: control plane first, one CP node out at a time, labels kept, PDB held', async () => {
    const nv = `main-${run}`;
    const groups: GroupDef[] = [
      { id: `${nv}-cp`, role: 'ControlPlane', size: 3 },
      { id: `${nv}-wa`, role: 'Worker', size: 15 },
      { id: `${nv}-wb`, role: 'Worker', size: 15 },
    ];
    const [cp, wa, wb] = groups.map((g) => g.id) as [string, string, string];
    try {
      await fleet(nv, groups);
      // A label users put on their nodes, to be carried over to each replacement.
      for (const g of [wa, wb]) {
        for (const n of await groupNodes(client, g)) {
          await client.patch(
            Nodes,
            n.metadata.name!,
            undefined,
            { metadata: { labels: { 'example.com/team': g } } },
            { type: 'merge' },
          );
        }
      }
      // A Deployment of 6 on these workers with a PDB of minAvailable 5.
      const app = { app: 'web' };
      await client.create(Deployments, {
        metadata: { name: 'web', namespace: ns() },
        spec: {
          replicas: 6,
          selector: { matchLabels: app },
          template: {
            metadata: { labels: app },
            spec: {
              affinity: {
                nodeAffinity: {
                  requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [
                      {
                        matchExpressions: [
                          { key: 'nodewarden.dev/scaling-group', operator: 'In', values: [wa, wb] },
                        ],
                      },
                    ],
                  },
                },
              },
              containers: [{ name: 'web', image: 'example/web:1' }],
            },
          },
        },
      });
      await client.create(PodDisruptionBudgets, {
        metadata: { name: 'web', namespace: ns() },
        spec: { minAvailable: 5, selector: { matchLabels: app } },
      });
      await eventually('6 web pods Running', async () => {
        const pods = (await client.list<PodLike>(Pods, { namespace: ns(), labelSelector: 'app=web' })).items;
        return pods.filter(running).length === 6 ? true : undefined;
      });

      // Sample the fleet while it rolls.
      let minWeb = Number.POSITIVE_INFINITY;
      let maxCpOut = 0;
      let cpDoneAt: number | undefined;
      let firstNewWorkerAt: number | undefined;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const pods = (await client.list<PodLike>(Pods, { namespace: ns(), labelSelector: 'app=web' }))
            .items;
          minWeb = Math.min(minWeb, pods.filter(running).length);
          const cps = await groupNodes(client, cp);
          const out =
            cps.filter((n) => n.spec?.unschedulable || !isReady(n)).length + Math.max(0, 3 - cps.length);
          maxCpOut = Math.max(maxCpOut, out);
          if (
            cpDoneAt === undefined &&
            cps.length === 3 &&
            cps.every((n) => imageOf(n) === NEW_IMAGE && isReady(n))
          )
            cpDoneAt = Date.now();
          const workers = [...(await groupNodes(client, wa)), ...(await groupNodes(client, wb))];
          if (firstNewWorkerAt === undefined && workers.some((n) => imageOf(n) === NEW_IMAGE))
            firstNewWorkerAt = Date.now();
          await new Promise((r) => setTimeout(r, 100));
        }
      })();

      await createScalingGroups(client, nv, groups);
      const t0 = Date.now();
      await createNodeVersion(client, nv, NEW_IMAGE, { maxSurge: 3, maxUnavailable: 3 });
      const done = await converged(nv, 300_000);
      sampling = false;
      await sampler;
      const secs = (Date.now() - t0) / 1000;

      for (const g of groups) {
        const nodes = await groupNodes(client, g.id);
        assert.equal(nodes.length, g.size, `group ${g.id} keeps its size`);
        assert.deepEqual(
          nodes.filter((n) => imageOf(n) !== NEW_IMAGE).map((n) => n.metadata.name),
          [],
          `all of ${g.id} on ${NEW_IMAGE}`,
        );
        assert.ok(nodes.every(isReady), `all of ${g.id} Ready`);
        assert.deepEqual(
          nodes
            .filter((n) => n.metadata.labels?.['nodewarden.dev/image'] !== NEW_IMAGE)
            .map((n) => n.metadata.name),
          [],
          "an heir keeps its own image label, not its donor's",
        );
        assert.ok(
          nodes.every((n) => !n.spec?.unschedulable),
          `none of ${g.id} left cordoned`,
        );
        if (g.role === 'Worker') {
          assert.deepEqual(
            nodes.filter((n) => n.metadata.labels?.['example.com/team'] !== g.id).map((n) => n.metadata.name),
            [],
            'every new worker inherited its donor label',
          );
        }
        // No instance beyond one per replaced node: the group never over-provisioned.
        assert.equal(
          (await cloud.instances(g.id)).length,
          2 * g.size,
          `${g.id}: one new instance per old one`,
        );
      }
      assert.equal(done.status?.replaced, 33);
      assert.ok(minWeb >= 5, `the PDB held: never fewer than 5 web pods running (saw ${minWeb})`);
      assert.ok(maxCpOut <= 1, `never more than one control-plane node out (saw ${maxCpOut})`);
      assert.ok(
        cpDoneAt !== undefined && firstNewWorkerAt !== undefined && cpDoneAt <= firstNewWorkerAt,
        'control plane replaced before any new worker',
      );
      const leftovers = (await client.list<K8sLike>(NodeMaintenances.type)).items.filter(
        (m) => m.metadata?.labels?.['upgrade.nodewarden.dev/node-version'] === nv,
      );
      assert.deepEqual(
        leftovers.map((m) => m.metadata?.name),
        [],
        'no NodeMaintenance of ours left',
      );
      const pending = (await client.list<K8sLike>(PendingNodes.type)).items.filter(
        (p) =>
          p.metadata?.labels?.['upgrade.nodewarden.dev/node-version'] === nv &&
          (p.spec as { goal?: string }).goal === 'Join',
      );
      assert.deepEqual(pending, [], 'no join left pending');
      console.log(`# 33 nodes replaced at surge 3 in ${secs.toFixed(1)} s`);
    } finally {
      await client.delete(Deployments, 'web', ns(), { ignoreNotFound: true });
      await removeFleet(client, cloud, nv, groups);
    }
  });

  async function nvEvents(name: string): Promise<{ reason?: string; type?: string; note?: string }[]> {
    const all = (await client.list<EventLike>(Events)).items;
    return all.filter((e) => e.regarding?.kind === 'NodeVersion' && e.regarding?.name === name);
  }

  it('replaces a node that never joins after its deadline, without extra nodes, and gives the autoscaler back as it was', async () => {
    const nv = `nojoin-${run}`;
    const groups: GroupDef[] = [{ id: `${nv}-w`, role: 'Worker', size: 3 }];
    const g = groups[0]!.id;
    const as = `as-${run}`;
    try {
      await fleet(nv, groups);
      await client.create(Deployments, {
        metadata: { name: 'cluster-autoscaler', namespace: ns() },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'ca' } },
          template: {
            metadata: { labels: { app: 'ca' } },
            spec: { containers: [{ name: 'ca', image: 'example/ca:1' }] },
          },
        },
      });
      await client.create(AutoscalingStrategies.type, {
        apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
        kind: 'AutoscalingStrategy',
        metadata: { name: as },
        spec: { enabled: true, deploymentName: 'cluster-autoscaler', deploymentNamespace: ns() },
      });
      await cloud.call('POST', '/faults', { neverJoinNext: { [g]: 1 } });
      await createScalingGroups(client, nv, groups);
      let pausedSeen = false;
      let maxLive = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const a = await client.get<{ spec: { enabled: boolean } }>(AutoscalingStrategies.type, as);
          if (!a.spec.enabled) pausedSeen = true;
          const live = (await cloud.instances(g)).filter((i) => i.state !== 'Terminated').length;
          maxLive = Math.max(maxLive, live);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await createNodeVersion(client, nv, NEW_IMAGE, { maxSurge: 1, nodeReadyTimeout: '4s' });
      await converged(nv, 120_000);
      sampling = false;
      await sampler;

      const nodes = await groupNodes(client, g);
      assert.equal(nodes.length, 3);
      assert.ok(nodes.every((n) => imageOf(n) === NEW_IMAGE && isReady(n)));
      const instances = await cloud.instances(g);
      assert.equal(
        instances.length,
        3 + 3 + 1,
        'three replacements plus the one that never joined, nothing more',
      );
      assert.ok(maxLive <= 4, `never more than size + surge instances alive (saw ${maxLive})`);
      // Whichever notices first says so: the PendingNode controller or the NodeVersion's planner.
      const said = (await client.list<EventLike>(Events)).items.filter(
        (e) => e.reason === 'JoinAbandoned' || (e.reason === 'NodeNeverJoined' && e.regarding?.name === nv),
      );
      assert.ok(
        said.some((e) => e.type === 'Warning' && e.note?.includes(g)),
        'a Warning event about the node that never joined',
      );
      assert.ok(pausedSeen, 'the autoscaler was paused during the rollout');
      const after = await eventually('the autoscaler restored', async () => {
        const a = await client.get<{
          spec: { enabled: boolean };
          metadata: { annotations?: Record<string, string> };
        }>(AutoscalingStrategies.type, as);
        return a.spec.enabled && !a.metadata.annotations?.['upgrade.nodewarden.dev/enabled-before-rollout']
          ? a
          : undefined;
      });
      assert.equal(after.spec.enabled, true);
    } finally {
      await cloud.call('POST', '/faults', { clear: true });
      await client.delete(AutoscalingStrategies.type, as, undefined, { ignoreNotFound: true });
      await removeFleet(client, cloud, nv, groups);
    }
  });

  it('gives the autoscaler back when the NodeVersion is deleted mid-rollout, and leaves no node cordoned', async () => {
    const nv = `delete-${run}`;
    const groups: GroupDef[] = [{ id: `${nv}-w`, role: 'Worker', size: 2 }];
    const as = `as-del-${run}`;
    try {
      await fleet(nv, groups);
      await client.create(AutoscalingStrategies.type, {
        apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
        kind: 'AutoscalingStrategy',
        metadata: { name: as },
        spec: { enabled: true, deploymentName: 'none', deploymentNamespace: ns() },
      });
      await cloud.call('POST', '/settings', { bootDelayMs: 60_000 }); // the rollout stays in flight
      await createScalingGroups(client, nv, groups);
      await createNodeVersion(client, nv, NEW_IMAGE, {});
      await eventually('the autoscaler paused', async () => {
        const a = await client.get<{ spec: { enabled: boolean } }>(AutoscalingStrategies.type, as);
        return a.spec.enabled ? undefined : true;
      });
      await client.delete(NodeVersions.type, nv);
      const restored = await eventually('the autoscaler restored', async () => {
        const a = await client.get<{
          spec: { enabled: boolean };
          metadata: { annotations?: Record<string, string> };
        }>(AutoscalingStrategies.type, as);
        return a.spec.enabled && !a.metadata.annotations?.['upgrade.nodewarden.dev/enabled-before-rollout']
          ? a
          : undefined;
      });
      assert.equal(restored.spec.enabled, true);
      await eventually('the NodeVersion gone', async () =>
        (await client.list(NodeVersions.type)).items.some((v) => v.metadata?.name === nv) ? undefined : true,
      );
      assert.ok((await groupNodes(client, groups[0]!.id)).every((n) => !n.spec?.unschedulable));
    } finally {
      await cloud.call('POST', '/settings', { bootDelayMs: 1000 });
      await client.delete(AutoscalingStrategies.type, as, undefined, { ignoreNotFound: true });
      await removeFleet(client, cloud, nv, groups);
    }
  });

  it('reports a drain blocked by a PDB past drainTimeout as Degraded, retries it, and finishes once the PDB allows', async () => {
    const nv = `pdb-${run}`;
    const groups: GroupDef[] = [{ id: `${nv}-w`, role: 'Worker', size: 1 }];
    const g = groups[0]!.id;
    try {
      await fleet(nv, groups);
      await guardedPod('solo', g);
      await createScalingGroups(client, nv, groups);
      await createNodeVersion(client, nv, NEW_IMAGE, { drainTimeout: '2s' });
      const degraded = await eventually(
        'Degraded DrainFailed',
        async () => {
          const v = await getNodeVersion(client, nv);
          const c = v.status?.conditions?.find((x) => x.type === 'Degraded');
          return c?.status === 'True' && c.reason === 'DrainFailed' ? c : undefined;
        },
        60_000,
      );
      assert.match(degraded.message, /solo/, 'the message names the pod the PDB protects');
      assert.ok((await nvEvents(nv)).some((e) => e.reason === 'DrainFailed' && e.type === 'Warning'));
      // Our failed NodeMaintenance is removed, so the old node is not left cordoned while we wait.
      await eventually('no NodeMaintenance of ours while backing off', async () => {
        const nms = (await client.list<K8sLike>(NodeMaintenances.type)).items.filter(
          (m) => m.metadata?.labels?.['upgrade.nodewarden.dev/node-version'] === nv,
        );
        return nms.length === 0 ? true : undefined;
      });
      // Let the budget allow one disruption: the retry after the backoff drains and finishes.
      await client.delete(PodDisruptionBudgets, 'solo', ns());
      await converged(nv, 120_000);
      const nodes = await groupNodes(client, g);
      assert.deepEqual(nodes.map(imageOf), [NEW_IMAGE]);
      const v = await getNodeVersion(client, nv);
      assert.equal(v.status?.conditions?.find((x) => x.type === 'Degraded')?.status, 'False');
    } finally {
      await client.delete(Deployments, 'solo', ns(), { ignoreNotFound: true });
      await removeFleet(client, cloud, nv, groups);
    }
  });

  it('says a drain blocked by a PDB at once (condition, Event, upgrade status, --wait line) and keeps waiting', async () => {
    const nv = `blocked-${run}`;
    const groups: GroupDef[] = [{ id: `${nv}-w`, role: 'Worker', size: 1 }];
    const g = groups[0]!.id;
    try {
      await fleet(nv, groups);
      const [old] = await groupNodes(client, g);
      await guardedPod('db', g);
      await createScalingGroups(client, nv, groups);
      // The default drainTimeout (30m): the drain waits, it does not fail, within this test.
      await createNodeVersion(client, nv, NEW_IMAGE, {});
      const blocked = await eventually(
        'DrainBlocked True',
        async () => {
          const c = (await getNodeVersion(client, nv)).status?.conditions?.find(
            (x) => x.type === 'DrainBlocked',
          );
          return c?.status === 'True' ? c : undefined;
        },
        60_000,
      );
      const podName = (await client.list<K8sLike>(Pods, { namespace: ns(), labelSelector: 'app=db' }))
        .items[0]?.metadata?.name;
      assert.match(blocked.message, new RegExp(`node ${old!.metadata.name}`), 'names the node');
      assert.match(blocked.message, new RegExp(`pod ${ns()}/${podName}`), 'names the pod');
      assert.match(blocked.message, new RegExp(`PodDisruptionBudget ${ns()}/db`), 'names the PDB');
      const v = await getNodeVersion(client, nv);
      const degraded = v.status?.conditions?.find((x) => x.type === 'Degraded');
      assert.equal(degraded?.status, 'False', 'blocked is not failed: drainTimeout decides that');
      assert.doesNotMatch(degraded?.message ?? '', /^no problems$/);
      const progressing = v.status?.conditions?.find((x) => x.type === 'Progressing');
      assert.equal(progressing?.status, 'True', 'the rollout keeps waiting');
      await eventually('a DrainBlocked Warning Event', async () =>
        (await nvEvents(nv)).some(
          (e) => e.reason === 'DrainBlocked' && e.type === 'Warning' && e.note === blocked.message,
        )
          ? true
          : undefined,
      );
      // The same text in `nodewarden upgrade status` and in the --wait progress line.
      let out = '';
      let err = '';
      const io = { out: { write: (c: string) => (out += c) }, err: { write: (c: string) => (err += c) } };
      const cli = (...args: string[]) =>
        upgradeCommand([...args, '--name', nv, '--kubeconfig', testKubeconfigPath()], io);
      assert.equal(await cli('status'), 0, err);
      assert.ok(out.includes(`DrainBlocked=True (EvictionBlocked): ${blocked.message}`), out);
      assert.equal(await cli('start', '--image', NEW_IMAGE, '--wait', '--timeout', '1'), 2, err);
      assert.ok(err.includes(`drain blocked: ${blocked.message}`), err);
    } finally {
      await client.delete(PodDisruptionBudgets, 'db', ns(), { ignoreNotFound: true });
      await client.delete(Deployments, 'db', ns(), { ignoreNotFound: true });
      await removeFleet(client, cloud, nv, groups);
    }
  });

  it('converges with nothing lost and no extra nodes when the operator is killed again and again mid-rollout', async () => {
    const nv = `kill-${run}`;
    const groups: GroupDef[] = [
      { id: `${nv}-wa`, role: 'Worker', size: 4 },
      { id: `${nv}-wb`, role: 'Worker', size: 4 },
    ];
    try {
      await fleet(nv, groups);
      await createScalingGroups(client, nv, groups);
      await createNodeVersion(client, nv, NEW_IMAGE, { maxSurge: 2, maxUnavailable: 2 });
      // Seeded, so a failure can be replayed: kill points 0.3–2.3 s apart.
      let seed = 7;
      const rand = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed / 2147483648;
      };
      let kills = 0;
      while (kills < 8 && !rolloutDone(await getNodeVersion(client, nv))) {
        await new Promise((r) => setTimeout(r, 300 + rand() * 2000));
        await operator?.stop('SIGKILL');
        kills++;
        start();
      }
      await converged(nv, 120_000);
      for (const g of groups) {
        const nodes = await groupNodes(client, g.id);
        assert.equal(nodes.length, g.size, `${g.id} keeps its size`);
        assert.ok(nodes.every((n) => imageOf(n) === NEW_IMAGE && isReady(n) && !n.spec?.unschedulable));
        assert.equal(
          (await cloud.instances(g.id)).length,
          2 * g.size,
          `${g.id}: no extra instance after ${kills} kills`,
        );
      }
      console.log(`# operator killed ${kills} times mid-rollout; converged`);
    } finally {
      await removeFleet(client, cloud, nv, groups);
    }
  });

  it('makes no extra node when the operator is killed after the cloud accepted a new instance and before it was recorded', async () => {
    const nv = `lost-${run}`;
    const groups: GroupDef[] = [{ id: `${nv}-w`, role: 'Worker', size: 3 }];
    const g = groups[0]!.id;
    // The operator reaches the cloud through this proxy, which creates the first instance
    // but never answers: the operator is killed with the launch in the cloud and no PendingNode.
    const held = holdingCloudProxy(cloud.endpoint, `/groups/${encodeURIComponent(g)}/instances`);
    try {
      await fleet(nv, groups);
      await operator?.stop();
      operator = startOperator([
        '--cloud-provider',
        'simulated',
        '--cloud-endpoint',
        await held.url,
        '--controllers',
        CONTROLLERS,
        '--webhook-bind-address',
        '0',
        '--maintenance-lease-namespace',
        ns(),
      ]);
      // Booting slowly, so the restarted operator meets it as an instance and not yet as a Node.
      await cloud.call('POST', '/faults', { slowBootMs: 30_000 });
      await createScalingGroups(client, nv, groups);
      await createNodeVersion(client, nv, NEW_IMAGE, { maxSurge: 1, maxUnavailable: 0 });
      const launched = await held.created;
      await operator.stop('SIGKILL');
      await cloud.call('POST', '/faults', { clear: true });
      const recorded = (await client.list<K8sLike>(PendingNodes.type)).items.map((p) => p.metadata?.name);
      assert.ok(!recorded.includes(launched), `${launched} has no PendingNode when the operator dies`);
      start();
      await converged(nv, 120_000);
      const nodes = await groupNodes(client, g);
      assert.equal(nodes.length, 3, 'the group keeps its size');
      assert.ok(
        nodes.some((n) => n.metadata.name === launched),
        `the lost launch ${launched} became a node`,
      );
      assert.equal((await cloud.instances(g)).length, 6, 'one new instance per node, none extra');
    } finally {
      held.close();
      await cloud.call('POST', '/faults', { clear: true });
      await removeFleet(client, cloud, nv, groups);
    }
  });

  it('re-targets cleanly when the image changes mid-rollout', async () => {
    const nv = `retarget-${run}`;
    const groups: GroupDef[] = [{ id: `${nv}-w`, role: 'Worker', size: 6 }];
    const g = groups[0]!.id;
    const v3 = 'nwos-3.0.0';
    try {
      await fleet(nv, groups);
      await createScalingGroups(client, nv, groups);
      await createNodeVersion(client, nv, NEW_IMAGE, { maxSurge: 2, maxUnavailable: 2 });
      await eventually('the first replacements on v2', async () => {
        const nodes = await groupNodes(client, g);
        return nodes.filter((n) => imageOf(n) === NEW_IMAGE).length >= 2 ? true : undefined;
      });
      await client.patch(NodeVersions.type, nv, undefined, { spec: { image: v3 } }, { type: 'merge' });
      await converged(nv, 180_000);
      const nodes = await groupNodes(client, g);
      assert.equal(nodes.length, 6, 'the group keeps its size');
      assert.deepEqual(
        nodes.filter((n) => imageOf(n) !== v3).map((n) => n.metadata.name),
        [],
      );
      const made = (await cloud.instances(g)).filter((i) => i.image === v3).length;
      assert.equal(made, 6, 'exactly one v3 instance per node');
    } finally {
      await removeFleet(client, cloud, nv, groups);
    }
  });
});

/**
 * An HTTP proxy to the cloud that passes every call through, except that the first POST to
 * `holdPath` reaches the cloud and its answer is kept back for good.
 */
function holdingCloudProxy(target: string, holdPath: string) {
  let resolveCreated: (name: string) => void = () => {};
  const created = new Promise<string>((r) => {
    resolveCreated = r;
  });
  let holding = false;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const upstream = await fetch(target + (req.url ?? '/'), {
      method: req.method ?? 'GET',
      headers: req.headers['content-type'] ? { 'content-type': req.headers['content-type'] } : {},
      ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
    });
    const text = await upstream.text();
    if (!holding && req.method === 'POST' && req.url === holdPath && upstream.ok) {
      holding = true;
      resolveCreated((JSON.parse(text) as { nodeName: string }).nodeName);
      return; // never answered
    }
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
  });
  const url = new Promise<string>((r) =>
    server.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
  );
  return {
    url,
    created,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

interface EventLike {
  reason?: string;
  type?: string;
  note?: string;
  regarding?: { kind?: string; name?: string };
}
interface K8sLike {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: unknown;
}
interface PodLike {
  metadata?: { deletionTimestamp?: string };
  status?: { phase?: string };
}
const running = (p: PodLike) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp;
