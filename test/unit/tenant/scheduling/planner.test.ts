import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TENANT_LABELS, type TenantClusterSpecType } from '../../../../src/api/tenant.ts';
import { describeShortfalls } from '../../../../src/tenant/scheduling/explain.ts';
import { type HostView, hostClaim, hostKey } from '../../../../src/tenant/scheduling/host-view.ts';
import {
  type HostFacts,
  type PlanInput,
  planTenantHosts,
} from '../../../../src/tenant/scheduling/planner.ts';

const RACK = 'topology.nodewarden.dev/rack';
const CLUSTER = { namespace: 'tenants', name: 'blue' };

interface HostOpts {
  rack?: string;
  labels?: Record<string, string>;
  unhealthy?: string;
  noNetworkData?: boolean;
  heldBy?: { name: string; role: string; standby?: boolean; namespace?: string };
}

function host(name: string, o: HostOpts = {}): HostView {
  const labels: Record<string, string> = { ...(o.rack ? { [RACK]: o.rack } : {}), ...o.labels };
  if (o.heldBy) {
    labels[TENANT_LABELS.clusterNamespace] = o.heldBy.namespace ?? CLUSTER.namespace;
    labels[TENANT_LABELS.clusterName] = o.heldBy.name;
    labels[TENANT_LABELS.role] = o.heldBy.role;
    labels[TENANT_LABELS.standby] = String(o.heldBy.standby ?? false);
  }
  const claim = hostClaim(labels);
  return {
    namespace: 'metal3',
    name,
    resourceVersion: '1',
    labels,
    health: o.unhealthy ? { healthy: false, reason: o.unhealthy } : { healthy: true },
    ...(claim ? { claim } : {}),
    hasNetworkData: !o.noNetworkData,
  };
}

const okFacts = (hosts: HostView[], ids = ['oam-ipv4']): Map<string, HostFacts> =>
  new Map(
    hosts.map((h, i) => [
      hostKey(h),
      {
        ok: true,
        ips: Object.fromEntries(ids.map((id) => [id, `10.0.0.${i + 1}`])),
        bmc: { address: `redfish://bmc/${h.name}`, username: 'u', password: 'p' },
      },
    ]),
  );

type Counts = { active: number; standby?: number };
const spec = (
  cp: Counts | undefined,
  w: Counts | undefined,
  extra: {
    key?: string;
    scope?: 'Role' | 'Cluster';
    cpLabels?: Record<string, string>;
    wLabels?: Record<string, string>;
  } = {},
): TenantClusterSpecType => ({
  nodes: {
    ...(cp
      ? {
          ControlPlane: {
            count: cp,
            topologyKey: extra.key ?? RACK,
            ...(extra.scope ? { topologyScope: extra.scope } : {}),
            ...(extra.cpLabels ? { labelSelector: { matchLabels: extra.cpLabels } } : {}),
          },
        }
      : {}),
    ...(w
      ? {
          Worker: {
            count: w,
            topologyKey: extra.key ?? RACK,
            ...(extra.wLabels ? { labelSelector: { matchLabels: extra.wLabels } } : {}),
          },
        }
      : {}),
  },
});

function plan(hosts: HostView[], s: TenantClusterSpecType, over: Partial<PlanInput> = {}) {
  return planTenantHosts({ cluster: CLUSTER, spec: s, hosts, facts: okFacts(hosts), ...over });
}
const names = (list: { host: { name: string } }[]) => list.map((h) => h.host.name);
const byRole = (list: { host: { name: string }; role: string; standby: boolean }[]) =>
  list.map((h) => `${h.role[0]}${h.standby ? 's' : ''}:${h.host.name}`);

