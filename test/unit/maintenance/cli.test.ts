import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { type NodeMaintenance, NodeMaintenances } from '../../../src/api/maintenance.ts';
import {
  describeMaintenance,
  detail,
  maintenanceCommand,
  parseDuration,
  planStart,
  table,
} from '../../../src/maintenance/cli.ts';
import { Nodes } from '../../../src/runtime/resources.ts';
import { FakeApiServer } from '../runtime/fake-apiserver.ts';

type Status = NonNullable<NodeMaintenance['status']>;
const nm = (status?: Status, name = 'worker-1'): NodeMaintenance => ({
  ...NodeMaintenances.make(
    { name, creationTimestamp: new Date(Date.now() - 90_000).toISOString() },
    { nodeName: 'worker-1', reason: 'kernel upgrade' },
  ),
  ...(status ? { status } : {}),
});
const blocked = (name: string, pdb?: string) => ({
  namespace: 'shop',
  name,
  ...(pdb ? { pdb } : {}),
  message: 'Cannot evict pod as it would violate the pod disruption budget.',
});

describe('planStart: flags to NodeMaintenance spec', () => {
  it('names the object after the node and writes the drain defaults explicitly', () => {
    const plan = planStart(['start', 'worker-1', '--reason', 'kernel upgrade']);
    assert.equal(plan.name, 'worker-1');
    assert.deepEqual(plan.spec, {
      nodeName: 'worker-1',
      reason: 'kernel upgrade',
      deleteEmptyDirData: true,
      evictUnmanagedPods: true,
      ignoreDaemonSets: true,
    });
    assert.equal(plan.wait, false);
    assert.equal(plan.waitTimeoutMs, undefined);
  });

  it('maps every flag to its spec field, and --name overrides the object name', () => {
    const plan = planStart([
      ...['start', 'worker-1', '--reason', 'r', '--drain-timeout', '1h30m', '--grace-period', '30'],
      ...['--pod-selector', 'app=web', '--no-delete-emptydir-data', '--no-evict-unmanaged'],
      ...['--no-ignore-daemonsets', '--name', 'nm-1', '--wait', '--wait-timeout', '2m'],
    ]);
    assert.equal(plan.name, 'nm-1');
    assert.deepEqual(plan.spec, {
      nodeName: 'worker-1',
      reason: 'r',
      timeout: '1h30m',
      gracePeriodSeconds: 30,
      podSelector: 'app=web',
      deleteEmptyDirData: false,
      evictUnmanagedPods: false,
      ignoreDaemonSets: false,
    });
    assert.equal(plan.wait, true);
    assert.equal(plan.waitTimeoutMs, 120_000);
  });

  for (const ok of ['0', '10m', '1h30m', '1.5h', '90s']) {
    it(`accepts --drain-timeout ${ok}, a value the CRD pattern allows`, () => {
      assert.equal(planStart(['start', 'n', '--reason', 'r', '--drain-timeout', ok]).spec.timeout, ok);
    });
  }
  for (const bad of ['banana', '10', '10d', '', '-1m', '1h 30m']) {
    it(`refuses --drain-timeout "${bad}" before anything is sent`, () => {
      assert.throws(
        () => planStart(['start', 'n', '--reason', 'r', '--drain-timeout', bad]),
        /--drain-timeout/,
      );
    });
  }

  it('refuses a grace period out of -1..86400 or not a whole number', () => {
    for (const bad of ['-2', '86401', '1.5', 'x'])
      assert.throws(
        () => planStart(['start', 'n', '--reason', 'r', '--grace-period', bad]),
        /--grace-period/,
      );
    assert.equal(
      planStart(['start', 'n', '--reason', 'r', '--grace-period', '-1']).spec.gracePeriodSeconds,
      -1,
    );
  });

  it('requires --reason, a NODE, and refuses unknown flags or a flag of another verb', () => {
    assert.throws(() => planStart(['start', 'n']), /--reason/);
    assert.throws(() => planStart(['start', '--reason', 'r']), /needs a NODE/);
    assert.throws(() => planStart(['start', 'n', '--reason', 'r', '--bogus']), /bogus/);
    assert.throws(
      () => planStart(['start', 'n', '--reason', 'r', '-o', 'json']),
      /--output: not a flag of start/,
    );
  });

  it('reads durations in milliseconds', () => {
    assert.equal(parseDuration('1h30m', 'x'), 5_400_000);
    assert.equal(parseDuration('1.5s', 'x'), 1500);
    assert.equal(parseDuration('0', 'x'), 0);
  });
});

