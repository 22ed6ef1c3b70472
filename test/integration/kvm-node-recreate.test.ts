// A node's Deployment removed and wanted again while the controller-manager is stopped and its
// watches come back too old (etcd compacted, the API server restarted), against a real
// kube-controller-manager: the product's own applier and node planner must end with one
// Deployment whose one ReplicaSet holds the one pod, nothing of the old one left.
// Seed 424242 at 200 nodes (2026-11-27) ended with VM pods of ReplicaSets whose Deployment was
// gone, never deleted. The cause read from upstream code: a background delete frees the name at
// once; made again under it before the garbage collector's informer catches up, a relist hands it
// the two as one update of the same key, and the graph keeps the old owner alive for good
// (client-go 0.37 processReplacedAllInfo, graph_builder.go processGraphChanges). Deleted in the
// foreground, the Deployment keeps its name until its ReplicaSets and pods are gone, and the
// planner makes the node again only then. This file proves that path converges with the real
// garbage collector; it did not make the old path fail here (the relist was not forced), which the
// unit tables (act/apply, plan/node-changes) pin instead. A cluster of its own: the test stops its
// controller-manager and restarts its API server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kwokctl } from '../../src/cluster/kwokctl.ts';
import type { LocalClusters } from '../../src/cluster/local-cluster.ts';
import { ObjectApplier } from '../../src/kvm/act/apply.ts';
import { planNodeChanges } from '../../src/kvm/plan/node-changes.ts';
import { type DeploymentObject, deploymentView } from '../../src/kvm/plan/views.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Deployments, type K8sObject, Namespaces, Pods, ReplicaSets } from '../../src/runtime/resources.ts';
import { eventually } from '../harness/cluster.ts';
import { openLocalClusters, upWithCompactedWatches } from '../harness/local-clusters.ts';

const NAME = 'nwtest-gc';
const NS = 'kvm-gc';
const LABELS = { 'kvm.nodewarden.dev/role': 'worker', 'kvm.nodewarden.dev/node-id': 'w3' };

const deployment = (version: string): K8sObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'worker-w3', namespace: NS, labels: LABELS },
  spec: {
    replicas: 1,
    strategy: { type: 'Recreate' },
    selector: { matchLabels: LABELS },
    template: {
      metadata: { labels: LABELS, annotations: { version } },
      spec: { containers: [{ name: 'vm', image: 'localhost/nodewarden-vm:test' }] },
    },
  },
});

type Owned = K8sObject & { metadata: { ownerReferences?: Array<{ uid: string }> } };

/** Compacts etcd's history up to its current revision, through its JSON gateway. */
async function compactEtcd(clusterDir: string): Promise<void> {
  const conf = readFileSync(join(clusterDir, 'kwok.yaml'), 'utf8');
  const url = /--advertise-client-urls=(http:\/\/[^\s,]+)/.exec(conf)?.[1];
  assert.ok(url, 'no etcd client URL in kwok.yaml');
  const post = async (path: string, body: unknown) =>
    (await (await fetch(url + path, { method: 'POST', body: JSON.stringify(body) })).json()) as {
      header?: { revision?: string };
    };
  const head = await post('/v3/kv/range', { key: Buffer.from('/registry/').toString('base64'), limit: 1 });
  await post('/v3/kv/compaction', { revision: head.header?.revision, physical: true });
}

const ownerOf = (o: Owned) => o.metadata.ownerReferences?.[0]?.uid;
/** One Deployment, not being deleted, one ReplicaSet it owns, one pod that ReplicaSet owns. */
function ownsAll(ds: readonly K8sObject[], sets: readonly Owned[], pods: readonly Owned[]): boolean {
  const [d] = ds;
  const [rs] = sets;
  const [pod] = pods;
  if (ds.length !== 1 || sets.length !== 1 || pods.length !== 1 || !d || !rs || !pod) return false;
  return (
    !d.metadata?.deletionTimestamp && ownerOf(rs) === d.metadata?.uid && ownerOf(pod) === rs.metadata.uid
  );
}

