import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { liveness } from '../../../src/runtime/live.ts';
import { ConfigMaps, type K8sObject } from '../../../src/runtime/resources.ts';
import { useFakeApiServer } from './fake-apiserver.ts';

describe('liveness: a cached object against the API server', () => {
  const t = useFakeApiServer();

  const put = (data: Record<string, string>, uid = 'u1'): K8sObject =>
    t.fake.upsert(ConfigMaps, { metadata: { name: 'c', namespace: 'default', uid }, data });

  it('is current when the server holds the same version', async () => {
    const cached = put({ k: '1' });
    assert.equal(await liveness(t.client, ConfigMaps, cached), 'current');
  });

  it('is behind when the server holds a newer version', async () => {
    const cached = put({ k: '1' });
    put({ k: '2' });
    assert.equal(await liveness(t.client, ConfigMaps, cached), 'behind');
  });

  it('is gone when the server holds nothing of that name, or another object of it', async () => {
    const cached = put({ k: '1' });
    t.fake.remove(ConfigMaps, 'c', 'default');
    assert.equal(await liveness(t.client, ConfigMaps, cached), 'gone');
    put({ k: '1' }, 'u2');
    assert.equal(await liveness(t.client, ConfigMaps, cached), 'gone');
  });
});
