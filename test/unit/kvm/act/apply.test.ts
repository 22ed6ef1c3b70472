// The applier's writes: the same content is applied once; a delete goes as its caller says, in
// the background when it says nothing; a node made again is applied whatever digest is held.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ObjectApplier } from '../../../../src/kvm/act/apply.ts';

function applier() {
  const calls: string[] = [];
  const client = {
    patch: async (_t: unknown, name: string) => {
      calls.push(`apply ${name}`);
    },
    delete: async (_t: unknown, name: string, _ns: string, o: { propagationPolicy: string }) => {
      calls.push(`delete ${name} ${o.propagationPolicy}`);
    },
  };
  return { a: new ObjectApplier(client as never), calls };
}

const deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'worker-w3', namespace: 'c1' },
};
const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'worker-w3', namespace: 'c1' } };

describe('ObjectApplier', () => {
  it('applies the same content once', async () => {
    const { a, calls } = applier();
    assert.equal(await a.apply(deployment), true);
    assert.equal(await a.apply(deployment), false);
    assert.deepEqual(calls, ['apply worker-w3']);
  });
  it('deletes as told, in the background when not told', async () => {
    const { a, calls } = applier();
    await a.delete('Deployment', 'worker-w3', 'c1', 'Foreground');
    await a.delete('ConfigMap', 'worker-w3', 'c1');
    assert.deepEqual(calls, ['delete worker-w3 Foreground', 'delete worker-w3 Background']);
  });
  it('applies a node made again even with the same content applied before (deleted behind its back)', async () => {
    const { a, calls } = applier();
    await a.apply(deployment);
    await a.applyFresh(deployment);
    await a.apply(configMap);
    assert.deepEqual(calls, ['apply worker-w3', 'apply worker-w3', 'apply worker-w3']);
  });
  it('forgets what it deleted: the next apply writes', async () => {
    const { a, calls } = applier();
    await a.apply(deployment);
    await a.delete('Deployment', 'worker-w3', 'c1', 'Foreground');
    await a.apply(deployment);
    assert.deepEqual(calls, ['apply worker-w3', 'delete worker-w3 Foreground', 'apply worker-w3']);
  });
});
