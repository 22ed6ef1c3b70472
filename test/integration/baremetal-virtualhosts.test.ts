// VirtualHostPool against the real API server and the real simulated BMC
// fleet: the controller runs in this process (a Manager), the webhook too
// (url clientConfig, objects labelled for this run only). Two labelled
// workers become hypervisors; their VMs become BareMetalHosts with Secrets,
// addresses in IPPools and machines on the fleet — and are given back on
// scale-down, when a node leaves the selector, and when the pool goes.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BareMetalHost, BareMetalHosts } from '../../src/api/baremetal.ts';
import { type IPPool, IPPools, type VirtualHostPool, VirtualHostPools } from '../../src/api/virtualhosts.ts';
import { hostControllerRbac, setupBareMetalHosts } from '../../src/baremetal/hosts/controller.ts';
import { allocateIP, release } from '../../src/baremetal/ipam/allocate.ts';
import { IPPoolStore } from '../../src/baremetal/ipam/store.ts';
import { FleetConsole } from '../../src/baremetal/virtualhosts/hypervisors/simulated/fleet-console.ts';
import {
  FLAVOR_LABEL,
  HYPERVISOR_LABEL,
  NETWORK_VALUES_ANNOTATION,
  POOL_LABEL,
} from '../../src/baremetal/virtualhosts/objects.ts';
import { setupVirtualHostPools, virtualHostPoolRbac } from '../../src/baremetal/virtualhosts/setup.ts';
import { virtualHostsWebhook } from '../../src/baremetal/virtualhosts/webhook.ts';
import { simulatedBmcFleet } from '../../src/cluster/infra/bmc/addon.ts';
import { BMC_SIMULATOR, FLEET_CA_KEY, type Machine } from '../../src/cluster/infra/bmc/protocol.ts';
import { findEndpoint } from '../../src/cluster/infra/kit/discovery.ts';
import { managerRules } from '../../src/manifests/rbac.ts';
import { generateCa, issueServingCert } from '../../src/runtime/certs.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Manager } from '../../src/runtime/manager.ts';
import {
  CustomResourceDefinitions,
  DaemonSets,
  type K8sObject,
  Namespaces,
  Nodes,
  Secrets,
  ValidatingWebhookConfigurations,
} from '../../src/runtime/resources.ts';
import { WebhookServer } from '../../src/runtime/webhook.ts';
import { registerLocalWebhooks } from '../../src/runtime/webhook-config.ts';
import { eventually, testKubeConfig, testKubeconfigPath } from '../harness/cluster.ts';
import { oamNetwork } from '../harness/pools.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  forbiddenCount,
  serviceAccountWithClusterRole,
} from '../harness/rbac.ts';

const RUN = randomBytes(3).toString('hex');
const NS = `nwtest-vhp-${RUN}`;
const HV_LABEL = `nwtest-hypervisor-${RUN}`;
const WEBHOOK_LABEL = 'nodewarden.dev/test-webhook';
const WEBHOOK_CONFIG = `nwtest-virtualhosts-${RUN}`;
const ROLE = `nwtest-virtualhostpool-${RUN}`;
const NODES = ['worker-000', 'worker-001'];
const VHP = VirtualHostPools.type;
const BMH = BareMetalHosts.type;

const client = KubeClient.fromKubeConfig(testKubeConfig());
const log = createLogger({ level: process.env.NODEWARDEN_LOG_LEVEL ?? 'silent' });
const stop = new AbortController();
let manager: Manager;
let running: Promise<void>;
let fleet: FleetConsole;
/** Set when this file started the fleet itself (the harness cluster did not carry one). */
let ownFleetDir: string | undefined;
let forbiddenBefore = 0;
const ca = generateCa();
const webhookServer = new WebhookServer({
  bindAddress: '127.0.0.1:0',
  tls: issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }),
  log,
});

type Obj = K8sObject & { spec?: Record<string, unknown>; data?: Record<string, string> };

async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error('the server accepted it');
}