describe('planTenantHosts: picking', () => {
  const cases: {
    name: string;
    hosts: HostView[];
    spec: TenantClusterSpecType;
    claims: string[];
    short?: string;
  }[] = [
    {
      name: 'one host per rack per role, in natural order',
      hosts: [
        host('h10', { rack: 'r1' }),
        host('h2', { rack: 'r1' }),
        host('h3', { rack: 'r2' }),
        host('h4', { rack: 'r3' }),
      ],
      spec: spec({ active: 3 }, undefined),
      claims: ['C:h2', 'C:h3', 'C:h4'],
    },
    {
      name: 'roles may share a rack under Role scope',
      hosts: [host('a', { rack: 'r1' }), host('b', { rack: 'r1' })],
      spec: spec({ active: 1 }, { active: 1 }),
      claims: ['C:a', 'W:b'],
    },
    {
      name: 'Cluster scope keeps the roles in different racks',
      hosts: [host('a', { rack: 'r1' }), host('b', { rack: 'r1' }), host('c', { rack: 'r2' })],
      spec: spec({ active: 1 }, { active: 1 }, { scope: 'Cluster' }),
      claims: ['C:a', 'W:c'],
    },
    {
      name: 'Cluster scope short of racks labels nothing',
      hosts: [host('a', { rack: 'r1' }), host('b', { rack: 'r1' })],
      spec: spec({ active: 1 }, { active: 1 }, { scope: 'Cluster' }),
      claims: [],
      short:
        'Worker: short by 1 of 1 (1 already claimed, 1 in a topology domain already used (topology.nodewarden.dev/rack))',
    },
    {
      name: 'standbys come after actives and respect the topology too',
      hosts: [
        host('a', { rack: 'r1' }),
        host('b', { rack: 'r2' }),
        host('c', { rack: 'r2' }),
        host('d', { rack: 'r3' }),
      ],
      spec: spec(undefined, { active: 2, standby: 1 }),
      claims: ['W:a', 'W:b', 'Ws:d'],
    },
    {
      name: 'hosts without the topology label are not constrained',
      hosts: [host('a'), host('b'), host('c')],
      spec: spec({ active: 3 }, undefined),
      claims: ['C:a', 'C:b', 'C:c'],
    },
    {
      name: 'the selector decides which hosts a role sees',
      hosts: [
        host('a', { rack: 'r1', labels: { tier: 'big' } }),
        host('b', { rack: 'r2' }),
        host('c', { rack: 'r3', labels: { tier: 'big' } }),
      ],
      spec: spec({ active: 2 }, { active: 1 }, { cpLabels: { tier: 'big' } }),
      claims: ['C:a', 'C:c', 'W:b'],
    },
    {
      name: 'unhealthy, claimed and network-data-less hosts are skipped',
      hosts: [
        host('a', { rack: 'r1', unhealthy: 'power management error' }),
        host('b', { rack: 'r2', heldBy: { name: 'red', role: 'Worker' } }),
        host('c', { rack: 'r3', noNetworkData: true }),
        host('d', { rack: 'r4' }),
      ],
      spec: spec(undefined, { active: 1 }),
      claims: ['W:d'],
    },
    {
      name: 'short by two: says why, labels nothing',
      hosts: [
        host('a', { rack: 'r1', unhealthy: 'x' }),
        host('b', { rack: 'r2', noNetworkData: true }),
        host('c', { rack: 'r3', labels: { tier: 'small' } }),
        host('d', { rack: 'r4', labels: { tier: 'big' } }),
      ],
      spec: spec({ active: 1 }, { active: 3 }, { cpLabels: { tier: 'big' } }),
      claims: [],
      short:
        'Worker: short by 2 of 3 (1 already claimed, 1 unhealthy, 1 without usable network data or BMC credentials)',
    },
    // The anchor's seven envtest cases (topologyKey "host", standby 0).
    ...sipCases(),
  ];
  for (const c of cases) {
    it(c.name, () => {
      const p = plan(c.hosts, c.spec);
      assert.deepEqual(p.needFacts, []);
      assert.deepEqual(byRole(p.claims), c.claims);
      assert.equal(describeShortfalls(p.shortfalls), c.short ?? '');
    });
  }
});

