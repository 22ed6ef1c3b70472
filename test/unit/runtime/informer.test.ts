import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { KubeClient } from '../../../src/runtime/client.ts';
import { Informer, type InformerOptions } from '../../../src/runtime/informer.ts';
import { ConfigMaps, type K8sObject, Pods } from '../../../src/runtime/resources.ts';
import { FakeApiServer, until } from './fake-apiserver.ts';

const pod = (name: string, extra: Record<string, unknown> = {}): K8sObject => ({
  metadata: { name, namespace: 'default' },
  ...extra,
});

describe('Informer', () => {
  let fake: FakeApiServer;
  let client: KubeClient;
  let inf: Informer;
  let events: string[];
  const errors: unknown[] = [];
  const reporters: string[] = [];

  const make = (opts: InformerOptions = {}) => {
    inf = new Informer(client, Pods, {
      backoffInitialMs: 10,
      backoffMaxMs: 50,
      onError: (e, informer) => {
        errors.push(e);
        reporters.push(informer);
      },
      ...opts,
    });
    inf.onAdd((o) => events.push(`add ${o.metadata?.name}`));
    inf.onUpdate((a, b) => events.push(`update ${b.metadata?.name}${a === b ? ' (resync)' : ''}`));
    inf.onDelete((o) => events.push(`delete ${o.metadata?.name}`));
    inf.start();
    return inf;
  };

  beforeEach(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), {
      qps: 0,
      retryBaseMs: 5,
      retryMaxMs: 20,
      maxRetries: 1,
    });
    events = [];
    errors.length = 0;
    reporters.length = 0;
  });
  afterEach(async () => {
    await inf?.stop();
    client.close();
    await fake.stop();
  });

  it('lists to sync, then delivers add, update and delete from the watch', async () => {
    fake.upsert(Pods, pod('a'));
    fake.upsert(Pods, pod('b'));
    make();
    assert.equal(inf.hasSynced(), false);
    await inf.waitForSync();
    assert.equal(inf.hasSynced(), true);
    assert.deepEqual(events.sort(), ['add a', 'add b']);
    events = [];
    await until(() => fake.openWatches === 1, 'the watch');
    fake.upsert(Pods, pod('c'));
    fake.upsert(Pods, pod('a', { spec: { nodeName: 'n1' } }));
    fake.remove(Pods, 'b', 'default');
    await until(() => events.length === 3, 'three events');
    assert.deepEqual(events, ['add c', 'update a', 'delete b']);
    assert.deepEqual(inf.get('a', 'default')?.spec, { nodeName: 'n1' });
    assert.equal(inf.get('b', 'default'), undefined);
    assert.equal(inf.size, 2);
  });

  it('strips managedFields from stored objects', async () => {
    fake.upsert(Pods, pod('a'));
    make();
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.upsert(Pods, pod('w'));
    await until(() => inf.size === 2, 'watched pod');
    assert.ok(fake.get(Pods, 'a', 'default')?.metadata?.managedFields, 'the server sends them');
    for (const o of inf.list()) assert.equal(o.metadata?.managedFields, undefined);
  });

  it('pages the list and watches from the list resourceVersion with bookmarks', async () => {
    for (let i = 0; i < 5; i++) fake.upsert(Pods, pod(`p${i}`));
    make({ pageSize: 2 });
    await inf.waitForSync();
    assert.equal(inf.size, 5);
    const lists = fake.requests.filter((r) => r.method === 'GET' && !r.query.get('watch'));
    assert.deepEqual(
      lists.map((r) => r.query.get('limit')),
      ['2', '2', '2'],
    );
    await until(() => fake.openWatches === 1, 'the watch');
    const w = fake.requests.find((r) => r.query.get('watch') === 'true');
    assert.equal(w?.query.get('resourceVersion'), String(fake.resourceVersion));
    assert.equal(w?.query.get('allowWatchBookmarks'), 'true');
    assert.ok(Number(w?.query.get('timeoutSeconds')) >= 300);
  });

  it('re-watches from the last seen resourceVersion (advanced by bookmarks) after a clean end, without relisting', async () => {
    make();
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.upsert(ConfigMaps, { metadata: { name: 'other', namespace: 'default' } });
    fake.bookmark();
    await until(() => inf.resourceVersion === String(fake.resourceVersion), 'the bookmark');
    fake.endWatches();
    await until(() => inf.stats.watches === 2 && fake.openWatches === 1, 'the second watch');
    const watches = fake.requests.filter((r) => r.query.get('watch') === 'true');
    assert.equal(watches[1]?.query.get('resourceVersion'), String(fake.resourceVersion));
    fake.upsert(Pods, pod('after'));
    await until(() => events.includes('add after'), 'event on the new watch');
    assert.equal(inf.stats.relists, 0);
    assert.equal(inf.stats.reconnects, 1);
  });

  for (const goneAs of ['event', 'http'] as const) {
    it(`relists on 410 Gone (${goneAs === 'event' ? 'ERROR event' : 'HTTP status'}) and emits every change missed in the gap`, async () => {
      fake.goneAs = goneAs;
      fake.upsert(Pods, pod('stays'));
      fake.upsert(Pods, pod('changes'));
      fake.upsert(Pods, pod('goes'));
      fake.upsert(Pods, pod('recreated'));
      make();
      await inf.waitForSync();
      await until(() => fake.openWatches === 1, 'the watch');
      const oldUid = inf.get('recreated', 'default')?.metadata?.uid;
      events = [];
      // The watch goes deaf while things change, then history is compacted.
      fake.stallWatches();
      fake.remove(Pods, 'goes', 'default');
      fake.upsert(Pods, pod('changes', { spec: { nodeName: 'n2' } }));
      fake.upsert(Pods, pod('new'));
      fake.remove(Pods, 'recreated', 'default');
      fake.upsert(Pods, pod('recreated'));
      fake.expire();
      fake.closeWatchesAbruptly();
      await until(() => inf.stats.relists === 1 && events.length === 5, 'the relist diff');
      assert.deepEqual(events.sort(), [
        'add new',
        'add recreated',
        'delete goes',
        'delete recreated',
        'update changes',
      ]);
      assert.notEqual(inf.get('recreated', 'default')?.metadata?.uid, oldUid);
      assert.deepEqual(
        inf
          .list()
          .map((o) => o.metadata?.name)
          .sort(),
        ['changes', 'new', 'recreated', 'stays'],
      );
      await until(() => fake.openWatches === 1, 'a fresh watch');
      fake.upsert(Pods, pod('later'));
      await until(() => events.includes('add later'), 'events after the relist');
    });
  }

  it('reconnects after an abrupt close and loses nothing sent meanwhile', async () => {
    make();
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.closeWatchesAbruptly();
    fake.upsert(Pods, pod('during'));
    await until(() => events.includes('add during'), 'the missed event');
    assert.ok(inf.stats.reconnects >= 1);
    assert.ok(inf.stats.failures >= 1, 'an abrupt close counts as a failure');
    assert.equal(inf.stats.relists, 0);
  });

  it('keeps retrying with backoff while the server fails, and recovers', async () => {
    make();
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.failNext(6, 503, { method: 'GET' });
    fake.endWatches();
    fake.upsert(Pods, pod('after-outage'));
    await until(() => events.includes('add after-outage'), 'recovery');
    assert.ok(inf.stats.failures >= 3, `failures: ${inf.stats.failures}`);
    assert.ok(errors.length >= 3, 'errors are reported to onError');
    assert.ok(
      reporters.every((r) => r === 'Pod'),
      `each names its informer: ${reporters}`,
    );
  });

  it('names itself by kind, namespace and selectors, for the logs', () => {
    const named = (opts: InformerOptions) => new Informer(client, Pods, opts).describe();
    assert.equal(named({}), 'Pod');
    assert.equal(named({ namespace: 'c1', labelSelector: 'app=web' }), 'Pod in c1 [app=web]');
    assert.equal(
      named({ labelSelector: 'a', fieldSelector: 'spec.nodeName=n1' }),
      'Pod [a,spec.nodeName=n1]',
    );
  });

  it('catchUp ends a long backoff wait and resolves once a fresh list is in the store', async () => {
    make({ backoffInitialMs: 60_000, backoffMaxMs: 60_000 });
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.endWatches(); // a watch that ends at once and empty counts as a failure
    await until(() => inf.stats.failures === 1, 'the failure');
    fake.upsert(Pods, pod('while-waiting'));
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(!events.includes('add while-waiting'), 'still waiting out the minute');
    await inf.catchUp();
    assert.ok(inf.get('while-waiting', 'default'), 'held once catchUp resolves');
  });

  it('catchUp lists afresh past a watch that went silent (a partition not yet noticed)', async () => {
    fake.upsert(Pods, pod('gone-meanwhile'));
    make();
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.stallWatches();
    fake.remove(Pods, 'gone-meanwhile', 'default');
    fake.upsert(Pods, pod('new-meanwhile'));
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(inf.get('gone-meanwhile', 'default'), 'the silent watch told nothing');
    const lists = inf.stats.lists;
    await inf.catchUp();
    assert.equal(inf.get('gone-meanwhile', 'default'), undefined);
    assert.ok(inf.get('new-meanwhile', 'default'));
    assert.equal(inf.stats.lists, lists + 1);
    assert.equal(inf.stats.failures, 0, 'a catch-up is not a failure');
    assert.ok(events.includes('delete gone-meanwhile'), 'the gap is told to handlers');
  });

  it('catchUp waits out a failing list with backoff, then resolves', async () => {
    make({ backoffInitialMs: 20, backoffMaxMs: 20 });
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.failNext(3, 503, { method: 'GET' });
    fake.upsert(Pods, pod('after'));
    await inf.catchUp();
    assert.ok(inf.get('after', 'default'));
    assert.ok(inf.stats.failures >= 1, `failures: ${inf.stats.failures}`);
  });

  it('a watchdog re-watches a stream that went silent', async () => {
    make({ watchdogMs: 200 });
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.stallWatches();
    fake.upsert(Pods, pod('unheard'));
    await until(() => events.includes('add unheard'), 'the event after the watchdog', 2000);
    assert.equal(inf.stats.watchdogFires, 1);
    assert.equal(inf.stats.failures, 0, 'a watchdog re-watch is not a failure');
  });

  it('resyncs by re-emitting update(obj, obj) for every cached object', async () => {
    fake.upsert(Pods, pod('a'));
    fake.upsert(Pods, pod('b'));
    make({ resyncMs: 40 });
    await inf.waitForSync();
    await until(() => events.filter((e) => e.endsWith('(resync)')).length >= 4, 'two resyncs');
    assert.ok(inf.stats.resyncs >= 2);
  });

  it('unsubscribes handlers, and stop() ends the watch, rejects waiters and leaves no timers', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    make({ resyncMs: 1000 });
    const seen: string[] = [];
    const off = inf.onAdd((o) => seen.push(o.metadata?.name ?? ''));
    await inf.waitForSync();
    await until(() => fake.openWatches === 1, 'the watch');
    fake.upsert(Pods, pod('one'));
    await until(() => seen.length === 1, 'first add');
    off();
    fake.upsert(Pods, pod('two'));
    await until(() => events.includes('add two'), 'second add');
    assert.deepEqual(seen, ['one']);
    await inf.stop();
    await until(() => fake.openWatches === 0, 'the watch to close');
    assert.equal(timers(), before);
  });

  it('waitForSync rejects when its signal aborts, and when the informer stops first', async () => {
    fake.failNext(1000, 503);
    make();
    await assert.rejects(inf.waitForSync(AbortSignal.timeout(50)), { name: 'TimeoutError' });
    const pending = inf.waitForSync();
    await inf.stop();
    await assert.rejects(pending, /stopped/);
    assert.equal(inf.hasSynced(), false);
  });
});
