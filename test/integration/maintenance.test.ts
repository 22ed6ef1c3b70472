// NodeMaintenance end to end: the operator (as a separate process) against the
// real API server, scheduler and controller-manager, with kwok pods. Ports the
// anchor's controller and e2e scenarios and adds the ones its users hit.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Maintenance, type NodeMaintenance, NodeMaintenances } from '../../src/api/maintenance.ts';
import { nodeLeaseName } from '../../src/maintenance/lease.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import {
  DaemonSets,
  Deployments,
  Events,
  type K8sObject,
  Leases,
  Namespaces,
  Nodes,
  PodDisruptionBudgets,
  Pods,
} from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';

const NM = NodeMaintenances.type;
const NS = `maint-${Date.now().toString(36)}`;
const client = KubeClient.fromKubeConfig(testKubeConfig());
// biome-ignore lint/suspicious/noExplicitAny: tests reach into arbitrary fields of API objects
type Obj = K8sObject & Record<string, any>;

let operator: OperatorProcess;
// The webhook is exercised in maintenance-webhook.test.ts; here the controller alone.
const startMaintenanceOperator = () =>
  startOperator([
    '--controllers',
    'nodemaintenance',
    '--maintenance-lease-namespace',
    NS,
    '--webhook-bind-address',
    '0',
  ]);

before(async () => {
  await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  operator = startMaintenanceOperator();
});

after(
  async () => {
    try {
      for (const nm of (await client.list<Obj>(NM)).items) {
        await client.delete(NM, nm.metadata!.name!, undefined, { ignoreNotFound: true });
      }
      try {
        await eventually(
          'maintenances gone',
          async () => ((await client.list(NM)).items.length === 0 ? true : undefined),
          30_000,
        );
      } catch (err) {
        const left = (await client.list<Obj>(NM)).items.map(
          (o) =>
            `${o.metadata?.name} ${o.metadata?.deletionTimestamp} ${JSON.stringify(o.metadata?.finalizers)} ${o.status?.phase}`,
        );
        const { writeFileSync } = await import('node:fs');
        writeFileSync(
          '/tmp/maintenance-operator.log',
          operator.logs.map((l) => JSON.stringify(l)).join('\n'),
        );
        throw new Error(
          `${String(err)}; left: ${left.join(', ')} (operator log in /tmp/maintenance-operator.log)`,
        );
      }
    } finally {
      // Always stop the operator and give the nodes back, even when the cleanup above failed.
      operator.proc.kill('SIGKILL');
      for (const n of ['worker-000', 'worker-001', 'worker-002', 'worker-003', 'worker-005']) {
        await setCordon(n, false).catch(() => {});
      }
      await client.delete(Namespaces, NS, undefined, { ignoreNotFound: true }).catch(() => {});
      client.close();
    }
  },
  { timeout: 120_000 },
);

async function setCordon(node: string, unschedulable: boolean): Promise<void> {
  await client.patch(
    Nodes,
    node,
    undefined,
    { spec: { unschedulable: unschedulable || null } },
    { type: 'merge' },
  );
}

async function startMaintenance(
  name: string,
  nodeName: string,
  spec: Record<string, unknown> = {},
): Promise<void> {
  await client.create(NM, {
    apiVersion: NodeMaintenances.apiVersion,
    kind: 'NodeMaintenance',
    metadata: { name },
    spec: { nodeName, reason: 'integration test', ...spec },
  });
}

/** Deletes a maintenance and waits until the operator has let it go (node restored, finalizer removed). */
async function stopMaintenance(name: string): Promise<void> {
  await client.delete(NM, name, undefined, { ignoreNotFound: true });
  await eventually(
    `${name} gone`,
    async () => ((await client.list(NM)).items.some((o) => o.metadata?.name === name) ? undefined : true),
    30_000,
  );
}

const get = (name: string) => client.get<NodeMaintenance & Obj>(NM, name);
const phaseIs = (name: string, phase: string) => async () => {
  const nm = await get(name);
  return nm.status?.phase === phase ? nm : undefined;
};

async function podsOn(node: string, selector?: string): Promise<Obj[]> {
  const pods = await client.list<Obj>(Pods, {
    namespace: NS,
    fieldSelector: `spec.nodeName=${node}`,
    labelSelector: selector,
  });
  return pods.items;
}