/** SIP's controller envtest fixtures: hosts on distinct or shared "host"/rack values. */
function sipCases() {
  const H = 'host';
  const sip = (cp: number, w: number) => spec({ active: cp }, { active: w }, { key: H });
  const on = (name: string, hostVal: string, rack: string, role: 'cp' | 'w') =>
    host(name, { labels: { [H]: hostVal, [RACK]: rack, role } });
  const distinct = (cp: number, w: number) => [
    ...Array.from({ length: cp }, (_, i) => on(`cp-${i}`, `cp-${i}`, `r${i}`, 'cp')),
    ...Array.from({ length: w }, (_, i) => on(`w-${i}`, `w-${i}`, `r${i}`, 'w')),
  ];
  const withSelectors = (s: TenantClusterSpecType) => {
    s.nodes.ControlPlane!.labelSelector = { matchLabels: { role: 'cp' } };
    s.nodes.Worker!.labelSelector = { matchLabels: { role: 'w' } };
    return s;
  };
  return [
    {
      name: 'SIP 1: 3 control-plane and 4 worker hosts, 3/4 asked: all labelled',
      hosts: distinct(3, 4),
      spec: withSelectors(sip(3, 4)),
      claims: ['C:cp-0', 'C:cp-1', 'C:cp-2', 'W:w-0', 'W:w-1', 'W:w-2', 'W:w-3'],
    },
    {
      name: 'SIP 2: 2 control-plane hosts for 3 asked: nothing labelled',
      hosts: distinct(2, 4),
      spec: withSelectors(sip(3, 4)),
      claims: [],
      short: 'ControlPlane: short by 1 of 3 (4 not matching the labelSelector)',
    },
    {
      name: 'SIP 3: 2 worker hosts for 4 asked: nothing labelled',
      hosts: distinct(3, 2),
      spec: withSelectors(sip(3, 4)),
      claims: [],
      short: 'Worker: short by 2 of 4 (3 not matching the labelSelector)',
    },
    {
      name: 'SIP 4: same host value, 1 control plane + 2 workers for 1/2: nothing labelled',
      hosts: [on('cp-0', 'x', 'r0', 'cp'), on('w-0', 'y', 'r0', 'w'), on('w-1', 'y', 'r1', 'w')],
      spec: withSelectors(sip(1, 2)),
      claims: [],
      short:
        'Worker: short by 1 of 2 (1 not matching the labelSelector, 1 in a topology domain already used (host))',
    },
    {
      name: 'SIP 5: same host value, 2 control planes + 1 worker for 2/1: nothing labelled',
      hosts: [on('cp-0', 'x', 'r0', 'cp'), on('cp-1', 'x', 'r1', 'cp'), on('w-0', 'y', 'r0', 'w')],
      spec: withSelectors(sip(2, 1)),
      claims: [],
      short:
        'ControlPlane: short by 1 of 2 (1 not matching the labelSelector, 1 in a topology domain already used (host))',
    },
    {
      name: 'SIP 6: same rack as topology, 1 control plane + 2 workers for 1/2: nothing labelled',
      hosts: [on('cp-0', 'a', 'r0', 'cp'), on('w-0', 'b', 'r1', 'w'), on('w-1', 'c', 'r1', 'w')],
      spec: (() => {
        const s = withSelectors(sip(1, 2));
        s.nodes.ControlPlane!.topologyKey = RACK;
        s.nodes.Worker!.topologyKey = RACK;
        return s;
      })(),
      claims: [],
      short:
        'Worker: short by 1 of 2 (1 not matching the labelSelector, 1 in a topology domain already used (topology.nodewarden.dev/rack))',
    },
    {
      name: 'SIP 7: same rack as topology, 2 control planes + 1 worker for 2/1: nothing labelled',
      hosts: [on('cp-0', 'a', 'r0', 'cp'), on('cp-1', 'b', 'r0', 'cp'), on('w-0', 'c', 'r1', 'w')],
      spec: (() => {
        const s = withSelectors(sip(2, 1));
        s.nodes.ControlPlane!.topologyKey = RACK;
        s.nodes.Worker!.topologyKey = RACK;
        return s;
      })(),
      claims: [],
      short:
        'ControlPlane: short by 1 of 2 (1 not matching the labelSelector, 1 in a topology domain already used (topology.nodewarden.dev/rack))',
    },
  ];
}

