// A replica that takes the lease acts on a cache listed afresh, not on one whose
// watches went silent before it led (a partition it had not noticed); and it does
// not wait for good on lists the API server keeps refusing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Controller } from '../../../src/runtime/controller.ts';
import { LeaderElector } from '../../../src/runtime/leader.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import { Manager, type ManagerOptions } from '../../../src/runtime/manager.ts';
import { ConfigMaps } from '../../../src/runtime/resources.ts';
import { until, useFakeApiServer } from './fake-apiserver.ts';

const TIMES = { leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 100 };
const quiet = createLogger({ level: 'silent' });
const cm = (name: string) => ({ metadata: { name, namespace: 'ns' } });

describe('Manager taking the lease', () => {
  const t = useFakeApiServer({ retryBaseMs: 5, retryMaxMs: 20 });

  /** A manager whose one controller records the ConfigMaps its cache holds at each reconcile. */
  const recordingManager = (over: Partial<ManagerOptions> = {}) => {
    const mgr = new Manager({
      kubeConfig: t.fake.kubeConfig(),
      client: { qps: 0, retryBaseMs: 5, retryMaxMs: 20 },
      leaderElection: { enabled: true, namespace: 'ns', name: 'lock', ...TIMES },
      metricsBindAddress: '0',
      healthProbeBindAddress: '0',
      gracefulShutdownMs: 0,
      log: quiet,
      ...over,
    });
    const seen: string[][] = [];
    mgr.cache.informer(ConfigMaps);
    const c = new Controller({
      name: 'records',
      log: quiet,
      reconcile: async () => {
        seen.push(mgr.cache.list(ConfigMaps).map((o) => o.metadata?.name ?? ''));
        return {};
      },
    });
    c.enqueue({ name: 'any' });
    mgr.add(c);
    return { mgr, seen };
  };

  it('lists every informer afresh before its controllers run', async () => {
    t.fake.upsert(ConfigMaps, cm('deleted-while-silent'));
    const other = new LeaderElector(t.client, { namespace: 'ns', name: 'lock', identity: 'other', ...TIMES });
    assert.equal(await other.tryAcquireOrRenew(), true);
    const { mgr, seen } = recordingManager();
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      await until(() => mgr.cache.hasSynced() && t.fake.openWatches > 0, 'the standby cache', 10_000);
      t.fake.stallWatches();
      t.fake.remove(ConfigMaps, 'deleted-while-silent', 'ns');
      t.fake.upsert(ConfigMaps, cm('made-while-silent'));
      await until(() => seen.length > 0, 'the first reconcile as leader', 10_000);
      assert.deepEqual(seen[0], ['made-while-silent']);
    } finally {
      stop.abort();
      await running;
    }
  });

  it('starts its controllers on the cache as it is when the lists stay refused past the limit', async () => {
    t.fake.upsert(ConfigMaps, cm('held'));
    const other = new LeaderElector(t.client, { namespace: 'ns', name: 'lock', identity: 'other', ...TIMES });
    assert.equal(await other.tryAcquireOrRenew(), true);
    const { mgr, seen } = recordingManager({ catchUpTimeoutMs: 500 });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      await until(() => mgr.cache.hasSynced() && t.fake.openWatches > 0, 'the standby cache', 10_000);
      // Lists of ConfigMaps refused from now on, as when RBAC is taken away.
      t.fake.failNext(1_000_000, 403, { method: 'GET', path: '/configmaps?' });
      await until(() => seen.length > 0, 'the first reconcile as leader', 10_000);
      assert.deepEqual(seen[0], ['held']);
    } finally {
      stop.abort();
      await running;
    }
  });
});
