// Bad input at the BareMetalHost door (metal3.io, as nodewarden installs it
// where metal3 is absent), against the real API server: wrong types, empty and
// oversized strings. Each is refused with a message naming the field, and
// nothing is created.
import { BareMetalHosts } from '../../src/api/baremetal.ts';
import { refusesBadInput } from '../harness/bad-input.ts';

const TOO_LONG = 'Too long: may not be (more than|longer than)';
const bmc = (o: Record<string, unknown>) => (s: Record<string, unknown>) => ({
  ...s,
  bmc: { ...(s.bmc as object), ...o },
});

refusesBadInput(
  BareMetalHosts,
  {
    online: true,
    bootMACAddress: '52:54:00:00:00:01',
    bmc: {
      address: 'redfish://192.0.2.10:8443/redfish/v1/Systems/worker-0',
      credentialsName: 'worker-0-bmc-secret',
      disableCertificateVerification: true,
    },
  },
  [
    ['a BMC without address', bmc({ address: undefined }), /spec\.bmc\.address: Required value/],
    [
      'an empty BMC address',
      bmc({ address: '' }),
      /spec\.bmc\.address: Invalid value: "": spec\.bmc\.address in body should be at least 1 chars long/,
    ],
    [
      'an oversized BMC address',
      bmc({ address: `redfish://${'h'.repeat(2040)}` }),
      new RegExp(`spec\\.bmc\\.address: ${TOO_LONG} 2048`),
    ],
    [
      'a BMC without credentialsName',
      bmc({ credentialsName: undefined }),
      /spec\.bmc\.credentialsName: Required value/,
    ],
    [
      'an oversized credentialsName',
      bmc({ credentialsName: 'c'.repeat(254) }),
      new RegExp(`spec\\.bmc\\.credentialsName: ${TOO_LONG} 253`),
    ],
    [
      'disableCertificateVerification given as a string',
      bmc({ disableCertificateVerification: 'true' }),
      /spec\.bmc\.disableCertificateVerification: Invalid value: "string": spec\.bmc\.disableCertificateVerification in body must be of type boolean/,
    ],
    [
      'a BMC that is no object',
      { bmc: 'redfish://x' },
      /spec\.bmc: Invalid value: "string": spec\.bmc in body must be of type object/,
    ],
    [
      'online given as a string',
      { online: 'yes' },
      /spec\.online: Invalid value: "string": spec\.online in body must be of type boolean/,
    ],
    [
      'an oversized bootMACAddress',
      { bootMACAddress: '52:54:00:00:00:01:02' },
      new RegExp(`spec\\.bootMACAddress: ${TOO_LONG} 17`),
    ],
    [
      'a bootMACAddress that is no MAC',
      { bootMACAddress: 'zz' },
      /spec\.bootMACAddress: Invalid value: "zz": spec\.bootMACAddress in body should match/,
    ],
    [
      'an image url past 2048 characters',
      { image: { url: `http://images.example/${'x'.repeat(2100)}` } },
      new RegExp(`spec\\.image\\.url: ${TOO_LONG} 2048`),
    ],
    [
      'a bootMACAddress of the wrong type',
      { bootMACAddress: 525400000001 },
      /spec\.bootMACAddress: Invalid value: "integer": spec\.bootMACAddress in body must be of type string/,
    ],
    ['an image without url', { image: { checksum: 'abc' } }, /spec\.image\.url: Required value/],
    [
      'an image with an empty url',
      { image: { url: '' } },
      /spec\.image\.url: Invalid value: "": spec\.image\.url in body should be at least 1 chars long/,
    ],
    [
      'an oversized userData Secret name',
      { userData: { name: 'u'.repeat(254) } },
      new RegExp(`spec\\.userData\\.name: ${TOO_LONG} 253`),
    ],
    [
      'an oversized networkData namespace',
      { networkData: { name: 'n', namespace: 'n'.repeat(64) } },
      new RegExp(`spec\\.networkData\\.namespace: ${TOO_LONG} 63`),
    ],
    [
      'externallyProvisioned given as a number',
      { externallyProvisioned: 1 },
      /spec\.externallyProvisioned: Invalid value: "integer": spec\.externallyProvisioned in body must be of type boolean/,
    ],
  ],
);
