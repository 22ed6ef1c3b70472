import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tenantOptions } from '../../../src/tenant/options.ts';

describe('--jumphost-loopback-at', () => {
  it('is unset by default: BMC addresses reach the jump host as written', async () => {
    assert.equal((await tenantOptions({})).jumpHostLoopbackAt, undefined);
    assert.equal((await tenantOptions({ 'jumphost-loopback-at': '' })).jumpHostLoopbackAt, undefined);
  });

  it('takes an IPv4 address or a host name', async () => {
    assert.equal(
      (await tenantOptions({ 'jumphost-loopback-at': '172.30.0.1' })).jumpHostLoopbackAt,
      '172.30.0.1',
    );
    assert.equal(
      (await tenantOptions({ 'jumphost-loopback-at': 'gw.local' })).jumpHostLoopbackAt,
      'gw.local',
    );
  });

  it('refuses anything else, naming it', async () => {
    await assert.rejects(tenantOptions({ 'jumphost-loopback-at': '172.30.0.1:80' }), /"172\.30\.0\.1:80"/);
  });
});
