// The drain library against a real API server: what the Eviction API answers
// when PDBs allow, refuse or cannot decide, and a drain run step by step.
// Only pods and PDBs in the suite's own namespace, pinned to worker-005; nodes
// are never cordoned (other suites share them).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DrainTracker, drainStep, evictPod, evictPods, type Pod } from '../../src/drain/index.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import {
  Deployments,
  type K8sObject,
  PodDisruptionBudgets,
  Pods,
  ReplicaSets,
} from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';

const NODE = 'worker-005';

describe('evicting pods through the Eviction API', () => {
  const ns = useNamespace('drain');
  let client: KubeClient;

  before(() => {
    client = KubeClient.fromKubeConfig(testKubeConfig());
  });
  after(() => client?.close());

  const podSpec = {
    nodeSelector: { 'kubernetes.io/hostname': NODE },
    containers: [{ name: 'app', image: 'example/app:1' }],
  };

  async function deployment(app: string, replicas: number): Promise<void> {
    await client.create(Deployments, {
      metadata: { name: app, namespace: ns() },
      spec: {
        replicas,
        selector: { matchLabels: { app } },
        template: { metadata: { labels: { app } }, spec: podSpec },
      },
    });
  }

  async function unmanagedPod(name: string, labels: Record<string, string>): Promise<void> {
    await client.create(Pods, { metadata: { name, namespace: ns(), labels }, spec: podSpec });
  }

  async function pdb(name: string, app: string, budget: { minAvailable?: number; maxUnavailable?: number }) {
    await client.create(PodDisruptionBudgets, {
      metadata: { name, namespace: ns() },
      spec: { ...budget, selector: { matchLabels: { app } } },
    });
  }

  /** Pods with the label, once `n` of them run Ready on the node. */
  async function runningPods(app: string, n: number): Promise<Pod[]> {
    return eventually(`${n} ready ${app} pods`, async () => {
      const { items } = await client.list<Pod>(Pods, { namespace: ns(), labelSelector: `app=${app}` });
      const ready = items.filter(
        (p) =>
          p.spec?.nodeName === NODE &&
          !p.metadata?.deletionTimestamp &&
          (p.status?.conditions as { type: string; status: string }[] | undefined)?.some(
            (c) => c.type === 'Ready' && c.status === 'True',
          ),
      );
      return ready.length === n ? ready : undefined;
    });
  }

  /** Waits until the disruption controller has seen the PDB and `healthy` pods under it. */
  async function pdbSynced(name: string, healthy: number): Promise<void> {
    await eventually(`PDB ${name} status`, async () => {
      const p = await client.get<K8sObject>(PodDisruptionBudgets, name, ns());
      const s = p.status as { observedGeneration?: number; currentHealthy?: number } | undefined;
      return s?.observedGeneration === p.metadata?.generation && s?.currentHealthy === healthy
        ? true
        : undefined;
    });
  }

  it('is refused (429) by a PDB that allows no disruption, and names the PDB', async () => {
    await deployment('full', 3);
    await pdb('full-pdb', 'full', { minAvailable: 3 });
    const [p] = await runningPods('full', 3);
    await pdbSynced('full-pdb', 3);
    const out = await evictPod(client, p!);
    assert.equal(out.result, 'blocked');
    assert.equal(out.result === 'blocked' && out.pdb, 'full-pdb');
    assert.match(out.result === 'blocked' ? out.message : '', /disruption budget/);
  });

  it('lets one pod go under maxUnavailable 1, then refuses the next', async () => {
    // A bare ReplicaSet, so its template can be changed without a rollout: replacements are
    // then unschedulable. Otherwise kwok makes a replacement Ready in milliseconds and the
    // budget reopens before the second eviction (which retries a PDB conflict after 500 ms).
    await client.create(ReplicaSets, {
      metadata: { name: 'one', namespace: ns() },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'one' } },
        template: { metadata: { labels: { app: 'one' } }, spec: podSpec },
      },
    });
    await pdb('one-pdb', 'one', { maxUnavailable: 1 });
    const [a, b] = await runningPods('one', 3);
    await pdbSynced('one-pdb', 3);
    const nowhere = { 'kubernetes.io/hostname': 'no-such-node' };
    await client.patch(
      ReplicaSets,
      'one',
      ns(),
      { spec: { template: { spec: { nodeSelector: nowhere } } } },
      { type: 'merge' },
    );
    assert.deepEqual(await evictPod(client, a!), { result: 'evicted' });
    const second = await evictPod(client, b!);
    assert.equal(second.result, 'blocked');
    assert.equal(second.result === 'blocked' && second.pdb, 'one-pdb');
  });

  it('evicts many pods at once, each answered on its own', async () => {
    await deployment('many', 2);
    await pdb('many-pdb', 'many', { minAvailable: 2 });
    const pods = await runningPods('many', 2);
    await pdbSynced('many-pdb', 2);
    const ghost: Pod = { metadata: { name: 'many-ghost', namespace: ns(), uid: 'x' } };
    const outcomes = await evictPods(client, [...pods, ghost]);
    assert.deepEqual(
      [...outcomes.values()].map((o) => o.result),
      ['blocked', 'blocked', 'gone'],
    );
  });

  it('fails (500) a pod that two PDBs cover', async () => {
    await unmanagedPod('multi', { app: 'multi' });
    await pdb('multi-a', 'multi', { minAvailable: 0 });
    await pdb('multi-b', 'multi', { minAvailable: 0 });
    const [p] = await runningPods('multi', 1);
    // No wait for PDB status: the server counts matching budgets before it reads any status.
    const out = await evictPod(client, p!);
    assert.equal(out.result, 'error');
    assert.match(out.result === 'error' ? out.message : '', /more than one PodDisruptionBudget/);
  });

  it('evicts an unmanaged pod, which then terminates', async () => {
    await unmanagedPod('bare', { app: 'bare' });
    const [p] = await runningPods('bare', 1);
    assert.deepEqual(await evictPod(client, p!, { gracePeriodSeconds: 0 }), { result: 'evicted' });
    await eventually('bare pod gone or terminating', async () => {
      const got = await client.get<Pod>(Pods, 'bare', ns()).catch(() => undefined);
      return !got || got.metadata?.deletionTimestamp ? true : undefined;
    });
  });

  it('reports a pod that does not exist as gone (404)', async () => {
    const ghost: Pod = { metadata: { name: 'no-such-pod', namespace: ns(), uid: 'x' } };
    assert.deepEqual(await evictPod(client, ghost), { result: 'gone' });
  });

  it('drains pods step by step, each step returning at once, until done', async () => {
    for (const name of ['step-a', 'step-b', 'step-c']) await unmanagedPod(name, { app: 'step' });
    await runningPods('step', 3);
    const tracker = new DrainTracker();
    const opts = { podSelector: 'app=step', gracePeriodSeconds: 0 };
    let evicted = 0;
    let steps = 0;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { items } = await client.list<Pod>(Pods, {
        namespace: ns(),
        fieldSelector: `spec.nodeName=${NODE}`,
      });
      const started = performance.now();
      const step = await drainStep(client, tracker, items, opts);
      assert.ok(performance.now() - started < 5000, 'a step never waits for pods to go');
      evicted += step.evictedNow;
      steps++;
      assert.deepEqual(step.errors, []);
      if (step.done) {
        assert.equal(step.drainProgress, 100);
        assert.equal(step.evictionPods, 3);
        break;
      }
      assert.ok(Date.now() < deadline, `drain not done in 60 s: ${JSON.stringify(step.pending)}`);
      await sleep(step.nextCheckMs);
    }
    assert.equal(evicted, 3, 'each pod evicted exactly once');
    assert.ok(steps >= 2, 'the first step fires evictions and returns before the pods are gone');
  });
});
