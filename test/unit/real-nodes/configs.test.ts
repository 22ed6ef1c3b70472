import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clusterDnsObjects } from '../../../src/cluster/real-nodes/cluster-dns.ts';
import {
  cniConfig,
  egressSelectorConfig,
  GUARDED_SYSCTLS,
  kubeletConfig,
  kubeProxyConfig,
  mountScript,
} from '../../../src/cluster/real-nodes/configs.ts';
import { CLUSTER_DNS_IP, realNodesLayout } from '../../../src/cluster/real-nodes/layout.ts';

const layout = realNodesLayout('dev', '/s/dev', ['real-000', 'real-001']);
const node = layout.nodes[1]!;

describe('real node configs', () => {
  it("points kubelet at the node's own cgroup, containerd, address and the cluster's DNS", () => {
    const c = kubeletConfig(node, '/s/dev/real-nodes/real-001/pki/ca.crt') as Record<string, unknown>;
    assert.equal(c.cgroupRoot, '/nodewarden/dev/real-001');
    assert.equal(c.cgroupDriver, 'cgroupfs');
    assert.equal(c.failCgroupV1, false);
    assert.equal(c.containerRuntimeEndpoint, 'unix:///s/dev/real-nodes/real-001/containerd/containerd.sock');
    assert.equal(c.address, '172.30.0.3');
    assert.deepEqual(c.clusterDNS, [CLUSTER_DNS_IP]);
    assert.deepEqual((c.authentication as { anonymous: unknown }).anonymous, { enabled: false });
  });

  it('keeps kube-proxy off the host-wide conntrack table and on the node address', () => {
    const c = kubeProxyConfig(node) as Record<string, unknown>;
    assert.deepEqual(c.conntrack, { maxPerCore: 0 });
    assert.equal(c.bindAddress, '172.30.0.3');
    assert.equal(c.hostnameOverride, 'real-001');
  });

  it("gives pods the node's own range and keeps IPAM state in its folder", () => {
    const c = cniConfig('dev', node) as { plugins: { ipam?: { ranges: unknown; dataDir: string } }[] };
    assert.deepEqual(c.plugins[0]!.ipam!.ranges, [[{ subnet: '10.244.2.0/24' }]]);
    assert.equal(c.plugins[0]!.ipam!.dataDir, '/s/dev/real-nodes/real-001/cni/ipam');
  });

  it('guards every sysctl kubelet writes machine-wide before it runs, and ends as pause', () => {
    const script = mountScript(node, '/rt/pause');
    for (const key of Object.keys(GUARDED_SYSCTLS)) assert.match(script, new RegExp(`/proc/sys/${key}\\n`));
    assert.ok(script.indexOf('/proc/sys/') < script.indexOf('exec /rt/pause'));
    assert.match(script, /mount --bind \/s\/dev\/real-nodes\/real-001\/var \/var/);
    assert.ok(script.trimEnd().endsWith('exec /rt/pause'));
  });

  it("sends the API server's dials into the cluster through the egress socket", () => {
    const c = egressSelectorConfig(layout) as { egressSelections: { name: string; connection: unknown }[] };
    assert.deepEqual(c.egressSelections[0], {
      name: 'cluster',
      connection: {
        proxyProtocol: 'HTTPConnect',
        transport: { uds: { udsName: '/s/dev/real-nodes/egress.sock' } },
      },
    });
  });

  it('runs cluster DNS only on real nodes, at the address kubelet gives pods', () => {
    const objs = clusterDnsObjects('localhost/coredns:v1.15.0');
    const svc = objs.find((o) => o.kind === 'Service') as { spec: { clusterIP: string } };
    assert.equal(svc.spec.clusterIP, CLUSTER_DNS_IP);
    const dep = objs.find((o) => o.kind === 'Deployment') as {
      spec: { template: { spec: { nodeSelector: Record<string, string> } } };
    };
    assert.deepEqual(dep.spec.template.spec.nodeSelector, { 'nodewarden.dev/real': 'true' });
  });
});
