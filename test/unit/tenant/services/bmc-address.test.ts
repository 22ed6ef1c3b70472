import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bmcEndpoint } from '../../../../src/tenant/services/bmc-address.ts';

describe("a host's BMC as the jump host reaches it", () => {
  const table: [string, ReturnType<typeof bmcEndpoint>][] = [
    [
      'redfish://10.0.0.5:8000/redfish/v1/Systems/r0-00',
      { address: '10.0.0.5:8000', driver: 'redfish', redfish: true, tls: true, system: 'r0-00' },
    ],
    [
      'redfish+http://[fd00::5]:8000/redfish/v1/Systems/abc/',
      { address: '[fd00::5]:8000', driver: 'redfish', redfish: true, tls: false, system: 'abc' },
    ],
    [
      'redfish+https://bmc.rack1:443/redfish/v1/Systems/1',
      { address: 'bmc.rack1:443', driver: 'redfish', redfish: true, tls: true, system: '1' },
    ],
    [
      'idrac-virtualmedia://bmc.example/redfish/v1/Systems/System.Embedded.1',
      {
        address: 'bmc.example',
        driver: 'idrac-virtualmedia',
        redfish: true,
        tls: true,
        system: 'System.Embedded.1',
      },
    ],
    ['redfish://10.0.0.9', { address: '10.0.0.9', driver: 'redfish', redfish: true, tls: true }],
    ['ipmi://10.1.1.1:623', { address: '10.1.1.1:623', driver: 'ipmi', redfish: false, tls: false }],
    ['10.1.1.1:623', { address: '10.1.1.1:623', driver: 'ipmi', redfish: false, tls: false }],
  ];
  for (const [address, want] of table)
    it(`reads ${address}`, () => {
      assert.deepEqual(bmcEndpoint(address), want);
    });
});

describe("a BMC on the operator's loopback, as the jump host's pod reaches it", () => {
  const agent = 'redfish://127.0.0.1:40123/redfish/v1/Systems/default-vms-cp-0';
  it('is at the address given for the loopback, on the same port and System', () => {
    assert.deepEqual(bmcEndpoint(agent, '172.30.0.1'), {
      address: '172.30.0.1:40123',
      driver: 'redfish',
      redfish: true,
      tls: true,
      system: 'default-vms-cp-0',
    });
  });

  it('stays as written when no address is given for the loopback, or the BMC is elsewhere', () => {
    assert.equal(bmcEndpoint(agent).address, '127.0.0.1:40123');
    assert.equal(
      bmcEndpoint('redfish://10.0.0.5:8000/redfish/v1/Systems/a', '172.30.0.1').address,
      '10.0.0.5:8000',
    );
    assert.equal(bmcEndpoint('127.0.0.10:623', '172.30.0.1').address, '127.0.0.10:623');
  });
});
