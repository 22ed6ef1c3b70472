import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { OptionsContext } from '../../../src/capability.ts';
import { publishEndpoint, recordInClusterEndpoint } from '../../../src/cluster/infra/kit/discovery.ts';
import { KubeClient } from '../../../src/runtime/client.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import { ConfigMaps } from '../../../src/runtime/resources.ts';
import { cloudOptions } from '../../../src/upgrade/providers/from-flags.ts';
import { SimulatedCloudProvider } from '../../../src/upgrade/providers/simulated/provider.ts';
import { FakeApiServer } from '../runtime/fake-apiserver.ts';

// No factory below reaches the cluster when its flags say everything, so a client that
// fails every call proves it is not asked.
const ctx = {
  client: new Proxy({}, { get: () => () => Promise.reject(new Error('no cluster here')) }),
  namespace: 'nodewarden-system',
  log: createLogger({ level: 'silent' }),
  runsIn: 'host',
} as unknown as OptionsContext;

describe('the upgrade capability options, from --cloud-provider', () => {
  it('runs without a cloud by default, under the default cluster id', async () => {
    assert.deepEqual(await cloudOptions({}, ctx), { clusterId: 'nodewarden' });
  });

  it('builds the simulated cloud at the given endpoint, keeping --cluster-id', async () => {
    const o = await cloudOptions(
      { 'cloud-provider': 'simulated', 'cloud-endpoint': 'http://127.0.0.1:1', 'cluster-id': 'fleet-a' },
      ctx,
    );
    assert.ok(o.cloud instanceof SimulatedCloudProvider);
    assert.equal(o.clusterId, 'fleet-a');
  });

  it('names the providers it knows when given another', async () => {
    await assert.rejects(
      cloudOptions({ 'cloud-provider': 'aws' }, ctx),
      /one of none, simulated, clusterapi, not "aws"/,
    );
  });

  it("asks the cluster for the simulated cloud's endpoint when none is given", async () => {
    await assert.rejects(cloudOptions({ 'cloud-provider': 'simulated' }, ctx), /no cluster here/);
  });
});

describe('the simulated cloud, found where the local cluster publishes it', () => {
  let fake: FakeApiServer;
  let client: KubeClient;
  const servers: Server[] = [];
  const asked: string[] = [];
  /** A cloud that answers a group's launch image with its own name. */
  const cloudAt = async (name: string): Promise<string> => {
    const server = createServer((_req, res) => {
      asked.push(name);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 'g', launchImage: name }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const context = (runsIn: 'pod' | 'host') => ({ ...ctx, client, runsIn }) as OptionsContext;
  before(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, retryBaseMs: 1 });
  });
  after(async () => {
    client.close();
    await fake.stop();
    for (const s of servers) s.close();
  });

  it('is asked at its loopback URL from the host and at the URL recorded for pods from a pod', async () => {
    await publishEndpoint(client, 'cloud', { endpoint: await cloudAt('host'), cluster: 'c1' });
    await recordInClusterEndpoint(client, 'cloud', await cloudAt('pod'));
    for (const runsIn of ['host', 'pod'] as const) {
      const o = await cloudOptions({ 'cloud-provider': 'simulated' }, context(runsIn));
      assert.equal(o.clusterId, 'c1');
      assert.equal(await o.cloud!.scalingGroupImage('g'), runsIn);
    }
    assert.deepEqual(asked, ['host', 'pod']);
  });

  it('tells an operator in a pod that only a cluster with real nodes lets it reach the cloud', async () => {
    fake.upsert(ConfigMaps, {
      metadata: { name: 'nodewarden-simulated-cloud', namespace: 'kube-system' },
      data: { endpoint: 'http://127.0.0.1:1', cluster: 'c1' },
    } as never);
    await assert.rejects(
      cloudOptions({ 'cloud-provider': 'simulated' }, context('pod')),
      /no inClusterEndpoint: an operator in a pod reaches the simulated cloud only on a local cluster with real nodes/,
    );
  });
});
