import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KVMCluster } from '../../../src/api/kvm.ts';
import { kvmClusterAdmission, kvmClusterProblems } from '../../../src/kvm/webhook.ts';
import type { CacheRegistrar } from '../../../src/runtime/host.ts';
import type { K8sObject } from '../../../src/runtime/resources.ts';
import type { AdmissionRequest } from '../../../src/runtime/webhook.ts';
import { type ClusterShape, kvmCluster, masterSpec } from './fixtures.ts';

const at = (namespace: string, name: string, vni: number, spec: ClusterShape['spec'] = {}) =>
  kvmCluster({ namespace, name, spec: { network: { vni }, ...spec } });
const web = (nodePort?: number) => ({
  portMappings: [{ name: 'web', targetPort: 8080, ...(nodePort ? { nodePort } : {}) }],
});
const withMasters = (kc: KVMCluster, ...ids: string[]): KVMCluster => ({
  ...kc,
  spec: { ...kc.spec, masters: ids.map((id) => masterSpec(id)) },
});

describe('kvmClusterProblems', () => {
  const others = [at('team-a', 'blue', 10, web(31080)), at('team-b', 'green', 11)];

  const cases: Array<{ name: string; kc: KVMCluster; old?: KVMCluster; want: RegExp[] }> = [
    { name: 'a fine new cluster', kc: at('team-c', 'red', 12, web(31081)), want: [] },
    {
      name: 'the id is taken in another namespace',
      kc: at('team-c', 'blue', 12),
      want: [/^metadata\.name: cluster id "blue" is taken by the KVMCluster in namespace team-a/],
    },
    {
      name: 'the VNI is in use',
      kc: at('team-c', 'red', 11),
      want: [/^spec\.network\.vni: 11 is in use by cluster team-b\/green/],
    },
    {
      name: "an explicit nodePort is another cluster's",
      kc: at('team-c', 'red', 12, web(31080)),
      want: [/^spec\.portMappings\[web\]\.nodePort: 31080 is used by cluster team-a\/blue/],
    },
    {
      name: 'every clash at once, each named',
      kc: at('team-c', 'blue', 10, web(31080)),
      want: [/^metadata\.name/, /^spec\.network\.vni/, /^spec\.portMappings\[web\]/],
    },
    {
      name: 'the same cluster (same namespace and name) is not its own rival',
      kc: at('team-a', 'blue', 10, web(31080)),
      want: [],
    },
    {
      name: 'default mappings (no nodePort) never clash',
      kc: at('team-c', 'red', 12, { portMappings: [] }),
      want: [],
    },
    {
      name: 'a memory the controller cannot read',
      kc: at('team-c', 'red', 12, { masters: [masterSpec('m1', { memory: '8GB' })] }),
      want: [/^spec\.masters\[m1\]\.memory: memory "8GB"/],
    },
    {
      name: 'an update keeping one master is allowed',
      kc: withMasters(at('team-c', 'red', 12), 'm1', 'm4', 'm5'),
      old: withMasters(at('team-c', 'red', 12), 'm1', 'm2', 'm3'),
      want: [],
    },
    {
      name: 'an update replacing every master is refused',
      kc: withMasters(at('team-c', 'red', 12), 'm4', 'm5', 'm6'),
      old: withMasters(at('team-c', 'red', 12), 'm1', 'm2', 'm3'),
      want: [/^spec\.masters: every master \(m1, m2, m3\) would be replaced at once/],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = kvmClusterProblems(c.kc, [...others, ...(c.old ? [c.old] : [])], c.old);
      assert.equal(got.length, c.want.length, got.join('\n'));
      for (const [i, re] of c.want.entries()) assert.match(got[i] ?? '', re);
    });
  }
});

describe('kvmClusterAdmission', () => {
  const others = [at('team-a', 'blue', 10)];
  const handler = (synced: boolean, list: KVMCluster[] = others) =>
    kvmClusterAdmission({
      informer: () => ({ hasSynced: () => synced, list: () => list }),
    } as unknown as Pick<CacheRegistrar, 'informer'>);
  const request = (operation: AdmissionRequest['operation'], object?: KVMCluster, oldObject?: KVMCluster) =>
    ({
      uid: '1',
      operation,
      kind: { group: 'kvm.nodewarden.dev', version: 'v1alpha1', kind: 'KVMCluster' },
      resource: { group: 'kvm.nodewarden.dev', version: 'v1alpha1', resource: 'kvmclusters' },
      userInfo: {},
      object: (object ?? null) as K8sObject | null,
      oldObject: (oldObject ?? null) as K8sObject | null,
    }) as AdmissionRequest;

  it('refuses while its cache is not synced, so a taken id cannot slip through', async () => {
    const r = await handler(false)(request('CREATE', at('team-c', 'red', 12)));
    assert.equal(r.allowed, false);
    assert.equal(r.code, 503);
  });

  it('allows a fine cluster, refuses a clash with its problems', async () => {
    assert.deepEqual(await handler(true)(request('CREATE', at('team-c', 'red', 12))), { allowed: true });
    const r = await handler(true)(request('CREATE', at('team-c', 'red', 10)));
    assert.equal(r.allowed, false);
    assert.match(r.message ?? '', /spec\.network\.vni: 10/);
  });

  it('checks an update against the old masters', async () => {
    const old = withMasters(at('team-c', 'red', 12), 'm1');
    const r = await handler(true, [...others, old])(request('UPDATE', withMasters(old, 'm2'), old));
    assert.equal(r.allowed, false);
    assert.match(r.message ?? '', /spec\.masters: every master \(m1\)/);
  });

  it('lets a cluster being deleted and DELETE requests through', async () => {
    const clash = at('team-c', 'red', 10);
    const deleting = { ...clash, metadata: { ...clash.metadata, deletionTimestamp: '2026-11-24T00:00:00Z' } };
    assert.equal((await handler(true)(request('UPDATE', deleting, clash))).allowed, true);
    assert.equal((await handler(true)(request('DELETE', undefined, clash))).allowed, true);
  });
});