async function installCrds(): Promise<void> {
  for (const cr of [VirtualHostPools, IPPools]) {
    const crd = cr.crd();
    try {
      const have = await client.get<Obj>(CustomResourceDefinitions, crd.metadata.name);
      await client.update(CustomResourceDefinitions, { ...have, spec: crd.spec } as never);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await client.create(CustomResourceDefinitions, crd as never);
    }
    await eventually(`${crd.metadata.name} established`, async () => {
      const got = await client.get<Obj>(CustomResourceDefinitions, crd.metadata.name);
      const conds = (got.status as { conditions?: { type: string; status: string }[] } | undefined)
        ?.conditions;
      return conds?.some((c) => c.type === 'Established' && c.status === 'True') ? true : undefined;
    });
  }
}

/** The cluster's BMC fleet, started here when the harness cluster carries none. */
async function ensureFleet(): Promise<FleetConsole> {
  let published = await findEndpoint(client, BMC_SIMULATOR);
  if (published?.[FLEET_CA_KEY]) {
    const f = new FleetConsole(published.endpoint, published[FLEET_CA_KEY]);
    const alive = await f.list().then(
      () => true,
      () => false,
    );
    if (alive) return f;
    f.close();
  }
  ownFleetDir = mkdtempSync(join(tmpdir(), 'nwtest-bmc-'));
  await simulatedBmcFleet.up({
    cluster: process.env.NODEWARDEN_TEST_CLUSTER ?? 'nwtest',
    kubeconfig: testKubeconfigPath(),
    dir: ownFleetDir,
    pools: [],
    kubernetesVersion: '',
  });
  published = await findEndpoint(client, BMC_SIMULATOR);
  assert.ok(published?.[FLEET_CA_KEY], 'the fleet published its endpoint and CA');
  return new FleetConsole(published.endpoint, published[FLEET_CA_KEY]);
}

const network = (over: Record<string, unknown> = {}) =>
  oamNetwork({
    routes: [{ network: '0.0.0.0', netmask: '0.0.0.0', gateway: '$vinobridge' }],
    dnsServers: ['192.168.0.2'],
    ...over,
  });
const flavor = (name: string, count: number) => ({
  name,
  count,
  cpus: 1,
  memoryMiB: name === 'master' ? 4096 : 2048,
  diskGB: name === 'master' ? 30 : 10,
  bmhLabels: { 'airshipit.org/k8s-role': name },
  networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
});
function poolObject(name: string, spec: Record<string, unknown> = {}): VirtualHostPool {
  return {
    apiVersion: VirtualHostPools.apiVersion,
    kind: 'VirtualHostPool',
    metadata: { name, namespace: NS, labels: { [WEBHOOK_LABEL]: RUN } },
    spec: {
      nodeSelector: { matchLabels: { [HV_LABEL]: 'true' } },
      networks: [network()],
      nodes: [flavor('master', 1), flavor('worker', 4)],
      bmcCredentials: { username: 'admin', password: 'vm-secret' },
      nodeLabelKeysToCopy: ['topology.kubernetes.io/zone'],
      ...spec,
    },
  } as VirtualHostPool;
}
const createPool = (p: VirtualHostPool) => client.create<VirtualHostPool>(VHP, p);
const getPool = (name: string) => client.get<VirtualHostPool>(VHP, name, NS);
const hostsOf = async (pool: string) =>
  (await client.list<BareMetalHost>(BMH, { namespace: NS, labelSelector: `${POOL_LABEL}=${pool}` })).items;
const secretsOf = async (pool: string) =>
  (await client.list<Obj>(Secrets, { namespace: NS, labelSelector: `${POOL_LABEL}=${pool}` })).items;
const ipPool = (name: string) => client.get<IPPool>(IPPools.type, name, NS);
const machinesOf = async (pool: string) =>
  (await fleet.list()).filter((m: Machine) => m.id.startsWith(`${NS}-${pool}-`));
const names = (objs: { metadata?: { name?: string } }[]) => objs.map((o) => o.metadata?.name ?? '').sort();
const vmAddresses = (p: IPPool) =>
  Object.fromEntries(
    (p.spec.allocations ?? []).filter((a) => a.owner.startsWith('vm/')).map((a) => [a.owner, a.ip]),
  );