/** Deployment whose pods all land on `node`: the other workers are cordoned while it rolls out. */
async function deploymentOn(nodes: string[], name: string, replicas: number): Promise<void> {
  const others = ['worker-000', 'worker-001', 'worker-002', 'worker-003', 'worker-004', 'worker-005'].filter(
    (n) => !nodes.includes(n),
  );
  for (const n of others) await setCordon(n, true);
  try {
    await client.create(Deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: NS },
      spec: {
        replicas,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            containers: [{ name: 'c', image: 'example/app:1' }],
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: 'kubernetes.io/hostname',
                whenUnsatisfiable: 'ScheduleAnyway',
                labelSelector: { matchLabels: { app: name } },
              },
            ],
          },
        },
      },
    });
    await eventually(
      `${name} ready`,
      async () => {
        const d = await client.get<Obj>(Deployments, name, NS);
        return d.status?.readyReplicas === replicas ? true : undefined;
      },
      60_000,
    );
  } finally {
    for (const n of others) await setCordon(n, false);
  }
}

/** Creates a PDB for an app and waits until the disruption controller counts `healthy` pods under it. */
async function pdbFor(app: string, spec: Record<string, unknown>, healthy: number): Promise<void> {
  await client.create(PodDisruptionBudgets, {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: app, namespace: NS },
    spec: { ...spec, selector: { matchLabels: { app } } },
  });
  await eventually(`PDB ${app} sees ${healthy} healthy`, async () => {
    const pdb = await client.get<Obj>(PodDisruptionBudgets, app, NS);
    return pdb.status?.currentHealthy === healthy ? true : undefined;
  });
}

