import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SharedCache } from '../../../src/runtime/cache.ts';
import { KubeClient } from '../../../src/runtime/client.ts';
import { ConfigMaps, type K8sObject, Nodes, Pods } from '../../../src/runtime/resources.ts';
import { FakeApiServer, until } from './fake-apiserver.ts';

const pod = (
  name: string,
  namespace: string,
  nodeName?: string,
  labels?: Record<string, string>,
): K8sObject => ({
  metadata: { name, namespace, ...(labels ? { labels } : {}) },
  spec: nodeName ? { nodeName } : {},
});
const names = (objs: K8sObject[]) => objs.map((o) => o.metadata?.name).sort();

describe('SharedCache', () => {
  let fake: FakeApiServer;
  let client: KubeClient;
  let cache: SharedCache;

  beforeEach(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0 });
    cache = new SharedCache(client, { backoffInitialMs: 10, backoffMaxMs: 50 });
  });
  afterEach(async () => {
    await cache.stop();
    client.close();
    await fake.stop();
  });

  it('shares one informer per type and selectors, and makes a new one when they differ', () => {
    const a = cache.informer(Pods);
    assert.equal(cache.informer(Pods), a);
    assert.equal(cache.informer(Pods, {}), a);
    assert.notEqual(cache.informer(Pods, { namespace: 'kube-system' }), a);
    assert.notEqual(cache.informer(Pods, { labelSelector: 'app=web' }), a);
    assert.notEqual(cache.informer(ConfigMaps), a);
    assert.equal(
      cache.informer(Pods, { labelSelector: 'app=web' }),
      cache.informer(Pods, { labelSelector: 'app=web' }),
    );
  });

  it('reads objects by name and lists them filtered by namespace and label selector', async () => {
    fake.upsert(Pods, pod('web-1', 'a', 'n1', { app: 'web' }));
    fake.upsert(Pods, pod('web-2', 'b', 'n1', { app: 'web', canary: 'true' }));
    fake.upsert(Pods, pod('db-1', 'a', 'n2', { app: 'db' }));
    fake.upsert(Nodes, { metadata: { name: 'n1' } });
    cache.informer(Pods);
    cache.informer(Nodes);
    cache.start();
    await cache.waitForSync();
    assert.equal(cache.hasSynced(), true);
    assert.equal(cache.get(Pods, 'web-1', 'a')?.metadata?.name, 'web-1');
    assert.equal(cache.get(Pods, 'web-1', 'b'), undefined);
    assert.equal(cache.get(Nodes, 'n1')?.metadata?.name, 'n1');
    assert.deepEqual(names(cache.list(Pods)), ['db-1', 'web-1', 'web-2']);
    assert.deepEqual(names(cache.list(Pods, { namespace: 'a' })), ['db-1', 'web-1']);
    assert.deepEqual(names(cache.list(Pods, { labelSelector: 'app=web,!canary' })), ['web-1']);
    assert.deepEqual(names(cache.list(Pods, { labelSelector: 'app in (db, cache)' })), ['db-1']);
  });

  it('answers across overlapping informers without duplicates', async () => {
    fake.upsert(Pods, pod('x', 'a', 'n1'));
    cache.informer(Pods);
    cache.informer(Pods, { namespace: 'a' });
    cache.start();
    await cache.waitForSync();
    assert.deepEqual(names(cache.list(Pods)), ['x']);
    assert.deepEqual(names(cache.podsByNode('n1')), ['x']);
  });

  it('answers with the freshest copy when one overlapping informer is behind', async () => {
    fake.upsert(Pods, pod('x', 'a', 'n1'));
    const behind = cache.informer(Pods);
    cache.start();
    await cache.waitForSync();
    await behind.stop(); // no more events: its copy of x stays as it was
    fake.upsert(Pods, pod('x', 'a', 'n2'));
    cache.informer(Pods, { namespace: 'a' });
    await cache.waitForSync();
    const node = (o?: K8sObject) => (o?.spec as { nodeName?: string } | undefined)?.nodeName;
    assert.equal(node(cache.get(Pods, 'x', 'a')), 'n2');
    assert.deepEqual(cache.list(Pods).map(node), ['n2']);
    assert.deepEqual(names(cache.podsByNode('n2')), ['x']);
    assert.deepEqual(cache.podsByNode('n1'), []);
  });

  it('refuses to read a type nobody informs on', () => {
    assert.throws(() => cache.get(ConfigMaps, 'x', 'default'), /no informer for ConfigMap/);
    assert.throws(() => cache.list(ConfigMaps), /no informer/);
  });

  it('keeps podsByNode current when a pod moves to another node and when it is deleted', async () => {
    fake.upsert(Pods, pod('p1', 'a', 'n1'));
    fake.upsert(Pods, pod('p2', 'a', 'n1'));
    fake.upsert(Pods, pod('pending', 'a'));
    cache.informer(Pods);
    cache.start();
    await cache.waitForSync();
    assert.deepEqual(names(cache.podsByNode('n1')), ['p1', 'p2']);
    assert.deepEqual(cache.podsByNode('n2'), []);
    fake.upsert(Pods, pod('p1', 'a', 'n2'));
    await until(() => cache.podsByNode('n2').length === 1, 'p1 on n2');
    assert.deepEqual(names(cache.podsByNode('n1')), ['p2']);
    fake.remove(Pods, 'p2', 'a');
    await until(() => cache.podsByNode('n1').length === 0, 'p2 gone');
    fake.upsert(Pods, pod('pending', 'a', 'n1'));
    await until(() => cache.podsByNode('n1').length === 1, 'pending scheduled');
    assert.deepEqual(names(cache.podsByNode('n1')), ['pending']);
  });

  it('builds a custom index added after sync, then updates it per event without rescanning', async () => {
    for (let i = 0; i < 20; i++) fake.upsert(Pods, pod(`p${i}`, 'a', 'n1', { team: i % 2 ? 'odd' : 'even' }));
    cache.informer(Pods);
    cache.start();
    await cache.waitForSync();
    let calls = 0;
    cache.addIndex(Pods, 'team', (o) => {
      calls++;
      const team = o.metadata?.labels?.team;
      return team ? [team] : [];
    });
    assert.equal(calls, 20, 'built once from the store');
    assert.equal(cache.byIndex(Pods, 'team', 'odd').length, 10);
    fake.upsert(Pods, pod('p1', 'a', 'n1', { team: 'even' }));
    await until(() => cache.byIndex(Pods, 'team', 'even').length === 11, 'p1 moved to even');
    assert.equal(cache.byIndex(Pods, 'team', 'odd').length, 9);
    assert.equal(calls, 21, 'only the changed object was indexed again');
    // An informer made later gets the index too.
    cache.informer(Pods, { namespace: 'a' });
    await cache.waitForSync();
    assert.equal(cache.byIndex(Pods, 'team', 'even').length, 11);
    assert.throws(() => cache.addIndex(Pods, 'team', () => []), /already registered/);
  });

  it('waitForSync waits for every informer, and stop() stops them all', async () => {
    cache.informer(Pods);
    cache.informer(Nodes);
    cache.start();
    fake.failNext(3, 503, { method: 'GET' });
    await cache.waitForSync(AbortSignal.timeout(3000));
    assert.equal(cache.informer(Pods).hasSynced() && cache.informer(Nodes).hasSynced(), true);
    await until(() => fake.openWatches === 2, 'two watches');
    await cache.stop();
    await until(() => fake.openWatches === 0, 'watches to close');
  });
});
