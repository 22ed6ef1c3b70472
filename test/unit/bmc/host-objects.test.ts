import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BareMetalHosts, RACK_LABEL } from '../../../src/api/baremetal.ts';
import {
  bareMetalHost,
  credentialsSecret,
  networkDataSecret,
} from '../../../src/cluster/infra/bmc/host-objects.ts';
import type { Machine } from '../../../src/cluster/infra/bmc/protocol.ts';
import { spec } from './fixtures.ts';

const machine: Machine = {
  ...spec('bm-r1-03', {
    rack: 'rack-1',
    nics: [
      { name: 'eno1', mac: '02:00:00:00:01:03', ip: '198.18.4.13' },
      { name: 'eno2', mac: '02:00:00:00:01:04' },
    ],
  }),
  power: 'Off',
  bmcAddress: 'redfish://127.0.0.1:40000/redfish/v1/Systems/bm-r1-03',
};

describe("a physical machine's objects in the cluster", () => {
  it('is a BareMetalHost in metal3 with its rack, BMC, boot MAC and Secrets, valid by the CRD', () => {
    const host = bareMetalHost(machine);
    assert.equal(host.metadata.namespace, 'metal3');
    assert.equal(host.metadata.labels[RACK_LABEL], 'rack-1');
    assert.deepEqual(host.spec.bmc, {
      address: machine.bmcAddress,
      credentialsName: 'bm-r1-03-bmc-secret',
      disableCertificateVerification: true,
    });
    assert.equal(host.spec.bootMACAddress, '02:00:00:00:01:03');
    assert.deepEqual(host.spec.networkData, { name: 'bm-r1-03-network-data', namespace: 'metal3' });
    assert.equal(host.spec.online, true);
    const checked = BareMetalHosts.validate(host);
    assert.ok(checked.ok, JSON.stringify(checked));
  });

  it("carries the machine's own credentials", () => {
    assert.deepEqual(credentialsSecret(machine).stringData, machine.credentials);
  });

  it('describes its network as OpenStack network_data: a link per NIC, the first on oam-ipv4', () => {
    const data = JSON.parse(networkDataSecret(machine).stringData.networkData);
    assert.deepEqual(
      data.links.map((l: { id: string; ethernet_mac_address: string }) => [l.id, l.ethernet_mac_address]),
      [
        ['eno1', '02:00:00:00:01:03'],
        ['eno2', '02:00:00:00:01:04'],
      ],
    );
    assert.deepEqual(data.networks[0], {
      id: 'oam-ipv4',
      type: 'ipv4',
      link: 'eno1',
      ip_address: '198.18.4.13',
      netmask: '255.255.0.0',
      routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '198.18.0.1' }],
    });
    assert.ok(Array.isArray(data.services));
  });
});

describe('the fleet in one line, for cluster status', () => {
  it('counts machines, racks, VMs, hypervisors and those powered on', async () => {
    const { describeFleet } = await import('../../../src/cluster/infra/bmc/addon.ts');
    const m = (id: string, over: Partial<Machine>): Machine =>
      ({ ...spec(id), power: 'Off', bmcAddress: '', ...over }) as Machine;
    assert.equal(
      describeFleet([
        m('a', { rack: 'rack-0', power: 'On' }),
        m('b', { rack: 'rack-1' }),
        m('v', { kind: 'vm', rack: undefined, hypervisor: 'n1', power: 'On' }),
      ]),
      '2 machines in 2 racks, 1 VM on 1 hypervisor; 2 on',
    );
    assert.equal(describeFleet([]), '0 machines in 0 racks; 0 on');
  });
});
