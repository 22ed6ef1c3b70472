import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NetworkSpec } from '../../../../src/api/virtualhosts.ts';
import {
  defaultNetworkData,
  type NetworkDataInput,
  renderTemplate,
} from '../../../../src/baremetal/virtualhosts/network-data.ts';

const networks: NetworkSpec[] = [
  {
    name: 'oam',
    subnet: '192.168.0.0/20',
    staticAllocationStart: '192.168.2.10',
    staticAllocationStop: '192.168.2.40',
    routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '$vinobridge' }],
    dnsServers: ['8.8.8.8', '1.1.1.1'],
  },
  {
    name: 'v6',
    subnet: 'fd00::/64',
    type: 'ipv6',
    staticAllocationStart: 'fd00::10',
    staticAllocationStop: 'fd00::20',
  },
];
const input: NetworkDataInput = {
  vm: {
    name: 'lab-n1-worker-0',
    namespace: 'default',
    pool: 'lab',
    node: 'n1',
    flavor: 'worker',
    index: 0,
    bootMAC: '02:00:00:00:00:01',
  },
  nics: [
    { nic: 'enp1s0', network: 'oam', ip: '192.168.2.11', mac: '02:00:00:00:00:01' },
    { nic: 'enp2s0', network: 'v6', ip: 'fd00::10', mac: '02:00:00:00:00:00', mtu: 9000 },
  ],
  networks,
  bridgeIPs: { oam: '192.168.2.10' },
};

describe('network data', () => {
  it('fills the documented variables, the bridge standing in for $vinobridge', () => {
    const out = renderTemplate(
      'name={{vm.name}} ip={{ interfaces.enp1s0.ip }}/{{interfaces.enp1s0.prefix}} mask={{interfaces.enp1s0.netmask}} gw={{ networks.oam.gateway }} dns={{networks.oam.dns}} mtu={{interfaces.enp2s0.mtu}} v6={{interfaces.enp2s0.ip}}/{{networks.v6.prefix}}',
      input,
    );
    assert.equal(
      out,
      'name=lab-n1-worker-0 ip=192.168.2.11/20 mask=255.255.240.0 gw=192.168.2.10 dns=8.8.8.8,1.1.1.1 mtu=9000 v6=fd00::10/64',
    );
  });
  it('names an unknown variable instead of writing nothing', () => {
    assert.throws(
      () => renderTemplate('{{ interfaces.eth0.ip }}', input),
      /unknown variable \{\{ interfaces\.eth0\.ip \}\}; known: .*interfaces\.enp1s0\.ip/,
    );
  });
  it('without a template: OpenStack network_data.json', () => {
    const data = JSON.parse(defaultNetworkData(input));
    assert.deepEqual(data.links[0], {
      id: 'enp1s0',
      type: 'phy',
      ethernet_mac_address: '02:00:00:00:00:01',
      mtu: 1500,
    });
    assert.deepEqual(data.networks[0], {
      id: 'enp1s0-oam',
      link: 'enp1s0',
      type: 'ipv4',
      ip_address: '192.168.2.11',
      netmask: '255.255.240.0',
      routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '192.168.2.10' }],
    });
    assert.equal(data.networks[1].type, 'ipv6');
    assert.deepEqual(data.services, [
      { type: 'dns', address: '8.8.8.8' },
      { type: 'dns', address: '1.1.1.1' },
    ]);
  });
});