async function ready(name: string, created: number, reason = 'HostsCreated'): Promise<VirtualHostPool> {
  return eventually(
    `${name} ${reason} with ${created} hosts`,
    async () => {
      const p = await getPool(name);
      const c = p.status?.conditions?.find((x) => x.type === 'Ready');
      if (c?.reason !== reason || c.observedGeneration !== p.metadata.generation)
        throw new Error(JSON.stringify(c));
      return p.status?.createdHosts === created ? p : undefined;
    },
    90_000,
  );
}

async function labelNode(node: string, on: boolean): Promise<void> {
  await client.patch(
    Nodes,
    node,
    undefined,
    { metadata: { labels: { [HV_LABEL]: on ? 'true' : null } } },
    { type: 'merge' },
  );
}

before(
  async () => {
    await installCrds();
    fleet = await ensureFleet();
    await client.create(Namespaces, { metadata: { name: NS } });
    webhookServer.register(virtualHostsWebhook.path, await virtualHostsWebhook.handler(undefined as never));
    await webhookServer.start();
    await registerLocalWebhooks(
      client,
      {
        name: WEBHOOK_CONFIG,
        url: `https://127.0.0.1:${webhookServer.address()?.port}`,
        caPem: ca.cert,
        objectSelector: { matchLabels: { [WEBHOOK_LABEL]: RUN } },
      },
      [virtualHostsWebhook],
    );
    // The controller runs as a service account holding exactly its declared RBAC.
    const { user, groups } = await serviceAccountWithClusterRole(
      client,
      NS,
      'nodewarden',
      ROLE,
      managerRules([
        { controller: 'virtualhostpool', rules: virtualHostPoolRbac },
        { controller: 'baremetalhost', rules: hostControllerRbac },
      ]),
    );
    manager = new Manager({ kubeConfig: testKubeConfig(), client: { impersonate: { user, groups } }, log });
    setupVirtualHostPools(manager);
    // The host controller too, as the operator runs them: it registers the VMs over Redfish
    // (proving their BMC addresses and credentials) and holds a finalizer on each host.
    setupBareMetalHosts(manager, { resyncMs: 60_000 });
    running = manager.start(stop.signal);
    await eventually('manager running', async () => (manager.isLeader() ? true : undefined), 60_000);
    for (const n of NODES) await labelNode(n, true);
  },
  { timeout: 180_000 },
);

after(
  async () => {
    await client.delete(ValidatingWebhookConfigurations, WEBHOOK_CONFIG, undefined, { ignoreNotFound: true });
    for (const n of NODES) await labelNode(n, false).catch(() => {});
    // Pools still here (a failed test) are released by the controller before it stops.
    const left = (await client.list<VirtualHostPool>(VHP, { namespace: NS }).catch(() => ({ items: [] })))
      .items;
    for (const p of left) await client.delete(VHP, p.metadata.name!, NS, { ignoreNotFound: true });
    await eventually('pools released', async () =>
      (await client.list(VHP, { namespace: NS })).items.length === 0 ? true : undefined,
    ).catch(() => {});
    stop.abort();
    await running;
    await client.delete(Namespaces, NS, undefined, { ignoreNotFound: true });
    await client.delete(ClusterRoleBindings, ROLE, undefined, { ignoreNotFound: true });
    await client.delete(ClusterRoles, ROLE, undefined, { ignoreNotFound: true });
    await webhookServer.stop();
    fleet?.close();
    if (ownFleetDir) {
      await simulatedBmcFleet
        .down({
          cluster: 'nwtest',
          kubeconfig: testKubeconfigPath(),
          dir: ownFleetDir,
          pools: [],
          kubernetesVersion: '',
        })
        .catch(() => {});
      rmSync(ownFleetDir, { recursive: true, force: true });
    }
    client.close();
  },
  { timeout: 120_000 },
);

