import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import type { KubeClient } from '../../../src/runtime/client.ts';
import { ApiError } from '../../../src/runtime/errors.ts';
import {
  addFinalizer,
  hasFinalizer,
  isBeingDeleted,
  patchFinalizer,
  removeFinalizer,
} from '../../../src/runtime/finalizers.ts';
import { Nodes } from '../../../src/runtime/resources.ts';

const F = 'nodewarden.io/drain';

function node(finalizers?: string[], deletionTimestamp?: Date): V1Node {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', finalizers, deletionTimestamp } };
}

describe('finalizers', () => {
  it('hasFinalizer sees only the named finalizer', () => {
    assert.equal(hasFinalizer(node([F]), F), true);
    assert.equal(hasFinalizer(node(['other.io/x']), F), false);
    assert.equal(hasFinalizer(node(), F), false);
    assert.equal(hasFinalizer({}, F), false);
  });

  it('addFinalizer returns a changed copy and leaves the original untouched', () => {
    const orig = node(['other.io/x']);
    const { object, changed } = addFinalizer(orig, F);
    assert.equal(changed, true);
    assert.deepEqual(object.metadata?.finalizers, ['other.io/x', F]);
    assert.equal(object.metadata?.name, 'n1', 'other metadata is kept');
    assert.deepEqual(orig.metadata?.finalizers, ['other.io/x']);
  });

  it('addFinalizer works on an object without metadata', () => {
    const { object, changed } = addFinalizer<V1Node>({}, F);
    assert.equal(changed, true);
    assert.deepEqual(object.metadata?.finalizers, [F]);
  });

  it('addFinalizer is a no-op returning the same object when present', () => {
    const orig = node([F]);
    const res = addFinalizer(orig, F);
    assert.equal(res.changed, false);
    assert.equal(res.object, orig);
  });

  it('removeFinalizer drops every copy of the name and keeps the others', () => {
    const orig = node([F, 'other.io/x', F]);
    const { object, changed } = removeFinalizer(orig, F);
    assert.equal(changed, true);
    assert.deepEqual(object.metadata?.finalizers, ['other.io/x']);
    assert.deepEqual(orig.metadata?.finalizers, [F, 'other.io/x', F]);
  });

  it('removeFinalizer is a no-op returning the same object when absent', () => {
    const orig = node(['other.io/x']);
    const res = removeFinalizer(orig, F);
    assert.equal(res.changed, false);
    assert.equal(res.object, orig);
  });

  it('rejects an empty finalizer name', () => {
    assert.throws(() => addFinalizer(node(), ''), /must not be empty/);
    assert.throws(() => removeFinalizer(node(), ''), /must not be empty/);
  });

  it('isBeingDeleted follows deletionTimestamp, typed or raw JSON', () => {
    assert.equal(isBeingDeleted(node([F], new Date())), true);
    assert.equal(isBeingDeleted({ metadata: { deletionTimestamp: '2025-01-01T00:00:00Z' } }), true);
    assert.equal(isBeingDeleted(node([F])), false);
    assert.equal(isBeingDeleted({}), false);
  });
});

describe('patchFinalizer', () => {
  const fake = (fail?: Error) => {
    const patches: unknown[] = [];
    const client = {
      patch: async (_t: unknown, name: string, _ns: unknown, body: unknown) => {
        if (fail) throw fail;
        patches.push({ name, body });
      },
    } as unknown as KubeClient;
    return { client, patches };
  };
  const obj = (finalizers: string[]) => ({ metadata: { name: 'n', resourceVersion: '7', finalizers } });

  it('adds with a resourceVersion guard, and writes nothing when already there', async () => {
    const { client, patches } = fake();
    assert.equal(await patchFinalizer(client, Nodes, obj(['other']), F, 'add'), true);
    assert.deepEqual(patches, [
      { name: 'n', body: { metadata: { resourceVersion: '7', finalizers: ['other', F] } } },
    ]);
    assert.equal(await patchFinalizer(client, Nodes, obj([F]), F, 'add'), false);
    assert.equal(patches.length, 1);
  });
  it('removes, and takes an object already gone as done', async () => {
    const { client, patches } = fake();
    assert.equal(await patchFinalizer(client, Nodes, obj([F, 'other']), F, 'remove'), true);
    assert.deepEqual(patches, [
      { name: 'n', body: { metadata: { resourceVersion: '7', finalizers: ['other'] } } },
    ]);
    const gone = fake(new ApiError(404, 'not found'));
    assert.equal(await patchFinalizer(gone.client, Nodes, obj([F]), F, 'remove'), false);
    await assert.rejects(patchFinalizer(gone.client, Nodes, obj([]), F, 'add'));
  });
});
