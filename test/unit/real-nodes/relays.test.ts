import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { atClusterGateway, realNodesLayout } from '../../../src/cluster/real-nodes/layout.ts';
import { addonsToPublish } from '../../../src/cluster/real-nodes/local.ts';
import { relayCommands } from '../../../src/cluster/real-nodes/real-nodes.ts';

const layout = realNodesLayout('dev', '/s/clusters/dev', ['real-000']);
const sock = (port: number) => `unix:/s/clusters/dev/real-nodes/port-${port}.sock`;

describe("the relays that publish the host's loopback ports to the cluster", () => {
  it('publishes each port at the same port of the gateway, through a socket per port', () => {
    const c = relayCommands(layout, [6443, 41000, 6443], ['nw', 'relay']);
    assert.deepEqual(c['relay-host'], [
      ...['nw', 'relay'],
      ...['--forward', `${sock(6443)}=tcp:127.0.0.1:6443`],
      ...['--forward', `${sock(41000)}=tcp:127.0.0.1:41000`],
    ]);
    assert.deepEqual(c['relay-cluster'], [
      ...['ip', 'netns', 'exec', 'nw-dev', 'nw', 'relay'],
      ...['--forward', `tcp:172.30.0.1:6443=${sock(6443)}`],
      ...['--forward', `tcp:172.30.0.1:41000=${sock(41000)}`],
      ...['--connect-proxy', 'unix:/s/clusters/dev/real-nodes/egress.sock'],
      ...['--allow', '172.30.0.0/24', '--allow', '10.244.0.0/16'],
    ]);
  });
});

describe('where pods reach a URL of the host', () => {
  const cases: [string, string | undefined][] = [
    ['http://127.0.0.1:41000', 'http://172.30.0.1:41000'],
    ['https://127.0.0.1:8443/redfish/v1', 'https://172.30.0.1:8443/redfish/v1'],
    ['http://localhost:41000', undefined],
    ['http://10.1.2.3:41000', undefined],
    ['http://127.0.0.1', undefined],
  ];
  for (const [url, want] of cases)
    it(`${url} → ${want ?? 'not published'}`, () => assert.equal(atClusterGateway(url), want));

  it("publishes the add-ons on loopback, with their ports, and leaves the others' out", () => {
    assert.deepEqual(
      addonsToPublish([
        { name: 'cloud', endpoint: 'http://127.0.0.1:41000' },
        { name: 'elsewhere', endpoint: 'http://192.0.2.1:80' },
      ]),
      [
        {
          name: 'cloud',
          endpoint: 'http://127.0.0.1:41000',
          port: 41000,
          inCluster: 'http://172.30.0.1:41000',
        },
      ],
    );
  });
});
