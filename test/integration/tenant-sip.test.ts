// Airship SIP's acceptance cases against the real API server and the
// simulated BMC fleet: its seven controller envtest cases (topologyKey "host",
// standby 0), asserting every host — not only the last, as the anchor did —
// and its bmh package cases on reading a host's Secrets.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type BareMetalHost, BareMetalHosts, RACK_LABEL } from '../../src/api/baremetal.ts';
import { TENANT_LABELS, type TenantCluster, TenantClusters } from '../../src/api/tenant.ts';
import { type ConsoleTarget, consoleRequest } from '../../src/cluster/infra/bmc/api.ts';
import { networkData } from '../../src/cluster/infra/bmc/host-objects.ts';
import { consolePaths, type Machine, type MachineSpec } from '../../src/cluster/infra/bmc/protocol.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Secrets } from '../../src/runtime/resources.ts';
import { HostFactsReader } from '../../src/tenant/facts.ts';
import { clusterFleet } from '../harness/bmc-fleet.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';

const BMH = BareMetalHosts.type;
const TC = TenantClusters.type;
const client = KubeClient.fromKubeConfig(testKubeConfig());
const RUN = Date.now().toString(36);
const CASE = 'tenant-test.nodewarden.dev/sip-case';
const KIND = 'tenant-test.nodewarden.dev/kind';
const HOST = 'host';

interface Fixture {
  name: string;
  /** [kind, host label, rack] per host. */
  hosts: ['cp' | 'w', string, string][];
  want: { cp: number; w: number };
  topologyKey: string;
  schedulable: boolean;
}

const distinct = (cp: number, w: number): Fixture['hosts'] => [
  ...Array.from({ length: cp }, (_, i) => ['cp', `cp${i}`, `r${i}`] as Fixture['hosts'][number]),
  ...Array.from({ length: w }, (_, i) => ['w', `w${i}`, `r${i}`] as Fixture['hosts'][number]),
];

const FIXTURES: Fixture[] = [
  { name: 'sip1', hosts: distinct(3, 4), want: { cp: 3, w: 4 }, topologyKey: HOST, schedulable: true },
  { name: 'sip2', hosts: distinct(2, 4), want: { cp: 3, w: 4 }, topologyKey: HOST, schedulable: false },
  { name: 'sip3', hosts: distinct(3, 2), want: { cp: 3, w: 4 }, topologyKey: HOST, schedulable: false },
  {
    name: 'sip4',
    hosts: [
      ['cp', 'x', 'r0'],
      ['w', 'y', 'r1'],
      ['w', 'y', 'r2'],
    ],
    want: { cp: 1, w: 2 },
    topologyKey: HOST,
    schedulable: false,
  },
  {
    name: 'sip5',
    hosts: [
      ['cp', 'x', 'r0'],
      ['cp', 'x', 'r1'],
      ['w', 'y', 'r2'],
    ],
    want: { cp: 2, w: 1 },
    topologyKey: HOST,
    schedulable: false,
  },
  {
    name: 'sip6',
    hosts: [
      ['cp', 'a', 'r0'],
      ['w', 'b', 'r1'],
      ['w', 'c', 'r1'],
    ],
    want: { cp: 1, w: 2 },
    topologyKey: RACK_LABEL,
    schedulable: false,
  },
  {
    name: 'sip7',
    hosts: [
      ['cp', 'a', 'r0'],
      ['cp', 'b', 'r0'],
      ['w', 'c', 'r1'],
    ],
    want: { cp: 2, w: 1 },
    topologyKey: RACK_LABEL,
    schedulable: false,
  },
];

