// `--cloud-provider clusterapi` from the operator's flags.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OptionsContext } from '../../../../src/capability.ts';
import { createLogger } from '../../../../src/runtime/log.ts';
import { ClusterApiProvider } from '../../../../src/upgrade/providers/clusterapi/provider.ts';
import { cloudOptions } from '../../../../src/upgrade/providers/from-flags.ts';

const ctx = {
  client: new Proxy({}, { get: () => () => Promise.reject(new Error('no cluster here')) }),
  namespace: 'nodewarden-system',
  log: createLogger({ level: 'silent' }),
} as unknown as OptionsContext;

describe('--cloud-provider clusterapi', () => {
  it('builds the Cluster API provider for the Cluster --cluster-id names', async () => {
    const o = await cloudOptions({ 'cloud-provider': 'clusterapi', 'cluster-id': 'fleet/prod' }, ctx);
    assert.ok(o.cloud instanceof ClusterApiProvider);
    assert.equal(o.clusterId, 'fleet/prod');
    assert.equal(o.cloud.autoscalingCloudProvider(), 'clusterapi');
  });
  it('needs --cluster-id: which Cluster of the management cluster is not to be guessed', async () => {
    await assert.rejects(cloudOptions({ 'cloud-provider': 'clusterapi' }, ctx), /needs --cluster-id/);
  });
  it('refuses a malformed --clusterapi-image-path', async () => {
    await assert.rejects(
      cloudOptions(
        { 'cloud-provider': 'clusterapi', 'cluster-id': 'c', 'clusterapi-image-path': 'Foo=bar' },
        ctx,
      ),
      /--clusterapi-image-path/,
    );
  });
});
