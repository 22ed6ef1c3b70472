// Leader election and shutdown, with real operator processes against the real
// API server: one leader at a time, fast takeover, clean handover on SIGTERM.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { CoordinationV1Api, CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { A, TICKER_LABEL } from '../fixtures/ticker-operator.ts';
import { eventually, testKubeConfig, testKubeconfigPath, useNamespace } from '../harness/cluster.ts';

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const coordination = kc.makeApiClient(CoordinationV1Api);

interface Operator {
  proc: ChildProcess;
  logs: Record<string, unknown>[];
  exited: Promise<number | null>;
  leadingSince(): number | undefined;
}

const running: Operator[] = [];
after(() => {
  for (const op of running) op.proc.kill('SIGKILL');
});

function startOperator(namespace: string, leaseName: string): Operator {
  const proc = spawn(
    process.execPath,
    [
      'test/fixtures/ticker-operator.ts',
      '--kubeconfig',
      testKubeconfigPath(),
      '--leader-elect',
      '--leader-election-namespace',
      namespace,
      '--leader-election-id',
      leaseName,
      '--metrics-bind-address',
      '127.0.0.1:0',
      '--health-probe-bind-address',
      '127.0.0.1:0',
      '--graceful-shutdown-seconds',
      '10',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const logs: Record<string, unknown>[] = [];
  let buf = '';
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    let i = buf.indexOf('\n');
    while (i >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        logs.push({ ...JSON.parse(line), at: Date.now() });
      } catch {
        // not JSON: ignore
      }
      i = buf.indexOf('\n');
    }
  });
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  const op: Operator = {
    proc,
    logs,
    exited,
    leadingSince: () => logs.find((l) => l.msg === 'became leader')?.at as number | undefined,
  };
  running.push(op);
  return op;
}

async function tickerConfigMap(namespace: string, name: string, data: Record<string, string>): Promise<void> {
  await core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name, labels: { [TICKER_LABEL]: 'true' } }, data: { count: '0', ...data } },
  });
}

const read = (namespace: string, name: string): Promise<V1ConfigMap> =>
  core.readNamespacedConfigMap({ namespace, name });

describe('leader election between two operator processes', () => {
  const ns = useNamespace('leader');

  it('lets exactly one lead, and the other take over within 20 s when the leader is killed', async (t) => {
    await tickerConfigMap(ns(), 'tick', { workMs: '150', periodMs: '100' });
    const a = startOperator(ns(), 'ticker-failover');
    await eventually('A leads', async () => a.leadingSince(), 20_000);
    const b = startOperator(ns(), 'ticker-failover');
    await eventually('A ticks', async () => {
      const cm = await read(ns(), 'tick');
      return Number(cm.data?.count) >= 3 ? cm : undefined;
    });
    await eventually('B has synced its cache and is waiting', async () =>
      b.logs.some((l) => l.msg === 'waiting for leadership') ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(b.leadingSince(), undefined, 'B must not lead while A holds the lease');

    a.proc.kill('SIGKILL');
    const killedAt = Date.now();
    const since = await eventually('B leads', async () => b.leadingSince(), 25_000);
    const takeover = since - killedAt;
    t.diagnostic(`takeover after SIGKILL of the leader: ${takeover} ms`);
    assert.ok(takeover < 20_000, `takeover took ${takeover} ms`);

    const bIdentity = (await coordination.readNamespacedLease({ namespace: ns(), name: 'ticker-failover' }))
      .spec?.holderIdentity;
    const before = Number((await read(ns(), 'tick')).data?.count);
    const cm = await eventually('B ticks', async () => {
      const c = await read(ns(), 'tick');
      return Number(c.data?.count) >= before + 3 && c.metadata?.annotations?.[A.last] === bIdentity
        ? c
        : undefined;
    });
    assert.equal(cm.metadata?.annotations?.[A.violation], undefined, 'no two reconciles overlapped');
    b.proc.kill('SIGTERM');
    assert.equal(await b.exited, 0);
  });
});

describe('shutdown on SIGTERM', () => {
  const ns = useNamespace('sigterm');

  it('finishes the reconcile in flight, releases the lease, and the next process leads at once', async (t) => {
    await tickerConfigMap(ns(), 'slow', { workMs: '3000', periodMs: '60000' });
    const a = startOperator(ns(), 'ticker-handover');
    const aIdentity = await eventually('A is mid-reconcile', async () => {
      const cm = await read(ns(), 'slow');
      return cm.metadata?.annotations?.[A.inProgress]?.split('@')[0];
    });
    a.proc.kill('SIGTERM');
    assert.equal(await a.exited, 0, 'clean exit');

    const cm = await read(ns(), 'slow');
    assert.equal(cm.metadata?.annotations?.[A.inProgress], undefined, 'nothing left half-done');
    assert.equal(cm.data?.count, '1', 'the reconcile in flight completed');
    assert.equal(cm.metadata?.annotations?.[A.last], aIdentity);
    const lease = await coordination.readNamespacedLease({ namespace: ns(), name: 'ticker-handover' });
    assert.equal(lease.spec?.holderIdentity ?? '', '', 'lease released');

    const started = Date.now();
    const b = startOperator(ns(), 'ticker-handover');
    const since = await eventually('B leads', async () => b.leadingSince(), 20_000);
    t.diagnostic(`released lease taken over in ${since - started} ms (process start included)`);
    assert.ok(since - started < 8000, `released lease taken in ${since - started} ms`);
    b.proc.kill('SIGTERM');
    assert.equal(await b.exited, 0);
  });
});