/** Samples the ready, non-terminating pods of an app until stopped; returns the minimum seen. */
function watchHealthy(app: string): { stop(): Promise<number> } {
  let min = Number.POSITIVE_INFINITY;
  let running = true;
  const loop = (async () => {
    while (running) {
      const pods = (await client.list<Obj>(Pods, { namespace: NS, labelSelector: `app=${app}` })).items;
      const healthy = pods.filter(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          p.status?.conditions?.some((c: Obj) => c.type === 'Ready' && c.status === 'True'),
      ).length;
      min = Math.min(min, healthy);
      await sleep(50);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return min;
    },
  };
}

async function eventReasons(name: string): Promise<string[]> {
  const all = await client.list<Obj>(Events, {});
  return all.items
    .filter((e) => e.regarding?.name === name && e.regarding?.kind === 'NodeMaintenance')
    .map((e) => e.reason);
}

describe('NodeMaintenance', () => {
  it('cordons, taints, labels, takes the lease and drains by eviction without ever violating the PDB', async (t) => {
    await deploymentOn(['worker-000'], 'web', 4);
    await pdbFor('web', { maxUnavailable: 1 }, 4);
    await client.create(DaemonSets, {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: NS },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: { containers: [{ name: 'a', image: 'example/agent:1' }] },
        },
      },
    });
    for (const [name, volumes] of [
      ['unmanaged', []],
      ['scratch', [{ name: 'tmp', emptyDir: {} }]],
    ] as const) {
      await client.create(Pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS, labels: { app: name } },
        spec: {
          nodeName: 'worker-000',
          containers: [{ name: 'c', image: 'example/x:1' }],
          volumes: [...volumes],
        },
      });
    }
    await eventually('daemonset pod on worker-000', async () =>
      (await podsOn('worker-000', 'app=agent')).length === 1 ? true : undefined,
    );

    const healthy = watchHealthy('web');
    const t0 = Date.now();
    await startMaintenance('m-worker-000', 'worker-000');
    const nm = await eventually('Succeeded', phaseIs('m-worker-000', 'Succeeded'), 90_000);
    t.diagnostic(`drained 6 pods (4 behind a maxUnavailable=1 PDB) in ${Date.now() - t0} ms`);
    assert.ok((await healthy.stop()) >= 3, 'never fewer than 3 of 4 web pods healthy (maxUnavailable 1)');

    assert.equal(nm.status?.drainProgress, 100);
    assert.equal(nm.status?.evictionPods, 6, '4 web + unmanaged + emptyDir; the DaemonSet pod is left alone');
    assert.equal(nm.status?.totalPods, 7);
    assert.deepEqual(nm.status?.pendingPods, []);
    assert.equal(nm.status?.observedGeneration, nm.metadata?.generation);
    for (const type of ['Cordoned', 'Drained', 'Ready']) {
      assert.equal(nm.status?.conditions?.find((c) => c.type === type)?.status, 'True', `condition ${type}`);
    }
    const node = await client.get<Obj>(Nodes, 'worker-000');
    assert.equal(node.spec?.unschedulable, true);
    const taintKeys = (node.spec?.taints ?? []).map((x: Obj) => x.key);
    assert.ok(
      taintKeys.includes(Maintenance.drainTaint.key) &&
        taintKeys.includes(Maintenance.unschedulableTaint.key),
    );
    assert.equal(node.metadata?.labels?.[Maintenance.excludeFromRemediationLabel], 'true');
    const lease = await client.get<Obj>(Leases, nodeLeaseName('worker-000'), NS);
    assert.equal(lease.spec?.holderIdentity, 'nodewarden-maintenance');
    assert.deepEqual(
      (await podsOn('worker-000')).map((p) => p.metadata?.labels?.app),
      ['agent'],
    );
    await eventually('events', async () => {
      const r = await eventReasons('m-worker-000');
      return r.includes('BeginMaintenance') && r.includes('SucceedMaintenance') ? true : undefined;
    });

    await client.delete(NM, 'm-worker-000');
    await eventually(
      'maintenance removed',
      async () => {
        try {
          await get('m-worker-000');
          return undefined;
        } catch (err) {
          return isNotFound(err) ? true : undefined;
        }
      },
      30_000,
    );
    const back = await client.get<Obj>(Nodes, 'worker-000');
    assert.notEqual(back.spec?.unschedulable, true, 'uncordoned');
    assert.ok(
      !(back.spec?.taints ?? []).some((x: Obj) => x.key === Maintenance.drainTaint.key),
      'drain taint removed',
    );
    assert.equal(back.metadata?.labels?.[Maintenance.excludeFromRemediationLabel], undefined);
    await assert.rejects(
      client.get(Leases, nodeLeaseName('worker-000'), NS),
      (e) => isNotFound(e),
      'lease released',
    );
    await eventually('RemovedMaintenance', async () =>
      (await eventReasons('m-worker-000')).includes('RemovedMaintenance') ? true : undefined,
    );
  });

  it('keeps a node cordoned if someone else cordoned it first', async () => {
    await setCordon('worker-001', true);
    await startMaintenance('m-worker-001', 'worker-001');
    const nm = await eventually('Succeeded', phaseIs('m-worker-001', 'Succeeded'), 60_000);
    assert.equal(nm.status?.nodeWasSchedulable, false);
    await client.delete(NM, 'm-worker-001');
    await eventually(
      'removed',
      async () =>
        (await client.list(NM)).items.every((o) => o.metadata?.name !== 'm-worker-001') || undefined,
      30_000,
    );
    const node = await client.get<Obj>(Nodes, 'worker-001');
    assert.equal(node.spec?.unschedulable, true, 'still cordoned, as its owner left it');
    assert.ok(
      !(node.spec?.taints ?? []).some((x: Obj) => x.key === Maintenance.drainTaint.key),
      'our taint is gone',
    );
    await setCordon('worker-001', false);
  });

  it('fails with a clear error for a node that does not exist, and can still be deleted', async () => {
    await startMaintenance('m-ghost', 'no-such-node');
    const nm = await eventually('Failed', phaseIs('m-ghost', 'Failed'), 30_000);
    assert.equal(nm.status?.lastError, 'nodes "no-such-node" not found');
    await eventually('FailedMaintenance event', async () =>
      (await eventReasons('m-ghost')).includes('FailedMaintenance') ? true : undefined,
    );
    await client.delete(NM, 'm-ghost');
    await eventually(
      'deleted',
      async () => (await client.list(NM)).items.every((o) => o.metadata?.name !== 'm-ghost') || undefined,
      30_000,
    );
  });

  it('fails a spec it cannot act on (a podSelector that does not parse) without ever touching the node', async () => {
    // No webhook here (--webhook-bind-address 0): the object gets past admission, as it would
    // with the webhook down. Every change to the node is watched, from before the object exists.
    const node = 'worker-004';
    const start = await client.get<Obj>(Nodes, node);
    const ours = (n: Obj) =>
      n.spec?.unschedulable === true ||
      (n.spec?.taints ?? []).some(
        (t: Obj) => t.key === Maintenance.drainTaint.key || t.key === Maintenance.unschedulableTaint.key,
      ) ||
      n.metadata?.labels?.[Maintenance.excludeFromRemediationLabel] !== undefined;
    assert.equal(ours(start), false, `${node} starts out of maintenance`);
    const touched: string[] = [];
    const stopWatching = new AbortController();
    const watching = (async () => {
      for await (const ev of client.watch<Obj>(Nodes, {
        fieldSelector: `metadata.name=${node}`,
        resourceVersion: start.metadata?.resourceVersion,
        signal: stopWatching.signal,
      }))
        if (ev.type !== 'BOOKMARK' && ours(ev.object))
          touched.push(
            `${ev.type} rv ${ev.object.metadata?.resourceVersion}: ${JSON.stringify(ev.object.spec)}`,
          );
    })().catch((err: unknown) => {
      if (!stopWatching.signal.aborted) touched.push(`watch ended: ${String(err)}`);
    });

    await startMaintenance('m-bad-selector', node, { podSelector: 'app in ((' });
    const nm = await eventually('Failed', phaseIs('m-bad-selector', 'Failed'), 30_000);
    // Give a controller that would go on (cordon, taint, lease) the time to do it.
    await sleep(3000);
    stopWatching.abort();
    await watching;
    assert.deepEqual(touched, [], `${node} was never cordoned, tainted or labelled`);
    const lease = await client
      .get(Leases, nodeLeaseName(node), NS)
      .catch((err) => (isNotFound(err) ? null : err));
    assert.equal(lease, null, 'no node lease taken');
    assert.match(
      nm.status?.lastError ?? '',
      /^invalid spec: spec\.podSelector: podSelector "app in \(\(" is not a label selector: .*e\.g\. "app=web"/,
    );
    const ready = nm.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.reason, 'InvalidSpec');
    assert.equal(ready?.observedGeneration, nm.metadata?.generation);
    assert.equal(
      nm.status?.conditions?.find((c) => c.type === 'Cordoned'),
      undefined,
      'never cordoned',
    );
    await eventually('FailedMaintenance event', async () =>
      (await eventReasons('m-bad-selector')).includes('FailedMaintenance') ? true : undefined,
    );
    assert.equal(ours(await client.get<Obj>(Nodes, node)), false);
    await stopMaintenance('m-bad-selector');
  });

  it('waits for a pod that is slow to terminate without holding up other maintenances', async () => {
    await client.create(Pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'slow', namespace: NS, finalizers: ['nodewarden.dev/test-hold'] },
      spec: { nodeName: 'worker-002', containers: [{ name: 'c', image: 'example/slow:1' }] },
    });
    await client.create(Pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'quick', namespace: NS },
      spec: { nodeName: 'worker-003', containers: [{ name: 'c', image: 'example/quick:1' }] },
    });
    await startMaintenance('m-worker-002', 'worker-002');
    await startMaintenance('m-worker-003', 'worker-003');
    await eventually(
      'worker-003 Succeeded while worker-002 waits',
      phaseIs('m-worker-003', 'Succeeded'),
      60_000,
    );
    await eventually('worker-002 waits on the slow pod', async () => {
      const nm = await get('m-worker-002');
      return nm.status?.phase === 'Running' && nm.status.pendingPods?.some((p) => p.name === 'slow')
        ? nm
        : undefined;
    });
    await sleep(1500);
    assert.equal(
      (await get('m-worker-002')).status?.phase,
      'Running',
      'still waiting while the pod terminates',
    );
    await client.patch(Pods, 'slow', NS, { metadata: { finalizers: null } }, { type: 'merge' });
    await eventually(
      'worker-002 Succeeded once the pod is gone',
      phaseIs('m-worker-002', 'Succeeded'),
      60_000,
    );
    await stopMaintenance('m-worker-002');
    await stopMaintenance('m-worker-003');
  });
  it('reports the PDB that blocks it, and resumes after the operator is killed mid-drain', async (t) => {
    await deploymentOn(['worker-001'], 'api', 3);
    await pdbFor('api', { minAvailable: 3 }, 3);
    await startMaintenance('m-api', 'worker-001');
    const blocked = await eventually(
      'blocked by the PDB',
      async () => {
        const nm = await get('m-api');
        return nm.status?.blockedPods?.length === 3 ? nm : undefined;
      },
      30_000,
    );
    assert.ok(
      blocked.status?.blockedPods?.every((b) => b.pdb === 'api'),
      JSON.stringify(blocked.status?.blockedPods),
    );
    assert.equal(blocked.status?.conditions?.find((c) => c.type === 'Drained')?.reason, 'EvictionBlocked');
    await eventually('EvictionBlocked event', async () =>
      (await eventReasons('m-api')).includes('EvictionBlocked') ? true : undefined,
    );

    operator.proc.kill('SIGKILL');
    await operator.exited;
    const healthy = watchHealthy('api');
    await client.patch(PodDisruptionBudgets, 'api', NS, { spec: { minAvailable: 2 } }, { type: 'merge' });
    const t0 = Date.now();
    operator = startMaintenanceOperator();
    const done = await eventually('Succeeded after the restart', phaseIs('m-api', 'Succeeded'), 60_000);
    t.diagnostic(`resumed and drained in ${Date.now() - t0} ms after the restart`);
    assert.ok((await healthy.stop()) >= 2, 'the PDB (minAvailable 2) held throughout');
    assert.ok((done.status?.evictionPods ?? 0) >= 3, 'the 3 api pods (and any other pod that landed there)');
    assert.equal((await podsOn('worker-001', 'app=api')).length, 0);
    await client.delete(NM, 'm-api');
    await eventually(
      'restored',
      async () => {
        const node = await client.get<Obj>(Nodes, 'worker-001');
        const tainted = (node.spec?.taints ?? []).some((x: Obj) => x.key === Maintenance.drainTaint.key);
        return !tainted && node.spec?.unschedulable !== true ? true : undefined;
      },
      30_000,
    );
  });

  it('drains two nodes of one Deployment at once without breaking its PDB', async () => {
    await deploymentOn(['worker-002', 'worker-003'], 'shared', 4);
    await pdbFor('shared', { maxUnavailable: 1 }, 4);
    const healthy = watchHealthy('shared');
    await startMaintenance('m-shared-a', 'worker-002');
    await startMaintenance('m-shared-b', 'worker-003');
    await eventually(
      'both Succeeded',
      async () => {
        const a = await get('m-shared-a');
        const b = await get('m-shared-b');
        return a.status?.phase === 'Succeeded' && b.status?.phase === 'Succeeded' ? true : undefined;
      },
      90_000,
    );
    assert.ok((await healthy.stop()) >= 3, 'never more than one of 4 pods down');
    assert.equal(
      (await podsOn('worker-002', 'app=shared')).length + (await podsOn('worker-003', 'app=shared')).length,
      0,
    );
    await stopMaintenance('m-shared-a');
    await stopMaintenance('m-shared-b');
  });
  it('waits while another holder has the node lease, without touching the node', async () => {
    const now = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
    await client.create(Leases, {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: nodeLeaseName('worker-005'), namespace: NS },
      spec: {
        holderIdentity: 'node-healthcheck',
        leaseDurationSeconds: 3600,
        acquireTime: now,
        renewTime: now,
      },
    });
    await startMaintenance('m-leased', 'worker-005');
    const waiting = await eventually('waiting on the lease', async () => {
      const nm = await get('m-leased');
      return nm.status?.lastError?.includes('node-healthcheck') ? nm : undefined;
    });
    assert.notEqual(waiting.status?.phase, 'Succeeded');
    assert.equal(waiting.status?.conditions?.find((c) => c.type === 'Ready')?.reason, 'LeaseHeldElsewhere');
    assert.notEqual((await client.get<Obj>(Nodes, 'worker-005')).spec?.unschedulable, true, 'not cordoned');
    await client.delete(Leases, nodeLeaseName('worker-005'), NS);
    await eventually('Succeeded once the lease is free', phaseIs('m-leased', 'Succeeded'), 30_000);
    await stopMaintenance('m-leased');
  });
  it('fails with a clear error when its node is deleted mid-maintenance, and can still be deleted', async () => {
    await client.create(Nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'doomed',
        labels: { 'kubernetes.io/hostname': 'doomed' },
        annotations: { 'kwok.x-k8s.io/node': 'fake' },
      },
      status: {
        allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
      },
    });
    await startMaintenance('m-doomed', 'doomed');
    await eventually('Succeeded', phaseIs('m-doomed', 'Succeeded'), 30_000);
    await client.delete(Nodes, 'doomed');
    const failed = await eventually('Failed', phaseIs('m-doomed', 'Failed'), 30_000);
    assert.equal(failed.status?.lastError, 'nodes "doomed" not found');
    await stopMaintenance('m-doomed');
    await assert.rejects(
      client.get(Leases, nodeLeaseName('doomed'), NS),
      (e) => isNotFound(e),
      'lease released',
    );
  });
});