describe('planTenantHosts: holding, scaling and failure', () => {
  const held = (name: string, rack: string, role: string, standby = false, unhealthy?: string) =>
    host(name, { rack, heldBy: { name: CLUSTER.name, role, standby }, ...(unhealthy ? { unhealthy } : {}) });

  it('is idempotent: a cluster holding its pick plans nothing', () => {
    const hosts = [
      held('a', 'r1', 'Worker'),
      held('b', 'r2', 'Worker'),
      held('c', 'r3', 'Worker', true),
      host('d', { rack: 'r4' }),
    ];
    const p = plan(hosts, spec(undefined, { active: 2, standby: 1 }));
    assert.deepEqual([p.claims, p.relabels, p.releases, p.shortfalls], [[], [], [], []]);
    assert.deepEqual(byRole(p.roster), ['W:a', 'W:b', 'Ws:c']);
  });

  it('scale up claims only the difference, keeping the held hosts', () => {
    const hosts = [
      held('a', 'r1', 'Worker'),
      host('b', { rack: 'r1' }),
      host('c', { rack: 'r2' }),
      host('d', { rack: 'r3' }),
    ];
    const p = plan(hosts, spec(undefined, { active: 3 }));
    assert.deepEqual(byRole(p.claims), ['W:c', 'W:d']);
    assert.deepEqual(byRole(p.roster), ['W:a', 'W:c', 'W:d']);
  });

  const scaleDown: { name: string; counts: Counts; releases: string[]; relabels?: string[] }[] = [
    { name: 'drops the standby first', counts: { active: 3, standby: 0 }, releases: ['e'] },
    { name: 'then the highest-numbered actives', counts: { active: 1, standby: 1 }, releases: ['c', 'h10'] },
    { name: 'down to nothing', counts: { active: 0, standby: 0 }, releases: ['e', 'c', 'h10', 'a'] },
    {
      name: 'an active becomes the standby when only standbys are asked',
      counts: { active: 0, standby: 1 },
      releases: ['c', 'h10', 'a'],
      relabels: [],
    },
  ];
  for (const c of scaleDown) {
    it(`scale down ${c.name}`, () => {
      const hosts = [
        held('a', 'r1', 'Worker'),
        held('c', 'r2', 'Worker'),
        held('h10', 'r3', 'Worker'),
        held('e', 'r4', 'Worker', true),
      ];
      const p = plan(hosts, spec(undefined, c.counts));
      assert.deepEqual(names(p.releases).sort(), [...c.releases].sort());
      assert.ok(p.releases.every((r) => r.cause === 'scaleDown'));
      assert.deepEqual(p.claims, []);
      if (c.relabels) assert.deepEqual(names(p.relabels), c.relabels);
      assert.equal(p.roster.length, c.counts.active + (c.counts.standby ?? 0));
    });
  }

  it('a failed active: the standby is promoted at once and the failed host released', () => {
    const hosts = [
      held('a', 'r1', 'Worker', false, 'power management error'),
      held('b', 'r2', 'Worker'),
      held('c', 'r3', 'Worker', true),
    ];
    const p = plan(hosts, spec(undefined, { active: 2, standby: 1 }));
    assert.deepEqual(
      p.relabels.map((r) => `${r.host.name}:${r.cause}`),
      ['c:promoted'],
    );
    // No spare host for a new standby: the role is short, so the failed host is kept (visible as Failed).
    assert.equal(describeShortfalls(p.shortfalls), 'Worker: short by 1 of 3 (3 already claimed)');
    assert.deepEqual(p.releases, []);
    assert.deepEqual(byRole(p.roster), ['W:a', 'W:b', 'W:c']);
    assert.equal(p.roster.find((r) => r.host.name === 'a')?.healthy, false);
  });

  it('a failed active with a spare host: promote, pick a new standby, release the failed one', () => {
    const hosts = [
      held('a', 'r1', 'Worker', false, 'gone'),
      held('b', 'r2', 'Worker'),
      held('c', 'r3', 'Worker', true),
      host('d', { rack: 'r1' }),
    ];
    const p = plan(hosts, spec(undefined, { active: 2, standby: 1 }));
    assert.deepEqual(names(p.relabels), ['c']);
    // The failed host's rack is free again for its replacement.
    assert.deepEqual(byRole(p.claims), ['Ws:d']);
    assert.deepEqual(
      p.releases.map((r) => `${r.host.name}:${r.cause}`),
      ['a:failedReplaced'],
    );
    assert.deepEqual(byRole(p.roster), ['W:b', 'W:c', 'Ws:d']);
  });

  it('a failed active without a standby: a fresh host replaces it', () => {
    const hosts = [
      held('a', 'r1', 'ControlPlane', false, 'gone'),
      held('b', 'r2', 'ControlPlane'),
      host('c', { rack: 'r2' }),
      host('d', { rack: 'r3' }),
    ];
    const p = plan(hosts, spec({ active: 2 }, undefined));
    assert.deepEqual(byRole(p.claims), ['C:d']);
    assert.deepEqual(names(p.releases), ['a']);
  });

  it('a role removed from the spec gives its hosts back', () => {
    const hosts = [held('a', 'r1', 'Worker'), held('b', 'r2', 'ControlPlane')];
    const p = plan(hosts, spec({ active: 1 }, undefined));
    assert.deepEqual(
      p.releases.map((r) => `${r.host.name}:${r.cause}`),
      ['a:roleRemoved'],
    );
  });

  it('deletion releases every host the cluster holds and only those', () => {
    const hosts = [
      held('a', 'r1', 'Worker'),
      held('b', 'r2', 'ControlPlane', true),
      host('c', { heldBy: { name: 'red', role: 'Worker' } }),
    ];
    const p = plan(hosts, spec({ active: 1 }, { active: 1 }), { deleting: true });
    assert.deepEqual(names(p.releases), ['a', 'b']);
    assert.deepEqual(p.claims, []);
  });

  it("adopts hosts SIP labelled for this very cluster, and leaves SIP's other clusters alone", () => {
    const sip = (name: string, cluster: string, role: string) =>
      host(name, {
        rack: name,
        labels: {
          'sip.airshipit.org/cluster-namespace': CLUSTER.namespace,
          'sip.airshipit.org/cluster-name': cluster,
          'sip.airshipit.org/node-type': role,
        },
      });
    const hosts = [sip('a', CLUSTER.name, 'Worker'), sip('b', 'other', 'Worker'), host('c', { rack: 'c' })];
    const p = plan(hosts, spec(undefined, { active: 2 }));
    assert.deepEqual(
      p.relabels.map((r) => `${r.host.name}:${r.cause}`),
      ['a:adopted'],
    );
    assert.deepEqual(byRole(p.claims), ['W:c']);
    assert.deepEqual(byRole(p.roster), ['W:a', 'W:c']);
  });

  it('a same-named cluster in another namespace is somebody else', () => {
    const hosts = [
      host('a', { heldBy: { name: CLUSTER.name, role: 'Worker', namespace: 'other' } }),
      host('b'),
    ];
    const p = plan(hosts, spec(undefined, { active: 1 }));
    assert.deepEqual(byRole(p.claims), ['W:b']);
  });
});

