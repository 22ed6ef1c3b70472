import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BmcAddressError, redfishAddress } from '../../../../src/baremetal/redfish/address.ts';

describe("BMC addresses in metal3's Redfish forms", () => {
  const ok: [string, string, string, boolean][] = [
    ['redfish://10.0.0.5/redfish/v1/Systems/1', 'https://10.0.0.5', '/redfish/v1/Systems/1', false],
    [
      'redfish://10.0.0.5:8443/redfish/v1/Systems/abc/',
      'https://10.0.0.5:8443',
      '/redfish/v1/Systems/abc',
      false,
    ],
    [
      'redfish+http://bmc.lab:8000/redfish/v1/Systems/vm-0',
      'http://bmc.lab:8000',
      '/redfish/v1/Systems/vm-0',
      false,
    ],
    ['redfish+https://bmc.lab/redfish/v1/Systems/1', 'https://bmc.lab', '/redfish/v1/Systems/1', false],
    [
      'redfish-virtualmedia://[fd00::5]:443/redfish/v1/Systems/1',
      'https://[fd00::5]',
      '/redfish/v1/Systems/1',
      true,
    ],
    ['redfish-virtualmedia+http://h:80/redfish/v1/Systems/1', 'http://h', '/redfish/v1/Systems/1', true],
  ];
  for (const [address, origin, systemPath, virtualMedia] of ok) {
    it(`reads ${address}`, () =>
      assert.deepEqual(redfishAddress(address), { origin, systemPath, virtualMedia }));
  }

  const bad: [string, RegExp][] = [
    ['ipmi://10.0.0.5:623', /scheme "ipmi" is not supported: nodewarden speaks Redfish \(redfish, /],
    ['10.0.0.5/redfish/v1/Systems/1', /has no scheme: write redfish:\/\//],
    ['redfish://10.0.0.5', /must name a System: …\/redfish\/v1\/Systems\/ID \(got path "\/"\)/],
    ['redfish://10.0.0.5/redfish/v1/Managers/1', /must name a System/],
    ['redfish://:bad:port/redfish/v1/Systems/1', /not a valid URL|names no host/],
  ];
  for (const [address, message] of bad) {
    it(`refuses ${address} saying what to write`, () => {
      assert.throws(
        () => redfishAddress(address),
        (err: unknown) => err instanceof BmcAddressError && message.test(err.message),
      );
    });
  }
});
