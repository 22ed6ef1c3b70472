// The shared cache against a real API server, through outages: it must
// always converge to the server's state — no event lost — whatever breaks.
// A cluster of its own, since these tests restart its API server and etcd.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import type { LocalClusters } from '../../src/cluster/local-cluster.ts';
import { SharedCache } from '../../src/runtime/cache.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import type { Informer } from '../../src/runtime/informer.ts';
import { ConfigMaps, Namespaces, objectKey } from '../../src/runtime/resources.ts';
import { eventually } from '../harness/cluster.ts';
import { openLocalClusters, upWithCompactedWatches } from '../harness/local-clusters.ts';
import { TcpProxy } from '../harness/tcp-proxy.ts';

const NAME = 'nwtest-watch';
const NS = 'watched';

describe('the shared cache through outages', () => {
  let clusters: LocalClusters;
  let admin: KubeClient;
  let proxy: TcpProxy;
  let cache: SharedCache;
  let informer: Informer;

  before(async () => {
    clusters = await openLocalClusters({ quiet: true });
    await upWithCompactedWatches(clusters, NAME, ['configmaps']);
    const kc = clusters.kubeConfig(NAME);
    admin = KubeClient.fromKubeConfig(kc);
    await admin.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    // The controller-manager publishes kube-root-ca.crt into every namespace; wait for it so
    // its arrival is not mistaken for an event of the scenarios below.
    await eventually('kube-root-ca.crt', () => admin.get(ConfigMaps, 'kube-root-ca.crt', NS), 30_000);

    const server = new URL(kc.getCurrentCluster()!.server);
    proxy = await new TcpProxy({ host: server.hostname, port: Number(server.port) }).start();
    const proxied = new KubeConfig();
    proxied.loadFromString(kc.exportConfig());
    proxied.clusters = proxied.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${proxy.port}` }));
    cache = new SharedCache(KubeClient.fromKubeConfig(proxied), { watchdogMs: 4000, backoffMaxMs: 1000 });
    informer = cache.informer(ConfigMaps, { namespace: NS });
    cache.start();
    await cache.waitForSync();
  });

  after(async () => {
    await cache?.stop();
    await proxy?.close();
    admin?.close();
    await clusters?.delete(NAME);
  });

  /** name → resourceVersion, from the server and from the cache; equal when converged. */
  async function converged(): Promise<boolean | undefined> {
    const server = await admin.listAll(ConfigMaps, { namespace: NS });
    const want = new Map(server.items.map((o) => [objectKey(o), o.metadata?.resourceVersion]));
    const have = new Map(
      cache.list(ConfigMaps, { namespace: NS }).map((o) => [objectKey(o), o.metadata?.resourceVersion]),
    );
    if (want.size !== have.size) return undefined;
    for (const [k, rv] of want) if (have.get(k) !== rv) return undefined;
    return true;
  }

  const cm = (name: string, v: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: NS },
    data: { v },
  });

  it('sees every add, update and delete while connected', async () => {
    const deleted: string[] = [];
    const stopWatching = informer.onDelete((o) => deleted.push(o.metadata?.name ?? ''));
    for (let i = 0; i < 20; i++) await admin.create(ConfigMaps, cm(`cm-${i}`, '0'));
    await admin.patch(ConfigMaps, 'cm-0', NS, { data: { v: '1' } }, { type: 'merge' });
    await admin.delete(ConfigMaps, 'cm-1', NS);
    await eventually('cache converged', converged, 15_000);
    await eventually('delete event seen', async () => (deleted.includes('cm-1') ? true : undefined));
    stopWatching();
    assert.deepEqual(cache.get(ConfigMaps, 'cm-0', NS)?.data, { v: '1' });
    assert.equal(
      cache.get(ConfigMaps, 'cm-0', NS)?.metadata?.managedFields,
      undefined,
      'managedFields stripped',
    );
  });

  it('relists after a partition long enough for etcd compaction (410), emitting the deletes it missed', async (t) => {
    const deleted = new Set<string>();
    const added = new Set<string>();
    const offDelete = informer.onDelete((o) => deleted.add(o.metadata?.name ?? ''));
    const offAdd = informer.onAdd((o) => added.add(o.metadata?.name ?? ''));
    const relistsBefore = informer.stats.relists;
    proxy.cut();
    for (let i = 2; i < 7; i++) await admin.delete(ConfigMaps, `cm-${i}`, NS);
    for (let i = 7; i < 12; i++)
      await admin.patch(ConfigMaps, `cm-${i}`, NS, { data: { v: 'changed' } }, { type: 'merge' });
    for (let i = 100; i < 105; i++) await admin.create(ConfigMaps, cm(`cm-${i}`, 'new'));
    for (let i = 0; i < 100; i++)
      await admin.patch(ConfigMaps, 'cm-19', NS, { data: { v: String(i) } }, { type: 'merge' });
    await sleep(6000); // three compactions
    proxy.restore();
    await eventually('cache converged', converged, 30_000);
    offDelete();
    offAdd();
    t.diagnostic(
      `relists: ${informer.stats.relists - relistsBefore}, reconnects: ${informer.stats.reconnects}`,
    );
    assert.ok(informer.stats.relists > relistsBefore, 'the stale resourceVersion forced a relist');
    assert.deepEqual([...deleted].sort(), ['cm-2', 'cm-3', 'cm-4', 'cm-5', 'cm-6']);
    assert.deepEqual([...added].sort(), ['cm-100', 'cm-101', 'cm-102', 'cm-103', 'cm-104']);
  });

  it('converges after the API server and etcd restart', async () => {
    await clusters.down(NAME);
    await sleep(1500);
    await clusters.up({ name: NAME });
    await admin.create(ConfigMaps, cm('after-restart', 'x'));
    await admin.delete(ConfigMaps, 'cm-12', NS);
    await eventually('cache converged', converged, 40_000);
    assert.ok(cache.get(ConfigMaps, 'after-restart', NS));
    assert.equal(cache.get(ConfigMaps, 'cm-12', NS), undefined);
  });

  it('keeps delivering after an idle period longer than its watchdog', async (t) => {
    const fired = informer.stats.watchdogFires;
    await sleep(9000);
    await admin.create(ConfigMaps, cm('after-idle', 'x'));
    await eventually('cache converged', converged, 15_000);
    t.diagnostic(`watchdog re-watches during the idle period: ${informer.stats.watchdogFires - fired}`);
    assert.ok(cache.get(ConfigMaps, 'after-idle', NS));
  });
});
