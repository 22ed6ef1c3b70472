import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OptionsContext } from '../../../src/capability.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import { cloudOptions } from '../../../src/upgrade/providers/from-flags.ts';
import { SimulatedCloudProvider } from '../../../src/upgrade/providers/simulated/provider.ts';

// No factory below reaches the cluster when its flags say everything, so a client that
// fails every call proves it is not asked.
const ctx = {
  client: new Proxy({}, { get: () => () => Promise.reject(new Error('no cluster here')) }),
  namespace: 'nodewarden-system',
  log: createLogger({ level: 'silent' }),
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