describe('planTenantHosts: network data and credentials', () => {
  const s: TenantClusterSpecType = {
    ...spec(undefined, { active: 2 }),
    services: {
      workerLoadBalancer: { nodePortRange: { start: 30100, end: 30101 }, nodeInterfaceId: 'oam-ipv4' },
    },
  };
  it('asks for the Secrets of the hosts it would pick before claiming any', () => {
    const hosts = [host('a', { rack: 'r1' }), host('b', { rack: 'r2' }), host('c', { rack: 'r3' })];
    const p = plan(hosts, s, { facts: new Map() });
    assert.deepEqual(
      p.needFacts.map((h) => h.name),
      ['a', 'b'],
    );
    assert.deepEqual(p.claims, []);
    assert.deepEqual(p.roster, [], 'a provisional pick is not held');
  });
  it('skips a host whose network data lacks the interface, or whose Secrets failed', () => {
    const hosts = [
      host('a', { rack: 'r1' }),
      host('b', { rack: 'r2' }),
      host('c', { rack: 'r3' }),
      host('d', { rack: 'r4' }),
    ];
    const facts = okFacts(hosts);
    facts.set('metal3/a', {
      ok: true,
      ips: { other: '1.2.3.4' },
      bmc: { address: 'x', username: 'u', password: 'p' },
    });
    facts.set('metal3/b', { ok: false, reason: 'Secret metal3/b-bmc-secret not found' });
    const p = plan(hosts, s, { facts });
    assert.deepEqual(byRole(p.claims), ['W:c', 'W:d']);
  });
  it('is deterministic whatever order the hosts come in', () => {
    const hosts = Array.from({ length: 12 }, (_, i) => host(`h${i}`, { rack: `r${i % 4}` }));
    const first = plan(hosts, spec({ active: 3 }, { active: 3, standby: 1 }));
    const shuffled = [...hosts].reverse().sort((a, b) => a.name.length - b.name.length || 0);
    assert.deepEqual(
      byRole(plan(shuffled, spec({ active: 3 }, { active: 3, standby: 1 })).claims),
      byRole(first.claims),
    );
    assert.deepEqual(byRole(first.claims), ['C:h0', 'C:h1', 'C:h2', 'W:h3', 'W:h4', 'W:h5', 'Ws:h6']);
  });
});
