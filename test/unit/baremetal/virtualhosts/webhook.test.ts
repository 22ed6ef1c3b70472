// What the webhook refuses beyond CEL, and that each message says what to fix.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IPPool, VirtualHostPool } from '../../../../src/api/virtualhosts.ts';
import {
  ipPoolProblems,
  virtualHostPoolProblems,
  virtualHostsAdmission,
} from '../../../../src/baremetal/virtualhosts/webhook.ts';
import { oamNetwork } from '../../../harness/pools.ts';

const net = oamNetwork;
const pool = (networks: object[], nodes: object[] = [flavor('worker')]) =>
  ({
    apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
    kind: 'VirtualHostPool',
    metadata: { name: 'lab', namespace: 'default' },
    spec: {
      nodeSelector: { matchLabels: { hv: 'true' } },
      networks,
      nodes,
      bmcCredentials: { username: 'admin', password: 'pw' },
    },
  }) as unknown as VirtualHostPool;
function flavor(name: string, over: Record<string, unknown> = {}) {
  return { name, count: 1, networkInterfaces: [{ name: 'enp1s0', network: 'oam' }], ...over };
}

describe('virtualHostPoolProblems', () => {
  const cases: { name: string; pool: VirtualHostPool; want: RegExp[] }[] = [
    { name: 'a good pool', pool: pool([net()]), want: [] },
    {
      name: 'an inverted static range',
      pool: pool([net({ staticAllocationStart: '192.168.2.40', staticAllocationStop: '192.168.2.10' })]),
      want: [
        /spec\.networks\[oam\]: staticAllocationStart 192\.168\.2\.40 comes after staticAllocationStop 192\.168\.2\.10; swap them/,
      ],
    },
    {
      name: 'an inverted IPv6 DHCP range',
      pool: pool([
        net({
          subnet: 'fd00::/64',
          type: 'ipv6',
          staticAllocationStart: 'fd00::10',
          staticAllocationStop: 'fd00::20',
          dhcpAllocationStart: 'fd00::2:0',
          dhcpAllocationStop: 'fd00::1:0',
        }),
      ]),
      want: [/dhcpAllocationStart fd00::2:0 comes after dhcpAllocationStop fd00::1:0/],
    },
    {
      name: 'a DHCP range smaller than one block',
      pool: pool([net({ dhcpAllocationStart: '192.168.4.0', dhcpAllocationStop: '192.168.4.7' })]),
      want: [
        /holds 8 addresses, fewer than one node's block of 2\^4 = 16; widen the range or lower instanceSubnetBitStep/,
      ],
    },
    {
      name: 'overlapping static and DHCP ranges',
      pool: pool([net({ dhcpAllocationStart: '192.168.2.0', dhcpAllocationStop: '192.168.2.255' })]),
      want: [/overlaps the DHCP range .*; make them disjoint/],
    },
    {
      name: 'a duplicate flavor name',
      pool: pool([net()], [flavor('worker'), flavor('worker')]),
      want: [/flavor name "worker" is used twice/],
    },
    {
      name: 'a boot interface the flavor does not have',
      pool: pool([net()], [flavor('worker', { bootInterfaceName: 'eth9' })]),
      want: [/bootInterfaceName "eth9" is not one of its networkInterfaces \(enp1s0\)/],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const problems = virtualHostPoolProblems(c.pool);
      assert.equal(problems.length, c.want.length, problems.join('\n'));
      for (const [i, re] of c.want.entries()) assert.match(problems[i]!, re);
    });
});

describe('ipPoolProblems', () => {
  it('refuses an inverted range and an inverted DHCP range', () => {
    const p = {
      spec: {
        subnet: '10.0.0.0/24',
        macPrefix: '02:00:00:00:00:00',
        ranges: [
          { start: '10.0.0.1', stop: '10.0.0.9' },
          { start: '10.0.0.20', stop: '10.0.0.10' },
        ],
        dhcpRange: { start: '10.0.0.200', stop: '10.0.0.100' },
      },
    } as unknown as IPPool;
    const problems = ipPoolProblems(p);
    assert.equal(problems.length, 2);
    assert.match(problems[0]!, /spec\.ranges\[1\]: start 10\.0\.0\.20 comes after stop 10\.0\.0\.10/);
    assert.match(problems[1]!, /spec\.dhcpRange: start 10\.0\.0\.200 comes after stop 10\.0\.0\.100/);
  });
});

describe('the admission handler', () => {
  const req = (kind: string, object: object, operation: 'CREATE' | 'UPDATE' | 'DELETE' = 'CREATE') => ({
    uid: '1',
    kind: { group: 'baremetal.nodewarden.dev', version: 'v1alpha1', kind },
    resource: { group: 'baremetal.nodewarden.dev', version: 'v1alpha1', resource: 'x' },
    operation,
    userInfo: {},
    object: object as never,
  });
  it('denies a pool with every problem in one message', async () => {
    const bad = pool(
      [net({ staticAllocationStart: '192.168.2.40', staticAllocationStop: '192.168.2.10' })],
      [flavor('a'), flavor('a')],
    );
    const r = await virtualHostsAdmission(req('VirtualHostPool', bad));
    assert.equal(r.allowed, false);
    assert.match(r.message ?? '', /swap them.*; spec\.nodes: flavor name "a" is used twice/);
  });
  it('allows a good pool, and lets deletes through', async () => {
    assert.equal((await virtualHostsAdmission(req('VirtualHostPool', pool([net()])))).allowed, true);
    assert.equal((await virtualHostsAdmission(req('VirtualHostPool', {}, 'DELETE'))).allowed, true);
  });
});
