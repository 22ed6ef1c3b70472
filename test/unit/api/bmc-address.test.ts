// One reading of BareMetalHost.spec.bmc.address for every capability: each
// of metal3's forms, taken apart.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type BmcAddress, parseBmcAddress, REDFISH_SCHEMES } from '../../../src/api/bmc-address.ts';

type Row = Partial<BmcAddress>;

describe("BMC addresses in metal3's forms", () => {
  const table: [string, Row][] = [
    [
      'redfish://10.0.0.5:8000/redfish/v1/Systems/r0-00',
      {
        scheme: 'redfish',
        driver: 'redfish',
        redfish: true,
        tls: true,
        virtualMedia: false,
        authority: '10.0.0.5:8000',
      },
    ],
    [
      'redfish+http://[fd00::5]:8000/redfish/v1/Systems/abc/',
      {
        driver: 'redfish',
        redfish: true,
        tls: false,
        host: '[fd00::5]',
        port: 8000,
        origin: 'http://[fd00::5]:8000',
        system: 'abc',
      },
    ],
    [
      'redfish+https://bmc.lab:443/redfish/v1/Systems/1',
      { tls: true, authority: 'bmc.lab:443', origin: 'https://bmc.lab', port: 443 },
    ],
    [
      'redfish-virtualmedia://h/redfish/v1/Systems/1',
      { driver: 'redfish-virtualmedia', redfish: true, virtualMedia: true },
    ],
    [
      'idrac-redfish://h/redfish/v1/Systems/System.Embedded.1',
      { driver: 'idrac-redfish', redfish: true, system: 'System.Embedded.1' },
    ],
    [
      'idrac-virtualmedia+http://h/redfish/v1/Systems/1',
      { driver: 'idrac-virtualmedia', redfish: true, virtualMedia: true, tls: false },
    ],
    ['ilo5-redfish://h/redfish/v1/Systems/1', { driver: 'ilo5-redfish', redfish: true, tls: true }],
    ['redfish://admin@10.0.0.9', { authority: '10.0.0.9', host: '10.0.0.9', path: '', system: undefined }],
    [
      'redfish://10.0.0.5/redfish/v1/Managers/1',
      { redfish: true, path: '/redfish/v1/Managers/1', system: undefined },
    ],
    [
      'ipmi://10.1.1.1:623',
      { scheme: 'ipmi', driver: 'ipmi', redfish: false, tls: false, host: '10.1.1.1', port: 623 },
    ],
    [
      '10.1.1.1:623',
      {
        scheme: undefined,
        driver: 'ipmi',
        redfish: false,
        authority: '10.1.1.1:623',
        host: '10.1.1.1',
        port: 623,
      },
    ],
    [
      'bmc.rack1',
      { scheme: undefined, driver: 'ipmi', host: 'bmc.rack1', port: undefined, origin: undefined },
    ],
    ['idrac://10.0.0.7', { driver: 'idrac', redfish: false, tls: false }],
    ['ilo4-virtualmedia://10.0.0.7', { driver: 'ilo4-virtualmedia', redfish: false, virtualMedia: false }],
    ['redfish+ftp://10.0.0.7/redfish/v1/Systems/1', { driver: 'redfish', redfish: false }],
    ['redfish://:bad:port/redfish/v1/Systems/1', { redfish: true, origin: undefined, system: undefined }],
  ];
  for (const [address, want] of table)
    it(`reads ${address}`, () => {
      const got = parseBmcAddress(address);
      const picked = Object.fromEntries(Object.keys(want).map((k) => [k, got[k as keyof BmcAddress]]));
      assert.deepEqual(picked, want);
    });

  it('names every Redfish scheme, redfish first, each with both transports', () => {
    assert.equal(REDFISH_SCHEMES[0], 'redfish');
    for (const s of ['redfish+http', 'redfish-virtualmedia+https', 'idrac-redfish', 'ilo5-redfish+http'])
      assert.ok(REDFISH_SCHEMES.includes(s), s);
  });
});
