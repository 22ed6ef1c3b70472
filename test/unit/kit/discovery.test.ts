import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  endpointConfigMap,
  endpointFor,
  findEndpoint,
  publishEndpoint,
  recordInClusterEndpoint,
} from '../../../src/cluster/infra/kit/discovery.ts';
import { KubeClient } from '../../../src/runtime/client.ts';
import { ConfigMaps } from '../../../src/runtime/resources.ts';
import { FakeApiServer } from '../runtime/fake-apiserver.ts';

describe("publishing a simulator's endpoint", () => {
  let fake: FakeApiServer;
  let client: KubeClient;
  before(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, retryBaseMs: 1 });
  });
  after(async () => {
    client.close();
    await fake.stop();
  });

  for (const [simulator, want] of [
    ['cloud', 'nodewarden-simulated-cloud'],
    ['bmc', 'nodewarden-simulated-bmc'],
    ['hypervisor', 'nodewarden-simulated-hypervisor'],
  ] as const) {
    it(`names the ${simulator}'s ConfigMap kube-system/${want}`, () => {
      assert.deepEqual(endpointConfigMap(simulator), { namespace: 'kube-system', name: want });
    });
  }

  it('finds nothing before anything is published', async () => {
    assert.equal(await findEndpoint(client, 'bmc'), undefined);
  });

  it('finds what was published, extra fields included, and the latest of two', async () => {
    await publishEndpoint(client, 'cloud', { endpoint: 'http://127.0.0.1:1', cluster: 'c1' });
    await publishEndpoint(client, 'cloud', { endpoint: 'http://127.0.0.1:2', cluster: 'c1' });
    assert.deepEqual(await findEndpoint(client, 'cloud'), { endpoint: 'http://127.0.0.1:2', cluster: 'c1' });
    assert.equal(await findEndpoint(client, 'hypervisor'), undefined, 'each simulator has its own');
  });

  it('finds nothing in a ConfigMap without an endpoint', async () => {
    fake.upsert(ConfigMaps, {
      metadata: { name: 'nodewarden-simulated-empty', namespace: 'kube-system' },
      data: { cluster: 'c1' },
    } as never);
    assert.equal(await findEndpoint(client, 'empty'), undefined);
  });

  it("keeps the URL for pods beside the simulator's own, and the simulator's next publication keeps it", async () => {
    await publishEndpoint(client, 'hypervisor', { endpoint: 'http://127.0.0.1:3', cluster: 'c1' });
    await recordInClusterEndpoint(client, 'hypervisor', 'http://172.30.0.1:3');
    await publishEndpoint(client, 'hypervisor', { endpoint: 'http://127.0.0.1:3', cluster: 'c1' });
    const found = await findEndpoint(client, 'hypervisor');
    assert.deepEqual(found, {
      endpoint: 'http://127.0.0.1:3',
      cluster: 'c1',
      inClusterEndpoint: 'http://172.30.0.1:3',
    });
    assert.equal(endpointFor(found!, 'host'), 'http://127.0.0.1:3');
    assert.equal(endpointFor(found!, 'pod'), 'http://172.30.0.1:3');
  });

  it('has no URL for a pod where the cluster recorded none (no real nodes)', () => {
    assert.equal(endpointFor({ endpoint: 'http://127.0.0.1:3' }, 'pod'), undefined);
  });
});