describe('bad specs are refused at admission, saying what to fix', () => {
  const cases: { name: string; spec: Record<string, unknown>; want: RegExp }[] = [
    {
      name: 'no node selector',
      spec: { nodeSelector: undefined },
      want: /spec\.nodeSelector: Required value/,
    },
    {
      name: 'an empty node selector',
      spec: { nodeSelector: {} },
      want: /nodeSelector selects every node: give matchLabels or matchExpressions/,
    },
    {
      name: 'an inverted range (the webhook)',
      spec: {
        networks: [network({ staticAllocationStart: '192.168.2.40', staticAllocationStop: '192.168.2.10' })],
      },
      want: /staticAllocationStart 192\.168\.2\.40 comes after staticAllocationStop 192\.168\.2\.10; swap them/,
    },
    {
      name: 'a selector expression without values',
      spec: { nodeSelector: { matchExpressions: [{ key: 'rack', operator: 'In' }] } },
      want: /In and NotIn need values; Exists and DoesNotExist take none/,
    },
    {
      name: 'a range outside its subnet',
      spec: { networks: [network({ staticAllocationStop: '10.0.0.9' })] },
      want: /staticAllocationStop must be an address inside subnet/,
    },
    {
      name: 'a subnet that is not a CIDR',
      spec: { networks: [network({ subnet: '192.168.0.0/40' })] },
      want: /must be a CIDR such as 192\.168\.2\.0\/24/,
    },
    {
      name: 'two flavors of one name',
      spec: { nodes: [flavor('worker', 1), flavor('worker', 2)] },
      want: /spec\.nodes\[1\]: Duplicate value/,
    },
    {
      name: 'an interface on a network the pool does not have',
      spec: { nodes: [{ ...flavor('worker', 1), networkInterfaces: [{ name: 'enp1s0', network: 'pxe' }] }] },
      want: /every networkInterfaces\[\]\.network must name one of spec\.networks/,
    },
  ];
  for (const c of cases)
    it(c.name, async () => {
      const msg = await rejection(createPool(poolObject(`bad-${RUN}`, c.spec)));
      assert.match(msg, c.want);
    });

  it('a pool name longer than a label value', async () => {
    const msg = await rejection(createPool(poolObject(`p${'x'.repeat(63)}`)));
    assert.match(msg, /name must be at most 63 characters: it is a label value on every host/);
  });

  it('an IPPool whose range is inverted, or whose MAC prefix changes', async () => {
    const name = `ipp-${RUN}`;
    const base = {
      metadata: { name, namespace: NS, labels: { [WEBHOOK_LABEL]: RUN } },
      spec: {
        subnet: '10.1.0.0/24',
        macPrefix: '02:00:00:00:00:00',
        ranges: [{ start: '10.1.0.9', stop: '10.1.0.1' }],
      },
    };
    assert.match(
      await rejection(client.create(IPPools.type, IPPools.make(base.metadata, base.spec))),
      /spec\.ranges\[0\]: start 10\.1\.0\.9 comes after stop 10\.1\.0\.1/,
    );
    await client.create(
      IPPools.type,
      IPPools.make(base.metadata, { ...base.spec, ranges: [{ start: '10.1.0.1', stop: '10.1.0.9' }] }),
    );
    const msg = await rejection(
      client.patch(IPPools.type, name, NS, { spec: { macPrefix: '52:54:00:00:00:00' } }, { type: 'merge' }),
    );
    assert.match(msg, /macPrefix is immutable/);
    await client.delete(IPPools.type, name, NS);
  });
});