describe('describeMaintenance', () => {
  it('shows a Running drain with its bar, pods left and the PDBs blocking it', () => {
    const text = describeMaintenance(
      nm({
        phase: 'Running',
        drainProgress: 50,
        pendingPods: [
          { namespace: 'shop', name: 'web-1' },
          { namespace: 'shop', name: 'web-2' },
          { namespace: 'db', name: 'pg-0' },
        ],
        blockedPods: [blocked('web-1', 'web'), blocked('web-2', 'web'), blocked('pg-0')],
      }),
    );
    assert.equal(
      text,
      '[##########----------]  50% Running, 3 pods left, waiting on PDB shop/web for 2 pods, ' +
        '1 pod blocked (shop/pg-0: Cannot evict pod as it would violate the pod disruption budget.)',
    );
  });

  it('shows a Succeeded drain as full, with the pods it evicted', () => {
    assert.equal(
      describeMaintenance(nm({ phase: 'Succeeded', drainProgress: 100, evictionPods: 12, pendingPods: [] })),
      '[####################] 100% Succeeded, node worker-1 drained, 12 pods evicted',
    );
  });

  it('shows a Failed drain with its error', () => {
    const text = describeMaintenance(
      nm({ phase: 'Failed', drainProgress: 80, lastError: 'drain timed out after 10m' }),
    );
    assert.equal(text, '[################----]  80% Failed, error: drain timed out after 10m');
  });

  it('says the operator has not picked up an object without status', () => {
    assert.match(describeMaintenance(nm()), /0% Pending, waiting for the operator/);
  });
});

describe('status and list output', () => {
  it('status details pods, blocked pods with their PDB, conditions with reasons and the error', () => {
    const text = detail(
      nm({
        phase: 'Running',
        drainProgress: 50,
        totalPods: 10,
        evictionPods: 4,
        pendingPods: [
          { namespace: 'shop', name: 'web-1' },
          { namespace: 'shop', name: 'web-2' },
        ],
        blockedPods: [blocked('web-1', 'web')],
        conditions: [
          {
            type: 'Drained',
            status: 'False',
            reason: 'PodsBlocked',
            message: '1 pod',
            lastTransitionTime: '2030-01-01T00:00:00Z',
          },
        ],
        lastError: 'eviction refused',
        startTime: new Date().toISOString(),
      }),
    );
    assert.match(text, /^Phase: +Running$/m);
    assert.match(text, /^Pods: +10 total, 4 to evict, 2 evicted, 2 pending$/m);
    assert.match(text, /^Blocked: +shop\/web-1 by PDB shop\/web: Cannot evict/m);
    assert.match(text, /^Conditions: +Drained=False \(PodsBlocked\): 1 pod$/m);
    assert.match(text, /^Last error: +eviction refused$/m);
    assert.match(text, /^Started: +\S+ \(0s ago\)$/m);
    assert.match(text, /^Age: +90s$/m);
  });

  it('list prints kubectl-get columns', () => {
    const lines = table([nm({ phase: 'Running', drainProgress: 50 })]).split('\n');
    assert.match(lines[0] ?? '', /^NAME +NODE +PHASE +PROGRESS +REASON +AGE$/);
    assert.match(lines[1] ?? '', /^worker-1 +worker-1 +Running +50% +kernel upgrade +90s$/);
  });
});