describe("Airship SIP's acceptance cases", () => {
  const ns = useNamespace('tenant-sip');
  let fleet: ConsoleTarget;
  let op: OperatorProcess;
  const machines: { spec: MachineSpec; fixture: string; kind: 'cp' | 'w'; host: string }[] = [];
  let n = 0;
  for (const f of FIXTURES) {
    for (const [kind, host, rack] of f.hosts) {
      const i = n++;
      const hex = i.toString(16).padStart(2, '0');
      machines.push({
        fixture: f.name,
        kind,
        host,
        spec: {
          id: `sip-${RUN}-${f.name}-${kind}-${i}`,
          kind: 'physical',
          rack,
          cpus: 4,
          memoryMiB: 8192,
          diskGB: 50,
          nics: [{ name: 'eno1', mac: `52:54:01:5e:${hex}:01`, ip: `198.18.121.${10 + i}` }],
          credentials: { username: 'admin', password: `pw-${i}` },
        },
      });
    }
  }
  const bmc = (path: string, method = 'GET', body?: unknown) => consoleRequest(fleet, method, path, body);
  const hostsOf = async (fixture: string) =>
    (await client.list<BareMetalHost>(BMH, { namespace: ns(), labelSelector: `${CASE}=${RUN}-${fixture}` }))
      .items;

  before(async () => {
    fleet = await clusterFleet(client);
    for (const x of machines) {
      await bmc(consolePaths.machines, 'POST', x.spec);
      const m = (await bmc(consolePaths.machine(x.spec.id))) as Machine;
      await client.create(Secrets, {
        metadata: { name: `${m.id}-bmc`, namespace: ns() },
        stringData: { username: m.credentials.username, password: m.credentials.password },
      } as never);
      await client.create(Secrets, {
        metadata: { name: `${m.id}-nd`, namespace: ns() },
        stringData: { networkData: JSON.stringify(networkData(m)) },
      } as never);
      const labels = { [RACK_LABEL]: m.rack!, [CASE]: `${RUN}-${x.fixture}`, [KIND]: x.kind, [HOST]: x.host };
      await client.create(
        BMH,
        BareMetalHosts.make(
          { name: m.id, namespace: ns(), labels },
          {
            online: true,
            bmc: {
              address: m.bmcAddress,
              credentialsName: `${m.id}-bmc`,
              disableCertificateVerification: true,
            },
            networkData: { name: `${m.id}-nd` },
          },
        ) as never,
      );
    }
    op = startOperator(['--controllers', 'baremetalhost,tenantcluster', '--baremetal-resync', '2s']);
    await eventually(
      'every host available',
      async () => {
        const all = (await client.list<BareMetalHost>(BMH, { namespace: ns() })).items;
        return all.length === machines.length &&
          all.every((h) => h.status?.provisioning?.state === 'available')
          ? true
          : undefined;
      },
      120_000,
    );
    for (const f of FIXTURES) {
      const sel = (kind: string) => ({ matchLabels: { [CASE]: `${RUN}-${f.name}`, [KIND]: kind } });
      await client.create(
        TC,
        TenantClusters.make(
          { name: f.name, namespace: ns() },
          {
            nodes: {
              ControlPlane: {
                labelSelector: sel('cp'),
                topologyKey: f.topologyKey,
                count: { active: f.want.cp, standby: 0 },
              },
              Worker: {
                labelSelector: sel('w'),
                topologyKey: f.topologyKey,
                count: { active: f.want.w, standby: 0 },
              },
            },
          },
        ) as never,
      );
    }
  });

  after(async () => {
    for (const f of FIXTURES) await client.delete(TC, f.name, ns()).catch(() => {});
    await sleep(2000);
    for (const x of machines) await client.delete(BMH, x.spec.id, ns()).catch(() => {});
    await eventually(
      'hosts deleted',
      async () => ((await client.list(BMH, { namespace: ns() })).items.length === 0 ? true : undefined),
      60_000,
    ).catch(() => {});
    for (const x of machines) await bmc(consolePaths.machine(x.spec.id), 'DELETE').catch(() => {});
    await op.stop();
    client.close();
  });

  /** The Scheduled condition once it says what `expect` accepts (the first reconciles may see hosts still registering). */
  const scheduled = (name: string, expect: (c: { status: string; message: string }) => boolean) =>
    eventually(
      `${name} decided`,
      async () => {
        const t = await client.get<TenantCluster>(TC, name, ns());
        const c = t.status?.conditions?.find((x) => x.type === 'Scheduled');
        return c && expect(c) ? { t, c } : undefined;
      },
      60_000,
    );

  it('SIP 1: 3 control-plane and 4 worker hosts, 3/4 asked: every host labelled with its role', async () => {
    const { c } = await scheduled('sip1', (x) => x.status === 'True');
    assert.equal(c.status, 'True');
    const hosts = await hostsOf('sip1');
    assert.equal(hosts.length, 7);
    for (const h of hosts) {
      const l = h.metadata.labels ?? {};
      assert.equal(l[TENANT_LABELS.clusterName], 'sip1', h.metadata.name);
      assert.equal(l[TENANT_LABELS.clusterNamespace], ns(), h.metadata.name);
      assert.equal(l[TENANT_LABELS.role], l[KIND] === 'cp' ? 'ControlPlane' : 'Worker', h.metadata.name);
      assert.equal(l[TENANT_LABELS.standby], 'false');
    }
  });

  const unschedulable: [string, string, RegExp][] = [
    ['sip2', '2 control-plane hosts for 3 asked', /ControlPlane: short by 1 of 3/],
    ['sip3', '2 worker hosts for 4 asked', /Worker: short by 2 of 4/],
    [
      'sip4',
      'same host value, 1 control plane + 2 workers for 1/2',
      /Worker: short by 1 of 2 .*topology domain already used \(host\)/,
    ],
    [
      'sip5',
      'same host value, 2 control planes + 1 worker for 2/1',
      /ControlPlane: short by 1 of 2 .*topology domain already used \(host\)/,
    ],
    [
      'sip6',
      'same rack, 1 control plane + 2 workers for 1/2',
      /Worker: short by 1 of 2 .*topology\.nodewarden\.dev\/rack/,
    ],
    [
      'sip7',
      'same rack, 2 control planes + 1 worker for 2/1',
      /ControlPlane: short by 1 of 2 .*topology\.nodewarden\.dev\/rack/,
    ],
  ];
  for (const [name, what, message] of unschedulable) {
    it(`${name.toUpperCase().replace('SIP', 'SIP ')}: ${what}: Unschedulable, and no host labelled`, async () => {
      const { t, c } = await scheduled(name, (x) => message.test(x.message));
      assert.equal(c.status, 'False');
      assert.equal(c.reason, 'Unschedulable');
      assert.match(c.message, message);
      assert.equal(t.status?.conditions?.find((x) => x.type === 'Ready')?.status, 'False');
      // The anchor waits 30 s; a few resyncs of the host controller (2 s) show the same.
      await sleep(5000);
      for (const h of await hostsOf(name))
        assert.equal(h.metadata.labels?.[TENANT_LABELS.clusterName], undefined, h.metadata.name);
    });
  }
});