describe('a pool on two labelled nodes', () => {
  const POOL = 'lab';
  // Counted from here: the webhook's refusals above are 403s too.
  before(async () => {
    forbiddenBefore = await forbiddenCount();
  });
  let released: Record<string, string> = {};

  it('makes 5 VMs per node: BareMetalHosts, Secrets, addresses, fleet machines, agent and annotation', async () => {
    await createPool(poolObject(POOL));
    const p = await ready(POOL, 10);
    assert.equal(p.status?.desiredHosts, 10);
    const hosts = await hostsOf(POOL);
    assert.deepEqual(
      names(hosts),
      NODES.flatMap((n) => [`lab-${n}-master-0`, ...[0, 1, 2, 3].map((i) => `lab-${n}-worker-${i}`)]).sort(),
    );
    const node0 = await client.get<Obj>(Nodes, 'worker-000');
    const h = hosts.find((x) => x.metadata.name === 'lab-worker-000-worker-2')!;
    assert.equal(h.metadata.labels?.[FLAVOR_LABEL], 'worker');
    assert.equal(h.metadata.labels?.[HYPERVISOR_LABEL], 'worker-000');
    assert.equal(h.metadata.labels?.['airshipit.org/k8s-role'], 'worker');
    assert.equal(
      h.metadata.labels?.['topology.nodewarden.dev/rack'],
      node0.metadata?.labels?.['topology.nodewarden.dev/rack'],
    );
    assert.equal(
      h.metadata.labels?.['topology.kubernetes.io/zone'],
      node0.metadata?.labels?.['topology.kubernetes.io/zone'],
    );
    assert.equal(h.spec.online, true);
    assert.equal(h.spec.bmc?.disableCertificateVerification, true);
    assert.equal(h.spec.bmc?.credentialsName, 'lab-worker-000-worker-2-bmc-secret');
    assert.deepEqual(h.spec.networkData, { name: 'lab-worker-000-worker-2-network-data', namespace: NS });
    assert.deepEqual(h.spec.rootDeviceHints, { deviceName: '/dev/vda' });
    assert.equal(h.metadata.ownerReferences?.[0]?.name, POOL);

    // The machine on the fleet is the one the host's BMC address names, with the host's boot MAC.
    const machines = await machinesOf(POOL);
    assert.equal(machines.length, 10);
    const m = machines.find((x) => x.id === `${NS}-lab-worker-000-worker-2`)!;
    assert.equal(h.spec.bmc?.address, m.bmcAddress);
    assert.deepEqual(
      [m.kind, m.hypervisor, m.cpus, m.memoryMiB, m.diskGB],
      ['vm', 'worker-000', 1, 2048, 10],
    );
    assert.equal(m.nics[0]?.mac, h.spec.bootMACAddress);

    const secrets = await secretsOf(POOL);
    assert.equal(secrets.length, 20);
    const creds = secrets.find((s) => s.metadata?.name === 'lab-worker-000-worker-2-bmc-secret')!;
    assert.equal(Buffer.from(creds.data?.password ?? '', 'base64').toString(), 'vm-secret');
    const nd = secrets.find((s) => s.metadata?.name === 'lab-worker-000-worker-2-network-data')!;
    const networkData = JSON.parse(Buffer.from(nd.data?.networkData ?? '', 'base64').toString());
    assert.equal(networkData.links[0].ethernet_mac_address, h.spec.bootMACAddress);

    // 2 bridges + 10 VMs from the static range, one DHCP block of 16 per node.
    const ipp = await ipPool('lab-oam');
    assert.equal(ipp.spec.allocations?.length, 12);
    assert.deepEqual(
      ipp.spec.dhcpAllocations?.map((d) => [d.owner, d.start, d.stop]),
      [
        ['dhcp/worker-000', '192.168.4.0', '192.168.4.15'],
        ['dhcp/worker-001', '192.168.4.16', '192.168.4.31'],
      ],
    );
    assert.equal(new Set(ipp.spec.allocations?.map((a) => a.ip)).size, 12);
    assert.equal(networkData.networks[0].ip_address, vmAddresses(ipp)['vm/worker-000/worker/2/enp1s0']);

    const annotation = JSON.parse(node0.metadata?.annotations?.[NETWORK_VALUES_ANNOTATION] ?? '{}');
    const bridge = ipp.spec.allocations?.find((a) => a.owner === 'bridge/worker-000')?.ip;
    assert.deepEqual(
      [annotation[`${NS}/${POOL}`].networks[0].bridgeIP, annotation[`${NS}/${POOL}`].networks[0].dhcpStart],
      [bridge, '192.168.4.0'],
    );
    assert.equal(networkData.networks[0].routes[0].gateway, bridge);
    const ds = await client.get<Obj>(DaemonSets, 'lab-agent', NS);
    assert.equal(ds.metadata?.ownerReferences?.[0]?.name, POOL);
    const hv = p.status?.hypervisors?.find((x) => x.node === 'worker-000');
    assert.deepEqual([hv?.agentReady, hv?.vms?.length, hv?.bridgeAddresses?.[0]?.ip], [true, 5, bridge]);
  });

  it('its hosts become available: the host controller registers and inspects each VM through its BMC', async () => {
    const p = await eventually(
      'all 10 hosts available',
      async () => {
        const pool = await getPool(POOL);
        return pool.status?.readyHosts === 10 ? pool : undefined;
      },
      120_000,
    );
    const vm = p.status?.hypervisors?.[0]?.vms?.[0];
    assert.equal(vm?.hostReady, true);
    const host = await client.get<BareMetalHost>(BMH, vm!.name, NS);
    assert.equal(host.status?.provisioning?.state, 'available');
    assert.equal(host.status?.hardware?.nics?.[0]?.mac, host.spec.bootMACAddress);
  });

  it('scales a flavor 4 → 2: the two highest-numbered VMs go, with their hosts, Secrets, machines and addresses', async () => {
    const before = vmAddresses(await ipPool('lab-oam'));
    const gone = NODES.flatMap((n) => [2, 3].map((i) => `vm/${n}/worker/${i}/enp1s0`));
    released = Object.fromEntries(gone.map((o) => [o, before[o]!]));
    await client.patch(
      VHP,
      POOL,
      NS,
      { spec: { nodes: [flavor('master', 1), flavor('worker', 2)] } },
      { type: 'merge' },
    );
    await ready(POOL, 6);
    await eventually('the released hosts gone', async () =>
      (await hostsOf(POOL)).length === 6 ? true : undefined,
    );
    assert.deepEqual(
      names(await hostsOf(POOL)),
      NODES.flatMap((n) => [`lab-${n}-master-0`, `lab-${n}-worker-0`, `lab-${n}-worker-1`]).sort(),
    );
    assert.equal((await secretsOf(POOL)).length, 12);
    assert.equal((await machinesOf(POOL)).length, 6);
    const after = vmAddresses(await ipPool('lab-oam'));
    for (const o of gone) assert.equal(after[o], undefined, `${o} released`);
    assert.equal((await ipPool('lab-oam')).spec.allocations?.length, 8);
  });

  it('scales it back 2 → 4: the new VMs get the released addresses again', async () => {
    await client.patch(
      VHP,
      POOL,
      NS,
      { spec: { nodes: [flavor('master', 1), flavor('worker', 4)] } },
      { type: 'merge' },
    );
    await ready(POOL, 10);
    const now = vmAddresses(await ipPool('lab-oam'));
    assert.deepEqual(
      Object.values(released).sort(),
      Object.keys(released)
        .map((o) => now[o])
        .sort(),
    );
    assert.equal((await machinesOf(POOL)).length, 10);
  });

  it('gives up the VMs of a node that leaves the selector, and its bridge, DHCP block and annotation', async () => {
    await labelNode('worker-001', false);
    // HostsCreated again only once every given-up host is gone and its addresses freed.
    const p = await ready(POOL, 5);
    assert.equal(p.status?.desiredHosts, 5);
    assert.ok((await hostsOf(POOL)).every((h) => h.metadata.labels?.[HYPERVISOR_LABEL] === 'worker-000'));
    const ipp = await ipPool('lab-oam');
    assert.ok(!ipp.spec.allocations?.some((a) => a.owner.includes('worker-001')));
    assert.deepEqual(
      ipp.spec.dhcpAllocations?.map((d) => d.owner),
      ['dhcp/worker-000'],
    );
    assert.equal((await machinesOf(POOL)).filter((m) => m.hypervisor === 'worker-001').length, 0);
    await eventually('the annotation entry removed', async () => {
      const n = await client.get<Obj>(Nodes, 'worker-001');
      const v = n.metadata?.annotations?.[NETWORK_VALUES_ANNOTATION];
      return v === undefined || !(`${NS}/${POOL}` in JSON.parse(v)) ? true : undefined;
    });
    await labelNode('worker-001', true);
    await ready(POOL, 10);
  });

  it('leaves nothing behind when the pool is deleted', async () => {
    await client.delete(VHP, POOL, NS);
    await eventually(
      'the pool gone',
      async () => {
        try {
          await getPool(POOL);
          return undefined;
        } catch (err) {
          if (isNotFound(err)) return true;
          throw err;
        }
      },
      60_000,
    );
    assert.deepEqual(names(await hostsOf(POOL)), []);
    assert.deepEqual(names(await secretsOf(POOL)), []);
    assert.deepEqual(await machinesOf(POOL), []);
    assert.equal(
      await ipPool('lab-oam').then(
        () => 'still there',
        (err: unknown) => (isNotFound(err) ? 'gone' : String(err)),
      ),
      'gone',
    );
    await eventually('the agent DaemonSet gone', async () =>
      client.get(DaemonSets, 'lab-agent', NS).then(
        () => undefined,
        (err: unknown) => (isNotFound(err) ? true : undefined),
      ),
    );
    for (const n of NODES) {
      const node = await client.get<Obj>(Nodes, n);
      const v = node.metadata?.annotations?.[NETWORK_VALUES_ANNOTATION];
      assert.ok(v === undefined || !(`${NS}/${POOL}` in JSON.parse(v)), `${n} annotation`);
    }
  });
});