describe('maintenanceCommand against a loopback API server', () => {
  const T = NodeMaintenances.type;
  let fake: FakeApiServer;
  let dir: string;
  let kubeconfig: string;
  let out: string;
  let err: string;
  const io = { out: { write: (c: string) => (out += c) }, err: { write: (c: string) => (err += c) } };
  const run = (...args: string[]) => maintenanceCommand([...args, '--kubeconfig', kubeconfig], io);
  const until = async (what: string, cond: () => boolean) => {
    for (let i = 0; !cond(); i++) {
      if (i > 500) assert.fail(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const setStatus = (name: string, status: Status) => fake.upsert(T, { ...fake.get(T, name), status });

  before(async () => {
    fake = await FakeApiServer.start();
    dir = mkdtempSync(join(tmpdir(), 'nw-maint-cli-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, fake.kubeConfig().exportConfig());
    fake.upsert(Nodes, { metadata: { name: 'worker-1' } });
  });
  after(async () => {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    out = '';
    err = '';
    fake.remove(T, 'worker-1');
  });

  it('start --wait follows the watch until Succeeded, printing each new state once', async () => {
    const done = run('start', 'worker-1', '--reason', 'r', '--wait', '--wait-timeout', '20s');
    await until('the object', () => fake.get(T, 'worker-1') !== undefined);
    setStatus('worker-1', { phase: 'Running', drainProgress: 50, blockedPods: [blocked('web-1', 'web')] });
    await until('the PDB in the progress', () => err.includes('waiting on PDB shop/web for 1 pod'));
    setStatus('worker-1', { phase: 'Running', drainProgress: 50, blockedPods: [blocked('web-1', 'web')] });
    setStatus('worker-1', { phase: 'Succeeded', drainProgress: 100 });
    assert.equal(await done, 0);
    assert.match(out, /nodemaintenance\/worker-1 created/);
    const lines = err.trimEnd().split('\n');
    assert.equal(lines.filter((l) => l.includes('Running')).length, 1, err); // written twice, shown once
    assert.match(lines.at(-1) ?? '', /100% Succeeded/);
    assert.ok(
      fake.requests.some((r) => r.query.get('watch') === 'true'),
      'it watched',
    );
  });

  it('start --wait polls when the server refuses the watch, and exits 1 with the error when Failed', async () => {
    Reflect.set(fake, 'watch', (_r: unknown, _q: unknown, res: http.ServerResponse) => {
      res.writeHead(403, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'no watch for you' }),
      );
    });
    try {
      const done = run('start', 'worker-1', '--reason', 'r', '--wait', '--wait-timeout', '20s');
      await until('the object', () => fake.get(T, 'worker-1') !== undefined);
      setStatus('worker-1', { phase: 'Failed', drainProgress: 10, lastError: 'drain timed out after 10m' });
      assert.equal(await done, 1);
      assert.match(err, /Failed, error: drain timed out after 10m/);
    } finally {
      Reflect.deleteProperty(fake, 'watch'); // back to the prototype's method
    }
  });

  it('start --wait gives up with exit 2 at --wait-timeout and says the drain goes on', async () => {
    assert.equal(await run('start', 'worker-1', '--reason', 'r', '--wait', '--wait-timeout', '1s'), 2);
    assert.match(err, /stopped waiting after 1s; the drain goes on/);
  });

  it('prints the server refusal and exits 1 when the object already exists', async () => {
    assert.equal(await run('start', 'worker-1', '--reason', 'first'), 0);
    assert.equal(await run('start', 'worker-1', '--reason', 'second'), 1);
    assert.match(err, /the API server refused: .*already exists; nothing created/);
    assert.equal((fake.get(T, 'worker-1') as NodeMaintenance).spec.reason, 'first');
  });

  it('refuses a node that does not exist, creating nothing', async () => {
    assert.equal(await run('start', 'worker-9', '--reason', 'r'), 1);
    assert.match(err, /node "worker-9" not found; nothing created/);
    assert.equal(fake.get(T, 'worker-9'), undefined);
  });

  it('stop finds the maintenance by spec.nodeName whatever its name, and --wait sees it gone', async () => {
    assert.equal(await run('start', 'worker-1', '--reason', 'r', '--name', 'custom'), 0);
    assert.equal(await run('stop', 'worker-1', '--wait'), 0);
    assert.equal(fake.get(T, 'custom'), undefined);
    assert.match(out, /nodemaintenance\/custom deleted/);
    assert.match(err, /node worker-1 is schedulable again/);
  });

  it('exits 2 on a usage error without contacting the server', async () => {
    const before = fake.requests.length;
    assert.equal(await run('list', '--reason', 'x'), 2);
    assert.equal(await run('status', '-o', 'xml'), 2);
    assert.equal(await run('frobnicate'), 2);
    assert.match(err, /--reason: not a flag of list/);
    assert.match(err, /--output must be table, wide, name, json or yaml/);
    assert.equal(fake.requests.length, before);
  });
});
