// A replica that takes the lease while its watches were cut holds a stale cache:
// maintenances the last leader finished and deleted are still in it. Found by the
// fault soak (seed 20261124 with both cores busy): the new leader re-cordoned a
// node the old one had restored, for a maintenance that no longer existed. Here
// the reconciler is handed such a cache, the API server being the real one.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Maintenance, type NodeMaintenance, NodeMaintenances } from '../../src/api/maintenance.ts';
import { NodeMaintenanceReconciler } from '../../src/maintenance/controller.ts';
import { nodeLeaseName } from '../../src/maintenance/lease.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { EventRecorder } from '../../src/runtime/events.ts';
import type { CacheReader } from '../../src/runtime/host.ts';
import { rootLogger } from '../../src/runtime/log.ts';
import type { ReconcileContext } from '../../src/runtime/reconcile.ts';
import { type K8sObject, Leases, Namespaces, Nodes, type ResourceType } from '../../src/runtime/resources.ts';
import { testKubeConfig } from '../harness/cluster.ts';

const NM = NodeMaintenances.type;
const NS = `stale-${Date.now().toString(36)}`;
const NODE = 'worker-004';
const client = KubeClient.fromKubeConfig(testKubeConfig());
type Nm = NodeMaintenance & K8sObject;
type NodeObj = K8sObject & { spec?: { unschedulable?: boolean; taints?: { key: string }[] } };

/** A cache that holds `nm` as it was, and every Node as it is now. */
function staleCache(nm: Nm, node: NodeObj): CacheReader {
  const get = (type: ResourceType, name: string) =>
    type.kind === 'NodeMaintenance' && name === nm.metadata.name
      ? nm
      : type.kind === 'Node' && name === node.metadata?.name
        ? node
        : undefined;
  return {
    get: get as CacheReader['get'],
    list: (() => []) as CacheReader['list'],
    byIndex: (() => []) as CacheReader['byIndex'],
    podsByNode: (() => []) as CacheReader['podsByNode'],
  };
}

const reconciler = (cache: CacheReader) =>
  new NodeMaintenanceReconciler(
    {
      client,
      cache,
      events: new EventRecorder(client, { controller: 'test', instance: 'stale-cache' }),
      log: rootLogger,
    },
    { lease: { namespace: NS, holder: 'nodewarden-maintenance', durationSeconds: 3600 } },
  );

const ctx = (): ReconcileContext => ({
  controller: 'nodemaintenance',
  log: rootLogger,
  signal: new AbortController().signal,
});

/** A maintenance as the last leader left it mid-drain, then deleted: the stale copy. */
async function finishedElsewhere(name: string, extra: Partial<Nm['metadata']> = {}): Promise<Nm> {
  const made = await client.create<Nm>(
    NM,
    NodeMaintenances.make({ name }, { nodeName: NODE, reason: 'stale' }),
  );
  await client.delete(NM, name);
  return {
    ...made,
    metadata: { ...made.metadata, finalizers: [Maintenance.finalizer], ...extra },
    status: { phase: 'Running', nodeWasSchedulable: true },
  } as Nm;
}

const nodeNow = () => client.get<NodeObj>(Nodes, NODE);
const ours = (n: NodeObj) => (n.spec?.taints ?? []).some((t) => t.key === Maintenance.drainTaint.key);

before(async () => {
  await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
});
after(async () => {
  await client.patch(Nodes, NODE, undefined, { spec: { unschedulable: null } }, { type: 'merge' });
  await client.delete(Namespaces, NS, undefined, { ignoreNotFound: true });
});

