import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import {
  addFinalizer,
  hasFinalizer,
  isBeingDeleted,
  removeFinalizer,
} from '../../../src/runtime/finalizers.ts';

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