describe('a range too small for the pool', () => {
  it('says which network is full, and makes no half host', async () => {
    const POOL = 'tight';
    // 4 addresses: one bridge and three VMs of the four asked for on worker-000.
    await createPool(
      poolObject(POOL, {
        // matchExpressions too: the agent reaches its node through node affinity.
        nodeSelector: {
          matchLabels: { [HV_LABEL]: 'true' },
          matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['worker-000'] }],
        },
        networks: [network({ staticAllocationStart: '192.168.3.1', staticAllocationStop: '192.168.3.4' })],
        nodes: [flavor('worker', 4)],
      }),
    );
    const p = await ready(POOL, 3, 'AddressesExhausted');
    const c = p.status?.conditions?.find((x) => x.type === 'Ready');
    assert.equal(c?.status, 'False');
    assert.match(
      c?.message ?? '',
      /network oam has no free address left: 1 of 4 hosts could not be made .*widen/,
    );
    assert.deepEqual(names(await hostsOf(POOL)), [
      'tight-worker-000-worker-0',
      'tight-worker-000-worker-1',
      'tight-worker-000-worker-2',
    ]);
    assert.equal((await secretsOf(POOL)).length, 6);
    assert.equal((await machinesOf(POOL)).length, 3);
    assert.equal(vmAddresses(await ipPool('tight-oam'))['vm/worker-000/worker/3/enp1s0'], undefined);
    await client.delete(VHP, POOL, NS);
  });
});