describe('a node Deployment made again while the garbage collector relists', () => {
  let clusters: LocalClusters;
  let admin: KubeClient;
  let applier: ObjectApplier;
  let kwokctl: Kwokctl;

  before(async () => {
    clusters = await openLocalClusters({ quiet: true });
    await upWithCompactedWatches(
      clusters,
      NAME,
      ['deployments.apps', 'replicasets.apps'],
      // Stopped for seconds below, it must not lose a lease and restart: a fresh one rebuilds its
      // graph from lists and would find the old ReplicaSet's owner gone.
      ['kube-controller-manager=leader-elect=false'],
    );
    admin = KubeClient.fromKubeConfig(clusters.kubeConfig(NAME));
    applier = new ObjectApplier(admin);
    kwokctl = new Kwokctl(clusters.binaries(), dirname(dirname(clusters.dir(NAME))));
    await admin.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  });

  after(async () => {
    const pid = kwokctl?.componentPid(NAME, 'kube-controller-manager');
    if (pid) process.kill(pid, 'SIGCONT');
    admin?.close();
    await clusters?.delete(NAME);
  });

  const live = async () => (await admin.list<DeploymentObject>(Deployments, { namespace: NS })).items;
  const replicaSets = async () => (await admin.list<Owned>(ReplicaSets, { namespace: NS })).items;
  const pods = async () => (await admin.list<Owned>(Pods, { namespace: NS })).items;
  /** One pass of the product's decision: remove the node when unwanted, make it when wanted and absent. */
  const reconcile = async (wanted: boolean) => {
    const desired = wanted ? [{ name: 'worker-w3', deployment: deployment('v2') }] : [];
    const plan = planNodeChanges(desired as never, (await live()).map(deploymentView));
    for (const r of plan.remove) await applier.delete('Deployment', r.name, NS);
    for (const n of plan.create) await applier.applyFresh(n.deployment as K8sObject);
  };

  it("leaves one ReplicaSet and one pod, the new Deployment's", async () => {
    await applier.apply(deployment('v1'));
    await eventually('the first pod', async () => ((await pods()).length === 1 ? true : undefined), 30_000);
    const kcm = kwokctl.componentPid(NAME, 'kube-controller-manager');
    assert.ok(kcm, 'the controller-manager runs');
    process.kill(kcm, 'SIGSTOP');
    await reconcile(false);
    await reconcile(true);
    // Its watches break, and come back too old: etcd is compacted past them.
    await compactEtcd(clusters.dir(NAME));
    await kwokctl.stopComponent(NAME, 'kube-apiserver');
    await kwokctl.mustRun(['--name', NAME, 'start', 'cluster']);
    await eventually('the API server back', () => admin.list(Namespaces).catch(() => undefined), 60_000, 500);
    await sleep(5000);
    process.kill(kcm, 'SIGCONT');
    // Settled: one Deployment, not being deleted, whose one ReplicaSet holds the one pod, for 10 s.
    let since: number | undefined;
    await eventually(
      "only the Deployment's own ReplicaSet and pod, for 10 s",
      async () => {
        await reconcile(true);
        const ok = ownsAll(await live(), await replicaSets(), await pods());
        since = ok ? (since ?? Date.now()) : undefined;
        return since !== undefined && Date.now() - since >= 10_000 ? true : undefined;
      },
      90_000,
      1000,
    ).catch(async (err: Error) => {
      const sets = (await replicaSets()).map(
        (s) => `${s.metadata.name} owner ${s.metadata.ownerReferences?.[0]?.uid}`,
      );
      const ds = (await live()).map(
        (d) => `${d.metadata?.uid}${d.metadata?.deletionTimestamp ? ' (deleting)' : ''}`,
      );
      const ps = (await pods()).map(
        (p) => `${p.metadata.name} owner ${p.metadata.ownerReferences?.[0]?.uid}`,
      );
      throw new Error(`${err.message}; Deployments: ${ds}; ReplicaSets: ${sets}; pods: ${ps}`);
    });
  });
});
