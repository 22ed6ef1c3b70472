// The flags `nodewarden maintenance` shares with `nodewarden upgrade`:
// -o table|wide|name|json|yaml (and --json), --drain-timeout for the drain's
// bound, --timeout for how long the command waits (on start too: without
// --wait it is refused, naming --drain-timeout, where it once meant the drain).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { type NodeMaintenance, NodeMaintenances } from '../../../src/api/maintenance.ts';
import { maintenanceCommand, planStart } from '../../../src/maintenance/cli.ts';
import { Nodes } from '../../../src/runtime/resources.ts';
import { FakeApiServer } from '../runtime/fake-apiserver.ts';

describe('maintenance start: the drain bound and the wait bound', () => {
  it('--drain-timeout sets the drain bound; --wait-timeout (or --timeout elsewhere) the wait', () => {
    const plan = planStart([
      'start',
      'n',
      '--reason',
      'r',
      '--drain-timeout',
      '45m',
      '--wait',
      '--wait-timeout',
      '90',
    ]);
    assert.equal(plan.spec.timeout, '45m');
    assert.equal(plan.waitTimeoutMs, 90_000);
  });

  it('--timeout is the wait on start too, beside --drain-timeout', () => {
    const plan = planStart([
      'start',
      'n',
      '--reason',
      'r',
      '--timeout',
      '1m',
      '--drain-timeout',
      '2m',
      '--wait',
    ]);
    assert.equal(plan.spec.timeout, '2m');
    assert.equal(plan.waitTimeoutMs, 60_000);
  });

  it('refuses --timeout and --wait-timeout together: they are one flag', () => {
    assert.throws(
      () => planStart(['start', 'n', '--reason', 'r', '--timeout', '1m', '--wait-timeout', '2m', '--wait']),
      /--timeout and --wait-timeout say the same thing/,
    );
  });

  it('refuses a wait bound where nothing waits', () => {
    assert.throws(
      () => planStart(['start', 'n', '--reason', 'r', '--wait-timeout', '1m']),
      /--wait-timeout only applies with --wait/,
    );
  });
});

describe('maintenance against a loopback API server: output and flag spellings', () => {
  const T = NodeMaintenances.type;
  let fake: FakeApiServer;
  let dir: string;
  let kubeconfig: string;
  let out = '';
  let err = '';
  const io = { out: { write: (c: string) => (out += c) }, err: { write: (c: string) => (err += c) } };
  const run = (...args: string[]) => maintenanceCommand([...args, '--kubeconfig', kubeconfig], io);

  before(async () => {
    fake = await FakeApiServer.start();
    dir = mkdtempSync(join(tmpdir(), 'nw-maint-flags-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, fake.kubeConfig().exportConfig());
    fake.upsert(Nodes, { metadata: { name: 'worker-1' } });
    fake.upsert(Nodes, { metadata: { name: 'worker-2' } });
  });
  after(async () => {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    out = '';
    err = '';
    fake.remove(T, 'worker-1');
    fake.remove(T, 'worker-2');
  });

  it('start --timeout without --wait (the drain bound it once was) is refused naming --drain-timeout', async () => {
    assert.equal(await run('start', 'worker-1', '--reason', 'r', '--timeout', '10m'), 2);
    assert.match(
      err,
      /--timeout only applies with --wait .*for the drain's own bound write --drain-timeout 10m/,
    );
    assert.equal(fake.get(T, 'worker-1'), undefined);
  });

  it('start --drain-timeout sets it without a warning', async () => {
    assert.equal(await run('start', 'worker-1', '--reason', 'r', '--drain-timeout', '20m'), 0, err);
    assert.equal((fake.get(T, 'worker-1') as NodeMaintenance).spec.timeout, '20m');
    assert.equal(err, '');
  });

  it('status NODE -o yaml prints the object, without managedFields', async () => {
    assert.equal(await run('start', 'worker-1', '--reason', 'kernel'), 0, err);
    out = '';
    assert.equal(await run('status', 'worker-1', '-o', 'yaml'), 0, err);
    const obj = parse(out) as NodeMaintenance;
    assert.equal(obj.kind, 'NodeMaintenance');
    assert.equal(obj.spec.reason, 'kernel');
    assert.equal(obj.metadata.managedFields, undefined);
  });

  it('list -o yaml prints one List; --json is -o json', async () => {
    assert.equal(await run('start', 'worker-1', '--reason', 'a'), 0, err);
    assert.equal(await run('start', 'worker-2', '--reason', 'b'), 0, err);
    out = '';
    assert.equal(await run('list', '-o', 'yaml'), 0, err);
    const docs = parseAllDocuments(out);
    assert.equal(docs.length, 1);
    const list = docs[0]!.toJS() as { kind: string; items: NodeMaintenance[] };
    assert.equal(list.kind, 'List');
    assert.deepEqual(list.items.map((i) => i.spec.nodeName).sort(), ['worker-1', 'worker-2']);
    out = '';
    assert.equal(await run('list', '--json'), 0, err);
    assert.equal((JSON.parse(out) as { items: unknown[] }).items.length, 2);
  });

  it('stop --timeout without --wait is a usage error, before anything is deleted', async () => {
    assert.equal(await run('start', 'worker-1', '--reason', 'r'), 0, err);
    assert.equal(await run('stop', 'worker-1', '--timeout', '5s'), 2);
    assert.match(err, /--timeout only applies with --wait/);
    assert.ok(fake.get(T, 'worker-1'));
  });
});
