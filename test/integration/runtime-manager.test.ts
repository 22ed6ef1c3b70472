// The manager in-process against the real API server: probes, Prometheus
// metrics with controller-runtime's names, and Events with repeats folded
// into a series.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EventRecorder } from '../../src/runtime/events.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { ConfigMaps, Events, type K8sObject } from '../../src/runtime/resources.ts';
import { A, TICKER_LABEL, tickerController } from '../fixtures/ticker-operator.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';

const quiet = createLogger({ level: 'silent' });

describe('a running manager', () => {
  const ns = useNamespace('manager');
  const stop = new AbortController();
  let mgr: Manager;
  let running: Promise<void>;

  before(async () => {
    mgr = new Manager({
      kubeConfig: testKubeConfig(),
      metricsBindAddress: '127.0.0.1:0',
      healthProbeBindAddress: '127.0.0.1:0',
      log: quiet,
    });
    tickerController.setup(mgr, { maintenanceLeaseNamespace: 'default', clusterId: 'nwtest' });
    running = mgr.start(stop.signal);
  });

  after(async () => {
    stop.abort();
    await running;
  });

  const url = (server: 'metrics' | 'health', path: string) => {
    const a = mgr.address(server);
    if (!a) throw new Error(`${server} server not bound yet`);
    return `http://127.0.0.1:${a.port}${path}`;
  };

  it('answers /healthz at once and /readyz once its caches have synced', async () => {
    await eventually('health server', async () => (mgr.address('health') ? true : undefined));
    assert.equal((await fetch(url('health', '/healthz'))).status, 200);
    await eventually('ready', async () =>
      (await fetch(url('health', '/readyz'))).status === 200 ? true : undefined,
    );
  });

  it('reconciles through the cache and exposes controller-runtime metrics', async () => {
    await mgr.client.create(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'm', namespace: ns(), labels: { [TICKER_LABEL]: 'true' } },
      data: { count: '0', workMs: '10', periodMs: '100000' },
    });
    await eventually('ticked', async () => {
      const cm = await mgr.client.get<K8sObject & { data?: Record<string, string> }>(ConfigMaps, 'm', ns());
      return Number(cm.data?.count) >= 1 && cm.metadata?.annotations?.[A.last] === mgr.identity
        ? true
        : undefined;
    });
    const text = await (await fetch(url('metrics', '/metrics'))).text();
    for (const name of [
      'controller_runtime_reconcile_total',
      'controller_runtime_reconcile_errors_total',
      'controller_runtime_reconcile_time_seconds_bucket',
      'workqueue_depth',
      'workqueue_adds_total',
      'workqueue_queue_duration_seconds_bucket',
      'workqueue_work_duration_seconds_bucket',
      'workqueue_retries_total',
      'rest_client_requests_total',
      'process_resident_memory_bytes',
    ]) {
      assert.match(text, new RegExp(`^${name}`, 'm'), `metric ${name}`);
    }
    assert.match(
      text,
      /controller_runtime_reconcile_total\{controller="ticker",result="(success|requeue_after)"\} [1-9]/,
    );
  });
});

describe('the event recorder', () => {
  const ns = useNamespace('events');

  it('writes events.k8s.io Events and folds repeats into one series', async () => {
    const mgr = new Manager({ kubeConfig: testKubeConfig(), log: quiet });
    const recorder = new EventRecorder(mgr.client, {
      controller: 'nodewarden.dev/test',
      instance: 'test-1',
      log: quiet,
    });
    const cm = await mgr.client.create(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'subject', namespace: ns() },
    });
    for (let i = 0; i < 3; i++)
      recorder.warning(cm, 'EvictionBlocked', 'Evict', 'PDB web allows 0 disruptions');
    recorder.normal(cm, 'BeginMaintenance', 'Cordon', 'node cordoned');
    await recorder.flush();

    const events = (await mgr.client.list<K8sObject & Record<string, unknown>>(Events, { namespace: ns() }))
      .items;
    assert.equal(events.length, 2, 'three repeats became one Event');
    const blocked = events.find((e) => e.reason === 'EvictionBlocked');
    assert.equal(blocked?.type, 'Warning');
    assert.equal((blocked?.series as { count?: number } | undefined)?.count, 3);
    assert.equal((blocked?.regarding as { uid?: string } | undefined)?.uid, (cm as K8sObject).metadata?.uid);
    assert.equal(blocked?.reportingController, 'nodewarden.dev/test');
    const begin = events.find((e) => e.reason === 'BeginMaintenance');
    assert.equal(begin?.series, undefined);
    assert.equal(begin?.action, 'Cordon');
    mgr.client.close();
  });
});
