import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FirstActionCheck, liveness } from '../../../src/runtime/live.ts';
import { ConfigMaps, type K8sObject } from '../../../src/runtime/resources.ts';
import { useFakeApiServer } from './fake-apiserver.ts';

describe('liveness: a cached object against the API server', () => {
  const t = useFakeApiServer();

  // The fake gives each new object a uid of its own, as the API server does.
  const put = (data: Record<string, string>): K8sObject =>
    t.fake.upsert(ConfigMaps, { metadata: { name: 'c', namespace: 'default' }, data });

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
    put({ k: '1' }); // made again under the same name: another uid
    assert.equal(await liveness(t.client, ConfigMaps, cached), 'gone');
  });

  it('FirstActionCheck reads an object live until it is current, then trusts the cache until forgotten', async () => {
    const check = new FirstActionCheck(t.client, ConfigMaps);
    const reads = () => t.fake.requests.filter((r) => r.method === 'GET').length;
    const old = put({ k: '1' });
    const cached = put({ k: '2' });
    assert.equal(await check.check(old), 'behind');
    assert.equal(await check.check(cached), 'current');
    assert.equal(reads(), 2);
    assert.equal(await check.check(cached), 'current');
    assert.equal(reads(), 2, 'no read once current');
    check.forget(cached.metadata!.uid!);
    t.fake.remove(ConfigMaps, 'c', 'default');
    assert.equal(await check.check(cached), 'gone');
    assert.equal(reads(), 3);
  });
});
