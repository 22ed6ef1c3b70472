// The anchor's bmh package cases that concern one host: network data as JSON
// and YAML, a bad or missing one, health and claims read from the object.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BareMetalHost } from '../../../../src/api/baremetal.ts';
import { SIP_LABELS, TENANT_LABELS } from '../../../../src/api/tenant.ts';
import { hostClaim, hostHealth, viewOfHost } from '../../../../src/tenant/scheduling/host-view.ts';
import {
  addressesFromNetworkData,
  NetworkDataError,
} from '../../../../src/tenant/scheduling/network-data.ts';

const JSON_DATA = JSON.stringify({
  links: [{ id: 'eno3', type: 'phy' }],
  networks: [
    { id: 'oam-ipv4', type: 'ipv4', link: 'eno3', ip_address: '32.68.51.139', netmask: '255.255.255.128' },
    { id: 'pxe-ipv4', type: 'ipv4', link: 'eno4', ip_address: '172.3.3.4' },
    { id: 'dhcp', type: 'ipv4_dhcp', link: 'eno5' },
  ],
});
const YAML_DATA = `links:
  - id: eno3
    type: phy
networks:
  - id: oam-ipv4
    type: ipv4
    link: eno3
    ip_address: 32.68.51.139
`;

describe('addressesFromNetworkData', () => {
  it('reads OpenStack network_data JSON by network id', () => {
    assert.deepEqual(addressesFromNetworkData(JSON_DATA), {
      'oam-ipv4': '32.68.51.139',
      'pxe-ipv4': '172.3.3.4',
    });
  });
  it('reads the same as YAML', () => {
    assert.deepEqual(addressesFromNetworkData(YAML_DATA), { 'oam-ipv4': '32.68.51.139' });
  });
  for (const [name, text] of [
    ['garbage', '{{{ not yaml'],
    ['no networks', '{"links": []}'],
    ['empty', ''],
  ] as const) {
    it(`refuses ${name}`, () => assert.throws(() => addressesFromNetworkData(text), NetworkDataError));
  }
});

const bmh = (
  status: BareMetalHost['status'],
  online = true,
  labels: Record<string, string> = {},
): BareMetalHost => ({
  apiVersion: 'metal3.io/v1alpha1',
  kind: 'BareMetalHost',
  metadata: { name: 'h1', namespace: 'metal3', resourceVersion: '7', labels },
  spec: { online, networkData: { name: 'h1-nd' } },
  ...(status ? { status } : {}),
});

describe('hostHealth', () => {
  const cases: [string, BareMetalHost, boolean][] = [
    [
      'available and OK',
      bmh({ provisioning: { state: 'available' }, operationalStatus: 'OK', poweredOn: true }),
      true,
    ],
    [
      'provisioned and OK',
      bmh({ provisioning: { state: 'provisioned' }, operationalStatus: 'OK', poweredOn: true }),
      true,
    ],
    ['still registering', bmh({ provisioning: { state: 'registering' } }), false],
    ['never seen by the host controller', bmh(undefined), false],
    [
      'BMC unreachable',
      bmh({
        provisioning: { state: 'available' },
        operationalStatus: 'error',
        errorType: 'registration error',
        errorMessage: 'connection refused',
      }),
      false,
    ],
    [
      'powered off against online: true',
      bmh({ provisioning: { state: 'available' }, operationalStatus: 'OK', poweredOn: false }),
      false,
    ],
    [
      'powered off with online: false',
      bmh({ provisioning: { state: 'available' }, operationalStatus: 'OK', poweredOn: false }, false),
      true,
    ],
  ];
  for (const [name, host, healthy] of cases) it(name, () => assert.equal(hostHealth(host).healthy, healthy));
  it('says why', () => {
    const h = hostHealth(
      bmh({ provisioning: { state: 'available' }, errorType: 'registration error', errorMessage: 'gone' }),
    );
    assert.deepEqual(h, { healthy: false, reason: 'registration error: gone' });
  });
});

describe('hostClaim', () => {
  it('reads nodewarden labels', () => {
    assert.deepEqual(
      hostClaim({
        [TENANT_LABELS.clusterNamespace]: 'ns',
        [TENANT_LABELS.clusterName]: 'c',
        [TENANT_LABELS.role]: 'Worker',
        [TENANT_LABELS.standby]: 'true',
      }),
      { clusterNamespace: 'ns', clusterName: 'c', role: 'Worker', standby: true },
    );
  });
  it("treats a host labelled by SIP alone as someone else's", () => {
    const c = hostClaim({
      [SIP_LABELS.clusterNamespace]: 'ns',
      [SIP_LABELS.clusterName]: 'c',
      [SIP_LABELS.role]: 'Worker',
    });
    assert.equal(c?.foreign, true);
  });
  it('a host without labels is free (hasMachine false)', () => {
    assert.equal(hostClaim({}), undefined);
    assert.equal(viewOfHost(bmh(undefined)).claim, undefined);
  });
  it('a host without spec.networkData is marked so (the anchor refuses it)', () => {
    const h = bmh(undefined);
    delete h.spec.networkData;
    assert.equal(viewOfHost(h).hasNetworkData, false);
  });
});