describe('the maintenance reconciler against a stale cache', () => {
  it('does not cordon a node for a maintenance the API server no longer has', async () => {
    const node = await nodeNow();
    assert.notEqual(node.spec?.unschedulable, true, `${NODE} starts schedulable`);
    const stale = await finishedElsewhere('stale-enter');
    const result = await reconciler(staleCache(stale, node)).reconcile({ name: 'stale-enter' }, ctx());
    assert.deepEqual(result ?? {}, {});
    const after = await nodeNow();
    assert.notEqual(after.spec?.unschedulable, true, 'left schedulable');
    assert.equal(ours(after), false, 'no maintenance taint');
    await assert.rejects(client.get(Leases, nodeLeaseName(NODE), NS), (e: unknown) => isNotFound(e));
  });

  it('does not restore a node for a maintenance the API server no longer has', async () => {
    // A newer maintenance (or an admin) has the node cordoned now.
    await client.patch(Nodes, NODE, undefined, { spec: { unschedulable: true } }, { type: 'merge' });
    const stale = await finishedElsewhere('stale-finish', { deletionTimestamp: new Date().toISOString() });
    await reconciler(staleCache(stale, await nodeNow())).reconcile({ name: 'stale-finish' }, ctx());
    assert.equal((await nodeNow()).spec?.unschedulable, true, 'still cordoned');
  });

  it('restores the node as the API server holds it, when the cache never saw the cordon', async () => {
    // Found by the fault soak (seed 20261124, run 12 of 12): a replica whose watches a
    // partition had cut took the lease and finished a deleted maintenance from a cached
    // Node without the cordon the last leader made; it patched nothing, removed the
    // finalizer, and left the node cordoned with no owner.
    await client.patch(Nodes, NODE, undefined, { spec: { unschedulable: null } }, { type: 'merge' });
    const uncordoned = await nodeNow();
    await client.create<Nm>(NM, {
      ...NodeMaintenances.make({ name: 'stale-node' }, { nodeName: NODE, reason: 'stale node' }),
      metadata: { name: 'stale-node', finalizers: [Maintenance.finalizer] },
    } as Nm);
    const cordon = {
      metadata: { labels: { [Maintenance.excludeFromRemediationLabel]: 'true' } },
      spec: { unschedulable: true, taints: [Maintenance.unschedulableTaint, Maintenance.drainTaint] },
    };
    await client.patch(Nodes, NODE, undefined, cordon, { type: 'merge' });
    await client.delete(NM, 'stale-node');
    const deleting = await client.get<Nm>(NM, 'stale-node');
    const cached = { ...deleting, status: { phase: 'Succeeded', nodeWasSchedulable: true } } as Nm;
    try {
      await reconciler(staleCache(cached, uncordoned)).reconcile({ name: 'stale-node' }, ctx());
      const node = await nodeNow();
      assert.notEqual(node.spec?.unschedulable, true, 'uncordoned');
      assert.equal(ours(node), false, 'our taints removed');
      await assert.rejects(client.get(NM, 'stale-node'), (e: unknown) => isNotFound(e), 'finalizer removed');
    } finally {
      await client
        .patch(NM, 'stale-node', undefined, { metadata: { finalizers: null } }, { type: 'merge' })
        .catch(() => {});
      await client.patch(
        Nodes,
        NODE,
        undefined,
        {
          metadata: { labels: { [Maintenance.excludeFromRemediationLabel]: null } },
          spec: { unschedulable: null, taints: null },
        },
        { type: 'merge' },
      );
    }
  });

  it('records the node as schedulable as the API server holds it, when the cache still shows the last cordon', async () => {
    // Found by the fault soak (seed 424242, 2026-11-26): a maintenance that took the node's
    // lease just after the last one ended recorded the node as already unschedulable from a
    // cache that had not seen that one's uncordon, so at its end it left the node cordoned.
    await client.patch(Nodes, NODE, undefined, { spec: { unschedulable: null } }, { type: 'merge' });
    const live = await nodeNow();
    const stillCordoned = { ...live, spec: { ...live.spec, unschedulable: true } };
    const made = await client.create<Nm>(NM, {
      ...NodeMaintenances.make({ name: 'stale-record' }, { nodeName: NODE, reason: 'next one' }),
      metadata: { name: 'stale-record', finalizers: [Maintenance.finalizer] },
    } as Nm);
    try {
      await reconciler(staleCache(made, stillCordoned)).reconcile({ name: 'stale-record' }, ctx());
      const got = await client.get<Nm>(NM, 'stale-record');
      assert.equal(got.status?.nodeWasSchedulable, true, 'recorded from the live node');
    } finally {
      await client.patch(
        NM,
        'stale-record',
        undefined,
        { metadata: { finalizers: null } },
        { type: 'merge' },
      );
      await client.delete(NM, 'stale-record', undefined, { ignoreNotFound: true });
      await client.delete(Leases, nodeLeaseName(NODE), NS, { ignoreNotFound: true });
    }
  });

  it('acts on a maintenance the API server holds as cached', async () => {
    await client.patch(Nodes, NODE, undefined, { spec: { unschedulable: null } }, { type: 'merge' });
    const live = await client.create<Nm>(
      NM,
      NodeMaintenances.make({ name: 'current' }, { nodeName: NODE, reason: 'now' }),
    );
    try {
      await reconciler(staleCache(live, await nodeNow())).reconcile({ name: 'current' }, ctx());
      const got = await client.get<Nm>(NM, 'current');
      assert.deepEqual(
        got.metadata.finalizers,
        [Maintenance.finalizer],
        'took it on: the finalizer is added',
      );
    } finally {
      await client.patch(NM, 'current', undefined, { metadata: { finalizers: null } }, { type: 'merge' });
      await client.delete(NM, 'current', undefined, { ignoreNotFound: true });
    }
  });
});