describe('the IPPool store under concurrent writers', () => {
  it('hands eight racing owners eight different addresses, then frees them, through resourceVersion conflicts', async () => {
    const store = new IPPoolStore(client);
    const name = `race-${RUN}`;
    const made = await store.ensure(
      NS,
      name,
      {
        subnet: 'fd00:10::/64',
        macPrefix: '02:00:00:00:00:00',
        range: { start: 'fd00:10::1', stop: 'fd00:10::ff' },
      },
      { labels: {}, ownerReferences: [] },
    );
    assert.ok(made.ok);
    const owners = Array.from({ length: 8 }, (_, i) => `racer-${i}`);
    const got = await Promise.all(owners.map((o) => store.change(NS, name, (spec) => allocateIP(spec, o))));
    const ips = got.map((r) => (r.ok ? r.value.ip : r.message));
    assert.equal(new Set(ips).size, 8, ips.join(' '));
    const stored = (await ipPool(name)).spec.allocations ?? [];
    assert.deepEqual(stored.map((a) => a.owner).sort(), owners);
    await Promise.all(
      owners.map((o) =>
        store.change(NS, name, (spec) => ({ ok: true, ...release(spec, (x) => x === o), value: 0 })),
      ),
    );
    assert.deepEqual((await ipPool(name)).spec.allocations, []);
    await store.delete(NS, name);
  });
});

describe('least privilege', () => {
  it('did all of the above with its declared RBAC alone: not one request refused', async () => {
    assert.equal(await forbiddenCount(), forbiddenBefore);
  });
});
