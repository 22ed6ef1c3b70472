import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../../src/runtime/errors.ts';
import type { K8sObject, ResourceType } from '../../../src/runtime/resources.ts';
import { statusEqual, updateStatusIfChanged } from '../../../src/runtime/status.ts';

describe('statusEqual', () => {
  const cases: { name: string; a: unknown; b: unknown; ignore?: string[]; equal: boolean }[] = [
    { name: 'identical values', a: { phase: 'Running', n: 1 }, b: { phase: 'Running', n: 1 }, equal: true },
    {
      name: 'the same keys in another order',
      a: { phase: 'Running', progress: '3/4', pending: 1 },
      b: { pending: 1, progress: '3/4', phase: 'Running' },
      equal: true,
    },
    {
      name: 'nested keys in another order',
      a: { conditions: [{ type: 'Ready', status: 'True', reason: 'Done' }] },
      b: { conditions: [{ reason: 'Done', status: 'True', type: 'Ready' }] },
      equal: true,
    },
    { name: 'a changed value', a: { phase: 'Running' }, b: { phase: 'Succeeded' }, equal: false },
    { name: 'a nested change', a: { counts: { total: 3 } }, b: { counts: { total: 4 } }, equal: false },
    { name: 'an added field', a: { phase: 'Running', reason: 'x' }, b: { phase: 'Running' }, equal: false },
    {
      name: 'a field set to undefined is absent',
      a: { phase: 'Running', reason: undefined },
      b: { phase: 'Running' },
      equal: true,
    },
    { name: 'array order matters', a: { groups: ['a', 'b'] }, b: { groups: ['b', 'a'] }, equal: false },
    { name: 'no status equals an empty one', a: undefined, b: {}, equal: true },
    { name: 'no status differs from a set one', a: undefined, b: { phase: 'Running' }, equal: false },
    { name: 'numbers are not strings', a: { replicas: 1 }, b: { replicas: '1' }, equal: false },
    {
      name: 'ignored fields do not count',
      a: { phase: 'Running', lastUpdate: '2030-01-01T00:00:00Z' },
      b: { lastUpdate: '2029-01-01T00:00:00Z', phase: 'Running' },
      ignore: ['lastUpdate'],
      equal: true,
    },
    {
      name: 'an ignored field present on one side only does not count',
      a: { phase: 'Running', lastUpdate: '2030-01-01T00:00:00Z' },
      b: { phase: 'Running' },
      ignore: ['lastUpdate'],
      equal: true,
    },
    {
      name: 'other fields still count beside an ignored one',
      a: { phase: 'Running', lastUpdate: 'x' },
      b: { phase: 'Failed', lastUpdate: 'x' },
      ignore: ['lastUpdate'],
      equal: false,
    },
    {
      name: 'only top-level fields are ignored',
      a: { counts: { lastUpdate: 'x' } },
      b: { counts: { lastUpdate: 'y' } },
      ignore: ['lastUpdate'],
      equal: false,
    },
  ];
  for (const c of cases) {
    it(`${c.equal ? 'equal' : 'different'}: ${c.name}`, () => {
      assert.equal(statusEqual(c.a, c.b, c.ignore), c.equal);
      assert.equal(statusEqual(c.b, c.a, c.ignore), c.equal, 'symmetric');
    });
  }
});

const Thing: ResourceType = {
  group: 'example.dev',
  version: 'v1',
  kind: 'Thing',
  plural: 'things',
  namespaced: false,
};

interface ThingStatus {
  phase?: string;
  replicas?: number;
  lastUpdate?: string;
  counts?: { total?: number; ready?: number };
}

/** A client recording status writes; `fail` is thrown by the next one. */
function fakeClient(fail?: Error) {
  const calls: { verb: 'update' | 'patch'; body: unknown; opts?: unknown; name?: string }[] = [];
  return {
    calls,
    async updateStatus<T>(_type: ResourceType, obj: T & K8sObject): Promise<T> {
      calls.push({ verb: 'update', body: obj });
      if (fail) throw fail;
      return obj;
    },
    async patch<T>(_type: ResourceType, name: string, _ns: string | undefined, body: unknown, opts: unknown) {
      calls.push({ verb: 'patch', name, body, opts });
      if (fail) throw fail;
      return body as T;
    },
  };
}

