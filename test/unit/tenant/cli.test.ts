import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { type TenantCluster, TenantClusters } from '../../../src/api/tenant.ts';
import { tenantCommand, tenantDetail, tenantTable } from '../../../src/tenant/cli.ts';

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { out: { write: (s: string) => out.push(s) }, err: { write: (s: string) => err.push(s) } },
    out,
    err,
  };
}

const blue: TenantCluster = {
  ...TenantClusters.make(
    { name: 'blue', namespace: 'ns' },
    {
      nodes: {
        ControlPlane: { topologyKey: 'rack', count: { active: 1 } },
        Worker: { count: { active: 1, standby: 1 } },
      },
      services: { controlPlaneLoadBalancer: { nodePort: 30000, nodeInterfaceId: 'oam-ipv4' } },
    },
  ),
  status: {
    claimedHosts: 3,
    desiredHosts: 3,
    hosts: {
      ControlPlane: [
        {
          name: 'h1',
          namespace: 'metal3',
          rack: 'r1',
          domain: 'r1',
          ip: '10.0.0.1',
          standby: false,
          health: 'Healthy',
        },
      ],
      Worker: [
        {
          name: 'h2',
          namespace: 'metal3',
          rack: 'r2',
          ip: '10.0.0.2',
          standby: false,
          health: 'Failed',
          healthReason: 'gone',
        },
        { name: 'h3', namespace: 'metal3', rack: 'r3', ip: '10.0.0.3', standby: true, health: 'Healthy' },
      ],
    },
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        reason: 'HostFailed',
        message: 'h2: gone',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
  },
};

describe('tenant list and status', () => {
  it('lists clusters with their conditions and hosts claimed of desired', () => {
    const lines = tenantTable([blue], false).trim().split('\n');
    assert.match(lines[0]!, /^NAMESPACE\s+NAME\s+READY\s+SCHEDULED\s+SERVICES\s+HOSTS$/);
    assert.match(lines[1]!, /^ns\s+blue\s+False\s+-\s+-\s+3\/3$/);
    assert.match(tenantTable([blue], true), /1\s+HostFailed/);
  });
  it('shows each host with role, rack, address, standby and health', () => {
    const d = tenantDetail(blue);
    assert.match(d, /ControlPlane\s+metal3\/h1\s+r1\s+r1\s+10\.0\.0\.1\s+active\s+Healthy/);
    assert.match(d, /Worker\s+metal3\/h2\s+r2\s+-\s+10\.0\.0\.2\s+active\s+Failed: gone/);
    assert.match(d, /Worker\s+metal3\/h3\s+r3\s+-\s+10\.0\.0\.3\s+standby\s+Healthy/);
    assert.match(d, /control-plane load balancer\s+nodePort 30000/);
    assert.match(d, /Ready=False HostFailed: h2: gone/);
  });
});

describe('tenant convert', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tenant-convert-'));
  it('prints the TenantCluster and says on stderr what it dropped', async () => {
    const file = join(dir, 'sip.yaml');
    writeFileSync(
      file,
      `apiVersion: airship.airshipit.org/v1
kind: SIPCluster
metadata: {name: sub1, namespace: sip}
spec:
  nodes:
    Worker: {topologyKey: rack, count: {active: 2, standby: 1}}
  services:
    loadBalancerControlPlane: [{image: haproxy, nodePort: 30001, nodeInterfaceId: oam-ipv4, clusterIP: 1.2.3.4}]
`,
    );
    const c = io();
    assert.equal(await tenantCommand(['convert', '-f', file], c.io), 0);
    const out = parse(c.out.join(''));
    assert.equal(out.kind, 'TenantCluster');
    assert.deepEqual(out.spec.nodes.Worker.count, { active: 2, standby: 1 });
    assert.match(
      c.err.join(''),
      /not carried over: spec\.services\.loadBalancerControlPlane\[0\]\.clusterIP: dropped/,
    );
  });
  it('fails on a file that is not a SIPCluster', async () => {
    const file = join(dir, 'cm.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\n');
    const c = io();
    assert.equal(await tenantCommand(['convert', '-f', file], c.io), 1);
    assert.match(c.err.join(''), /not a SIPCluster/);
  });
  it('needs -f', async () => {
    const c = io();
    assert.equal(await tenantCommand(['convert'], c.io), 2);
  });
});