describe("SIP's bmh cases: reading a host's Secrets from the API server", () => {
  const ns = useNamespace('tenant-facts');
  const secret = (name: string, stringData: Record<string, string>) =>
    client.create(Secrets, { metadata: { name, namespace: ns() }, stringData } as never);
  const host = (name: string, over: Partial<BareMetalHost['spec']> = {}): BareMetalHost =>
    BareMetalHosts.make(
      { name, namespace: ns() },
      {
        bmc: { address: `redfish://10.0.0.1/redfish/v1/Systems/${name}`, credentialsName: `${name}-bmc` },
        networkData: { name: `${name}-nd` },
        ...over,
      },
    );
  const ND_JSON = JSON.stringify({
    networks: [{ id: 'oam-ipv4', type: 'ipv4', ip_address: '32.68.51.139' }],
  });
  const ND_YAML = 'networks:\n  - id: oam-ipv4\n    type: ipv4\n    ip_address: 32.68.51.139\n';

  before(async () => {
    await secret('json-bmc', { username: 'admin', password: 'pw' });
    await secret('json-nd', { networkData: ND_JSON });
    await secret('yaml-bmc', { username: 'admin', password: 'pw' });
    await secret('yaml-nd', { networkData: ND_YAML });
    await secret('badnd-bmc', { username: 'admin', password: 'pw' });
    await secret('badnd-nd', { networkData: '{{{' });
    await secret('nocreds-nd', { networkData: ND_JSON });
    await secret('badcreds-nd', { networkData: ND_JSON });
    await secret('badcreds-bmc', { username: 'admin' });
  });

  const cases: [string, () => BareMetalHost, RegExp | Record<string, string>][] = [
    ['IP from JSON network data, with the BMC login', () => host('json'), { 'oam-ipv4': '32.68.51.139' }],
    ['IP from YAML network data', () => host('yaml'), { 'oam-ipv4': '32.68.51.139' }],
    [
      'a missing network-data Secret is an error',
      () => host('nond'),
      /network data: Secret .*nond-nd not found/,
    ],
    ['a bad network-data Secret is an error', () => host('badnd'), /neither JSON nor YAML/],
    [
      'a missing BMC Secret is an error',
      () => host('nocreds'),
      /BMC credentials: Secret .*nocreds-bmc not found/,
    ],
    ['a BMC Secret without a password is an error', () => host('badcreds'), /needs username and password/],
    [
      'no spec.networkData is an error',
      () => host('nil', { networkData: undefined }),
      /no spec\.networkData/,
    ],
  ];
  for (const [what, make, expected] of cases) {
    it(what, async () => {
      const h = make();
      const facts = (await new HostFactsReader(client).read([h])).get(`${ns()}/${h.metadata.name}`)!;
      if (expected instanceof RegExp) {
        assert.equal(facts.ok, false);
        assert.match((facts as { reason: string }).reason, expected);
      } else {
        assert.ok(facts.ok);
        assert.deepEqual(facts.ips, expected);
        assert.deepEqual(facts.bmc, { address: h.spec.bmc!.address, username: 'admin', password: 'pw' });
      }
    });
  }

  it('an address already read is not looked up again', async () => {
    let gets = 0;
    const counting = new Proxy(client, {
      get(target, prop, receiver) {
        if (prop === 'get')
          return (...args: unknown[]) => {
            gets++;
            return (target.get as (...a: unknown[]) => unknown).apply(target, args);
          };
        return Reflect.get(target, prop, receiver);
      },
    });
    const reader = new HostFactsReader(counting);
    await reader.read([host('json')]);
    assert.equal(gets, 2);
    await reader.read([host('json')]);
    assert.equal(gets, 2);
    assert.equal(reader.known([host('json')]).size, 1);
  });
});
