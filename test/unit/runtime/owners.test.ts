import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  AlreadyOwnedError,
  controllerOf,
  isOwnedBy,
  ownerReference,
  setControllerReference,
} from '../../../src/runtime/owners.ts';

const pool: KubernetesObject = {
  apiVersion: 'nodewarden.io/v1alpha1',
  kind: 'NodePool',
  metadata: { name: 'workers', uid: 'uid-pool' },
};
const otherPool: KubernetesObject = {
  apiVersion: 'nodewarden.io/v1alpha1',
  kind: 'NodePool',
  metadata: { name: 'gpu', uid: 'uid-gpu' },
};
const node = (): KubernetesObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } });

describe('ownerReference', () => {
  it('builds a reference from apiVersion, kind, name and uid', () => {
    assert.deepEqual(ownerReference(pool), {
      apiVersion: 'nodewarden.io/v1alpha1',
      kind: 'NodePool',
      name: 'workers',
      uid: 'uid-pool',
    });
    assert.deepEqual(ownerReference(pool, { controller: true, blockOwnerDeletion: false }), {
      apiVersion: 'nodewarden.io/v1alpha1',
      kind: 'NodePool',
      name: 'workers',
      uid: 'uid-pool',
      controller: true,
      blockOwnerDeletion: false,
    });
  });

  for (const [what, owner, msg] of [
    ['uid', { ...pool, metadata: { name: 'workers' } }, /no metadata.uid/],
    ['name', { ...pool, metadata: { uid: 'u' } }, /no metadata.name/],
    ['kind', { apiVersion: 'v1', metadata: { name: 'x', uid: 'u' } }, /no apiVersion or kind/],
  ] as const) {
    it(`throws when the owner has no ${what}`, () => {
      assert.throws(() => ownerReference(owner), msg);
    });
  }
});

describe('setControllerReference', () => {
  it('adds a controller reference to a copy, keeping other owners', () => {
    const orig = node();
    orig.metadata!.ownerReferences = [ownerReference(otherPool)];
    const owned = setControllerReference(orig, pool);
    assert.deepEqual(owned.metadata?.ownerReferences, [
      ownerReference(otherPool),
      ownerReference(pool, { controller: true, blockOwnerDeletion: true }),
    ]);
    assert.equal(owned.metadata?.name, 'n1');
    assert.equal(orig.metadata?.ownerReferences?.length, 1, 'the original is not mutated');
    assert.equal(controllerOf(owned)?.uid, 'uid-pool');
  });

  it('is idempotent and updates the reference in place when the owner was recreated', () => {
    const once = setControllerReference(node(), pool);
    const twice = setControllerReference(once, pool);
    assert.deepEqual(twice.metadata?.ownerReferences, once.metadata?.ownerReferences);
    const recreated = { ...pool, metadata: { ...pool.metadata, uid: 'uid-new' } };
    const refs = setControllerReference(twice, recreated).metadata?.ownerReferences;
    assert.equal(refs?.length, 1);
    assert.equal(refs?.[0]?.uid, 'uid-new');
  });

  it('refuses when another object already controls it, naming both', () => {
    const owned = setControllerReference(node(), otherPool);
    assert.throws(
      () => setControllerReference(owned, pool),
      (err: unknown) =>
        err instanceof AlreadyOwnedError &&
        /already controlled by NodePool\/gpu/.test(err.message) &&
        /NodePool\/workers/.test(err.message) &&
        err.existing.uid === 'uid-gpu',
    );
  });

  it('refuses a namespaced owner for a cluster-scoped or other-namespace object', () => {
    const nsOwner: KubernetesObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace: 'a', uid: 'u' },
    };
    assert.throws(() => setControllerReference(node(), nsOwner), /cluster-scoped Node\/n1/);
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'b' } };
    assert.throws(() => setControllerReference(pod, nsOwner), /cross-namespace/);
    const same = { ...pod, metadata: { ...pod.metadata, namespace: 'a' } };
    assert.equal(controllerOf(setControllerReference(same, nsOwner))?.name, 'cm');
  });
});

describe('ownership queries', () => {
  it('controllerOf ignores owners that are not the controller', () => {
    const obj = node();
    obj.metadata!.ownerReferences = [ownerReference(pool), ownerReference(otherPool, { controller: false })];
    assert.equal(controllerOf(obj), undefined);
    assert.equal(controllerOf({}), undefined);
  });

  it('isOwnedBy matches by uid, or by group, kind and name when the owner has no uid', () => {
    const obj = node();
    obj.metadata!.ownerReferences = [ownerReference(pool)];
    assert.equal(isOwnedBy(obj, pool), true);
    assert.equal(isOwnedBy(obj, otherPool), false);
    assert.equal(isOwnedBy(obj, { ...pool, metadata: { name: 'workers', uid: 'someone-else' } }), false);
    assert.equal(
      isOwnedBy(obj, { ...pool, apiVersion: 'nodewarden.io/v1', metadata: { name: 'workers' } }),
      true,
    );
    assert.equal(
      isOwnedBy(obj, { ...pool, apiVersion: 'other.io/v1', metadata: { name: 'workers' } }),
      false,
    );
  });
});
