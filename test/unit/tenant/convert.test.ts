import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { ConversionError, convertSipCluster } from '../../../src/tenant/convert.ts';

// The anchor's sample SIPCluster, in its shape (services as lists, optional interface ids).
const SIP = parse(`
apiVersion: airship.airshipit.org/v1
kind: SIPCluster
metadata:
  name: subcluster-1
  namespace: sipcluster-system
  finalizers: [sip.airship.airshipit.org/finalizer]
spec:
  nodes:
    ControlPlane:
      labelSelector:
        matchLabels: {vino.airshipit.org/flavor: control-plane}
      topologyKey: vino.airshipit.org/rack
      count: {active: 1, standby: 1}
    Worker:
      labelSelector:
        matchLabels: {vino.airshipit.org/flavor: worker}
      topologyKey: vino.airshipit.org/host
      count: {active: 1, standby: 1}
    Storage:
      count: {active: 1}
  services:
    loadBalancerControlPlane:
      - image: haproxy:2.3.2
        nodeInterfaceId: oam-ipv4
        nodePort: 30001
        nodeLabels: {a: b}
    loadBalancerWorker:
      - image: haproxy:2.3.2
        nodeInterfaceId: oam-ipv4
        nodePortRange: {start: 30002, end: 30011}
      - image: haproxy:2.3.2
        nodePortRange: {start: 30100, end: 30101}
    jumpHost:
      - image: quay.io/airshipit/jump-host
        nodePort: 30000
        nodeSSHPrivateKeys: ssh-private-keys
        bmc: {proxy: false}
        sshAuthorizedKeys: ["ssh-rsa AAAA... user@host"]
`);

describe('convertSipCluster', () => {
  const { cluster, notes, invalid } = convertSipCluster(SIP);

  it('carries over roles, selectors, topology keys and counts', () => {
    assert.deepEqual(cluster.spec.nodes, {
      ControlPlane: {
        labelSelector: { matchLabels: { 'vino.airshipit.org/flavor': 'control-plane' } },
        topologyKey: 'vino.airshipit.org/rack',
        count: { active: 1, standby: 1 },
      },
      Worker: {
        labelSelector: { matchLabels: { 'vino.airshipit.org/flavor': 'worker' } },
        topologyKey: 'vino.airshipit.org/host',
        count: { active: 1, standby: 1 },
      },
    });
    assert.equal(cluster.apiVersion, 'baremetal.nodewarden.dev/v1alpha1');
    assert.deepEqual(cluster.metadata, { name: 'subcluster-1', namespace: 'sipcluster-system' });
  });

  it('carries over the first of each service', () => {
    assert.deepEqual(cluster.spec.services, {
      controlPlaneLoadBalancer: { nodePort: 30001, nodeInterfaceId: 'oam-ipv4', image: 'haproxy:2.3.2' },
      workerLoadBalancer: {
        nodePortRange: { start: 30002, end: 30011 },
        nodeInterfaceId: 'oam-ipv4',
        image: 'haproxy:2.3.2',
      },
      jumpHost: {
        nodePort: 30000,
        nodeSSHPrivateKeys: 'ssh-private-keys',
        nodeInterfaceId: 'oam-ipv4',
        sshAuthorizedKeys: ['ssh-rsa AAAA... user@host'],
        image: 'quay.io/airshipit/jump-host',
      },
    });
  });

  it('says what it could not carry over', () => {
    const said = notes.join('\n');
    for (const m of [
      /spec\.nodes\.Storage: dropped/,
      /loadBalancerWorker: 2 given, only the first/,
      /loadBalancerControlPlane\[0\]\.nodeLabels: dropped/,
      /jumpHost\.nodeInterfaceId: missing .* set to oam-ipv4/,
      /bmc\.proxy: dropped/,
      /metadata\.finalizers: dropped/,
    ])
      assert.match(said, m);
    assert.deepEqual(invalid, []);
  });

  it('reports a result the API would refuse', () => {
    const broken = structuredClone(SIP);
    broken.spec.services.jumpHost[0].nodePort = 80;
    assert.ok(convertSipCluster(broken).invalid.some((e) => e.includes('nodePort')));
  });

  it('refuses what is not a SIPCluster', () => {
    assert.throws(() => convertSipCluster({ apiVersion: 'v1', kind: 'ConfigMap' }), ConversionError);
  });
});
