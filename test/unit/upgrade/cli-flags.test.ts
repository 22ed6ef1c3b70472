// The flags `nodewarden upgrade` shares with `nodewarden maintenance`:
// -o table|json|yaml (and --json), --timeout (or --wait-timeout) for how long
// the command waits, --drain-timeout for the drain's bound.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { type NodeVersion, NodeVersions } from '../../../src/api/upgrade.ts';
import { planStart, upgradeCommand } from '../../../src/upgrade/cli.ts';
import { FakeApiServer } from '../runtime/fake-apiserver.ts';

describe('upgrade start: the wait bound under both spellings', () => {
  it('--wait-timeout is --timeout', () => {
    assert.equal(planStart(['start', '--image', 'i', '--wait', '--wait-timeout', '2m']).timeoutMs, 120_000);
    assert.throws(
      () => planStart(['start', '--image', 'i', '--wait', '--wait-timeout', '2m', '--timeout', '60']),
      /--wait-timeout and --timeout say the same thing|--timeout and --wait-timeout say the same thing/,
    );
    assert.throws(
      () => planStart(['start', '--image', 'i', '--wait-timeout', '60']),
      /--wait-timeout only applies with --wait/,
    );
  });
});

describe('upgrade against a loopback API server: -o yaml', () => {
  const T = NodeVersions.type;
  let fake: FakeApiServer;
  let dir: string;
  let kubeconfig: string;
  let out = '';
  let err = '';
  const io = { out: { write: (c: string) => (out += c) }, err: { write: (c: string) => (err += c) } };
  const run = (...args: string[]) => upgradeCommand([...args, '--kubeconfig', kubeconfig], io);
  const until = async (what: string, cond: () => boolean) => {
    for (let i = 0; !cond(); i++) {
      if (i > 500) assert.fail(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  before(async () => {
    fake = await FakeApiServer.start();
    dir = mkdtempSync(join(tmpdir(), 'nw-upgrade-flags-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, fake.kubeConfig().exportConfig());
  });
  after(async () => {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    out = '';
    err = '';
    fake.remove(T, 'default');
  });

  it('status -o yaml prints the NodeVersion without managedFields', async () => {
    assert.equal(await run('start', '--image', 'img-1', '--drain-timeout', '10m'), 0, err);
    out = '';
    assert.equal(await run('status', '-o', 'yaml'), 0, err);
    const nv = parse(out) as NodeVersion;
    assert.equal(nv.kind, 'NodeVersion');
    assert.equal(nv.spec.image, 'img-1');
    assert.equal(nv.spec.strategy?.drainTimeout, '10m');
    assert.equal(nv.metadata.managedFields, undefined);
  });

  it('status --watch -o yaml prints one document per change, and stops at --wait-timeout', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    out = '';
    const done = run('status', '--watch', '-o', 'yaml', '--wait-timeout', '2');
    await until('the first document', () => out.includes('img-1'));
    const nv = fake.get(T, 'default') as NodeVersion;
    fake.upsert(T, { ...nv, status: { counts: { total: 3, upToDate: 3, outdated: 0 } } });
    await until('the second document', () => out.includes('upToDate: 3'));
    assert.equal(await done, 0, err);
    const docs = parseAllDocuments(out).map((d) => d.toJS() as NodeVersion);
    assert.equal(docs.length, 2, out);
    assert.equal(docs[1]?.status?.counts?.upToDate, 3);
  });

  it('list -o yaml prints every object as one List', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    out = '';
    assert.equal(await run('list', '-o', 'yaml'), 0, err);
    const list = parse(out) as { kind: string; items: { kind: string }[] };
    assert.equal(list.kind, 'List');
    assert.deepEqual(
      list.items.map((i) => i.kind),
      ['NodeVersion'],
    );
  });

  it('refuses -o with --json, and an unknown format, without contacting the server', async () => {
    const before = fake.requests.length;
    assert.equal(await run('status', '--json', '-o', 'yaml'), 2);
    assert.match(err, /say the same thing: give one/);
    assert.equal(await run('list', '-o', 'xml'), 2);
    assert.match(err, /--output must be table, wide, name, json or yaml, not "xml"/);
    assert.equal(fake.requests.length, before);
  });
});
