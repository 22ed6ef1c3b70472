import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NodeMaintenances } from '../../../src/api/maintenance.ts';
import { kubeName, type ObjectView, writeDocument, writeObjects } from '../../../src/cli/output.ts';
import { Nodes } from '../../../src/runtime/resources.ts';

function capture() {
  const io = { out: '', err: '' };
  const streams = {
    out: { write: (c: string) => (io.out += c) },
    err: { write: (c: string) => (io.err += c) },
  };
  return { io, streams };
}

interface Thing {
  metadata: { name: string; managedFields?: unknown };
  size: number;
}
const things: Thing[] = [
  { metadata: { name: 'a', managedFields: [{}] }, size: 1 },
  { metadata: { name: 'b' }, size: 2 },
];
const view: ObjectView<Thing> = {
  table: (items, wide) => `${items.map((t) => `${t.metadata.name}${wide ? ` ${t.size}` : ''}`).join('\n')}\n`,
  name: (t) => `thing/${t.metadata.name}`,
  none: 'No things.',
};

describe('writeObjects', () => {
  it('writes the table, and the wide table with -o wide', () => {
    const { io, streams } = capture();
    writeObjects(streams, 'table', things, view);
    assert.equal(io.out, 'a\nb\n');
    io.out = '';
    writeObjects(streams, 'wide', things, view);
    assert.equal(io.out, 'a 1\nb 2\n');
  });

  it('writes one name a line with -o name, and nothing at all for no objects', () => {
    const { io, streams } = capture();
    writeObjects(streams, 'name', things, view);
    assert.equal(io.out, 'thing/a\nthing/b\n');
    io.out = '';
    writeObjects(streams, 'name', [], view);
    assert.equal(io.out + io.err, '');
  });

  it('says there are none on stderr instead of an empty table', () => {
    const { io, streams } = capture();
    writeObjects(streams, 'wide', [], view);
    assert.equal(io.out, '');
    assert.equal(io.err, 'No things.\n');
  });

  it('writes a v1 List without managedFields by default, or the document the view gives', () => {
    const { io, streams } = capture();
    writeObjects(streams, 'json', things, view);
    const list = JSON.parse(io.out) as { kind: string; items: Thing[] };
    assert.equal(list.kind, 'List');
    assert.deepEqual(
      list.items.map((t) => t.metadata),
      [{ name: 'a' }, { name: 'b' }],
    );
    io.out = '';
    writeObjects(streams, 'json', things, { ...view, document: (items) => items.map((t) => t.size) });
    assert.deepEqual(JSON.parse(io.out), [1, 2]);
  });
});

describe('kubeName', () => {
  it('is kind.group/name as kubectl -o name prints it, kind/name in the core group', () => {
    assert.equal(
      kubeName(NodeMaintenances.type, { metadata: { name: 'n1' } }),
      'nodemaintenance.maintenance.nodewarden.dev/n1',
    );
    assert.equal(kubeName(Nodes, { metadata: { name: 'worker-1' } }), 'node/worker-1');
  });
});

describe('writeDocument', () => {
  it('refuses -o wide and name as a usage mistake: a document has neither', () => {
    const { streams } = capture();
    assert.throws(
      () => writeDocument(streams, 'name', {}),
      /-o name is not available here; use table, json, yaml/,
    );
  });
});
