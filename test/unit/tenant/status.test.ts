import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type TenantCluster, TenantClusters } from '../../../src/api/tenant.ts';
import { claimLabels } from '../../../src/tenant/host-labels.ts';
import type { Holding, HostFacts, TenantPlan } from '../../../src/tenant/scheduling/planner.ts';
import { buildStatus, claimedHosts } from '../../../src/tenant/status.ts';

const tc: TenantCluster = {
  ...TenantClusters.make(
    { name: 'blue', namespace: 'ns', generation: 4 },
    {
      nodes: { Worker: { topologyKey: 'rack', count: { active: 1, standby: 1 } } },
      services: {
        workerLoadBalancer: { nodePortRange: { start: 30002, end: 30003 }, nodeInterfaceId: 'oam' },
      },
    },
  ),
};
const hold = (name: string, standby: boolean, healthy = true): Holding => ({
  host: { namespace: 'metal3', name, resourceVersion: '1' },
  role: 'Worker',
  standby,
  healthy,
  ...(healthy ? {} : { healthReason: 'registration error: gone' }),
});
const plan = (roster: Holding[], shortfalls: TenantPlan['shortfalls'] = []): TenantPlan => ({
  needFacts: [],
  claims: [],
  relabels: [],
  releases: [],
  roster,
  shortfalls,
});
const facts = new Map<string, HostFacts>([
  [
    'metal3/a',
    {
      ok: true,
      ips: { oam: '10.0.0.1', pxe: '10.1.0.1' },
      bmc: { address: 'redfish://x/a', username: 'u', password: 'p' },
    },
  ],
  [
    'metal3/b',
    { ok: true, ips: { oam: '10.0.0.2' }, bmc: { address: 'redfish://x/b', username: 'u', password: 'p' } },
  ],
]);
const labelsOf = (h: Holding) => ({
  rack: `r-${h.host.name}`,
  'topology.nodewarden.dev/rack': `r-${h.host.name}`,
});
const cond = (s: ReturnType<typeof buildStatus>, type: string) => s.conditions?.find((c) => c.type === type);

describe('buildStatus', () => {
  it('lists the hosts with rack, domain, address and health, Ready at the generation', () => {
    const s = buildStatus({
      tc,
      plan: plan([hold('a', false), hold('b', true)]),
      labelsOf,
      facts,
      serviceProblems: [],
    });
    assert.deepEqual(s.hosts?.Worker, [
      {
        name: 'a',
        namespace: 'metal3',
        domain: 'r-a',
        rack: 'r-a',
        ip: '10.0.0.1',
        standby: false,
        health: 'Healthy',
      },
      {
        name: 'b',
        namespace: 'metal3',
        domain: 'r-b',
        rack: 'r-b',
        ip: '10.0.0.2',
        standby: true,
        health: 'Healthy',
      },
    ]);
    assert.equal(s.claimedHosts, 2);
    assert.equal(s.desiredHosts, 2);
    assert.equal(s.observedGeneration, 4);
    for (const t of ['Ready', 'Scheduled', 'ServicesReady']) assert.equal(cond(s, t)?.status, 'True', t);
    assert.ok(s.conditions?.every((c) => c.observedGeneration === 4));
  });

  const cases: [string, Parameters<typeof buildStatus>[0], string, string][] = [
    [
      'unschedulable',
      {
        tc,
        plan: plan(
          [],
          [
            {
              role: 'Worker',
              wanted: 2,
              short: 2,
              passedOver: { selector: 3, claimed: 0, unhealthy: 0, noNetworkData: 0, topology: 0 },
            },
          ],
        ),
        labelsOf,
        facts,
      },
      'Unschedulable',
      'Worker: short by 2 of 2 (3 not matching the labelSelector)',
    ],
    [
      'a claim lost a race',
      { tc, plan: plan([hold('a', false)]), labelsOf, facts, labelsPending: '1 claims lost a race' },
      'UnableToApplyLabels',
      '1 claims lost a race',
    ],
    [
      'a held host failed',
      { tc, plan: plan([hold('a', false, false), hold('b', true)]), labelsOf, facts },
      'HostFailed',
      'a: registration error: gone',
    ],
    [
      'a service refused',
      {
        tc,
        plan: plan([hold('a', false)]),
        labelsOf,
        facts,
        serviceProblems: [{ service: 'jumpHost', message: 'bad key' }],
      },
      'InfraServiceFailure',
      'jumpHost: bad key',
    ],
  ];
  for (const [name, input, reason, message] of cases) {
    it(`Ready=False when ${name}`, () => {
      const s = buildStatus(input);
      assert.equal(cond(s, 'Ready')?.status, 'False');
      assert.equal(cond(s, 'Ready')?.reason, reason);
      assert.equal(cond(s, 'Ready')?.message, message);
    });
  }
});

describe('claimedHosts', () => {
  it('hands the renderer the healthy hosts with their addresses and BMC logins', () => {
    const got = claimedHosts(
      plan([hold('a', false), hold('b', true), hold('c', false, false)]),
      labelsOf,
      facts,
    );
    assert.deepEqual(
      got.map((h) => [h.name, h.standby, h.ips.oam, h.bmc.address]),
      [
        ['a', false, '10.0.0.1', 'redfish://x/a'],
        ['b', true, '10.0.0.2', 'redfish://x/b'],
      ],
    );
    assert.equal(got[0]?.rack, 'r-a');
  });
});

describe('claimLabels', () => {
  const c = { cluster: { namespace: 'ns', name: 'blue' }, role: 'Worker' as const, standby: true };
  it("writes nodewarden labels, and the anchor's with --sip-compatible-labels", () => {
    assert.deepEqual(Object.keys(claimLabels(c, false)).length, 4);
    assert.equal(claimLabels(c, true)['sip.airshipit.org/node-type'], 'Worker');
    assert.equal(claimLabels(c, true)['baremetal.nodewarden.dev/standby'], 'true');
  });
  it('a release removes both sets whatever the flag', () => {
    const r = claimLabels(null, false);
    assert.equal(Object.keys(r).length, 7);
    assert.ok(Object.values(r).every((v) => v === null));
  });
});