const thing = (status?: ThingStatus): K8sObject & { status?: ThingStatus } => ({
  apiVersion: 'example.dev/v1',
  kind: 'Thing',
  metadata: { name: 't', resourceVersion: '7' },
  ...(status ? { status } : {}),
});

describe('updateStatusIfChanged', () => {
  it('writes nothing when the status holds the same values in another key order', async () => {
    const c = fakeClient();
    const out = await updateStatusIfChanged(c, Thing, thing({ replicas: 2, phase: 'Running' }), {
      phase: 'Running',
      replicas: 2,
    });
    assert.equal(out, 'unchanged');
    assert.deepEqual(c.calls, []);
  });

  it('replaces the whole status, resourceVersion and all, when it changed', async () => {
    const c = fakeClient();
    const out = await updateStatusIfChanged(c, Thing, thing({ phase: 'Running' }), { phase: 'Succeeded' });
    assert.equal(out, 'written');
    assert.equal(c.calls.length, 1);
    assert.equal(c.calls[0]?.verb, 'update');
    assert.deepEqual(c.calls[0]?.body, { ...thing(), status: { phase: 'Succeeded' } });
  });

  it('ignores the named fields when comparing, and writes them with a change', async () => {
    const c = fakeClient();
    const ignore = ['lastUpdate'];
    const old = thing({ phase: 'Running', lastUpdate: 'then' });
    assert.equal(
      await updateStatusIfChanged(c, Thing, old, { phase: 'Running', lastUpdate: 'now' }, { ignore }),
      'unchanged',
    );
    assert.equal(
      await updateStatusIfChanged(c, Thing, old, { phase: 'Failed', lastUpdate: 'now' }, { ignore }),
      'written',
    );
    assert.deepEqual(c.calls[0]?.body, {
      ...old,
      status: {
        phase: 'Failed',
        lastUpdate: 'now',
      },
    });
  });

  it('reports a conflict instead of throwing it', async () => {
    const c = fakeClient(new ApiError(409, 'the object has been modified', { reason: 'Conflict' }));
    assert.equal(await updateStatusIfChanged(c, Thing, thing(), { phase: 'Running' }), 'conflict');
  });

  it('throws every other error, NotFound included', async () => {
    const gone = new ApiError(404, 'things "t" not found', { reason: 'NotFound' });
    await assert.rejects(
      updateStatusIfChanged(fakeClient(gone), Thing, thing(), { phase: 'Running' }),
      (e) => e === gone,
    );
  });

  describe('merge', () => {
    it('sends only the given fields as a merge patch of the status subresource', async () => {
      const c = fakeClient();
      const out = await updateStatusIfChanged(
        c,
        Thing,
        thing({ phase: 'Running', replicas: 1 }),
        { replicas: 3 },
        { write: 'merge' },
      );
      assert.equal(out, 'written');
      assert.deepEqual(c.calls, [
        {
          verb: 'patch',
          name: 't',
          body: { status: { replicas: 3 } },
          opts: { type: 'merge', subresource: 'status' },
        },
      ]);
    });

    it('writes nothing when the given fields already hold those values, whatever else the status has', async () => {
      const c = fakeClient();
      const out = await updateStatusIfChanged(
        c,
        Thing,
        thing({ phase: 'Running', counts: { ready: 1, total: 2 } }),
        { counts: { total: 2, ready: 1 } },
        { write: 'merge' },
      );
      assert.equal(out, 'unchanged');
      assert.deepEqual(c.calls, []);
    });

    it('compares nested fields as the server merges them', async () => {
      const c = fakeClient();
      // A merge patch of counts.total keeps counts.ready: nothing changes.
      const old = thing({ counts: { total: 2, ready: 1 } });
      assert.equal(
        await updateStatusIfChanged(c, Thing, old, { counts: { total: 2 } }, { write: 'merge' }),
        'unchanged',
      );
      assert.equal(
        await updateStatusIfChanged(c, Thing, old, { counts: { total: 3 } }, { write: 'merge' }),
        'written',
      );
    });

    it('writes when the object has no status yet', async () => {
      const c = fakeClient();
      assert.equal(
        await updateStatusIfChanged(c, Thing, thing(), { phase: 'Running' }, { write: 'merge' }),
        'written',
      );
    });
  });
});
