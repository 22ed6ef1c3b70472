// The simulated BMC fleet as `cluster up --bare-metal-hosts` makes it: its own
// process, published with its certificate, each physical machine a
// BareMetalHost with its Secrets; proven with Redfish clients nobody here
// wrote (Debian's redfishtool and python3-sushy), and kept across down + up.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { type BareMetalHost, BareMetalHosts, RACK_LABEL } from '../../src/api/baremetal.ts';
import { parsePools } from '../../src/cluster/fleet.ts';
import { simulatedBmcFleet } from '../../src/cluster/infra/bmc/addon.ts';
import { type ConsoleTarget, consoleRequest } from '../../src/cluster/infra/bmc/api.ts';
import { bmcCommand } from '../../src/cluster/infra/bmc/cli.ts';
import { consolePaths, type Machine } from '../../src/cluster/infra/bmc/protocol.ts';
import { endpointConfigMap } from '../../src/cluster/infra/kit/discovery.ts';
import { LocalClusters } from '../../src/cluster/local-cluster.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { ConfigMaps, Secrets } from '../../src/runtime/resources.ts';
import { runCommand } from '../harness/command-io.ts';

const NAME = 'nwtest-bmc';

interface Run {
  code: number;
  out: string;
  err: string;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { env, timeout: 60_000 }, (error, out, err) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}

/** `nodewarden bmc …` in process (the add-on is not on any capability's list yet), with its output. */
function bmc(...args: string[]): Promise<Run> {
  return runCommand(bmcCommand, [...args, '--cluster', NAME]);
}

// sushy honours $REQUESTS_CA_BUNDLE over verify=False; the fleet's certificate is self-signed on purpose.
const { REQUESTS_CA_BUNDLE: _r, CURL_CA_BUNDLE: _c, ...pythonEnv } = process.env;

/** Ironic's Redfish library against one machine: `read` prints what it sees, `off` / `on` reset it. */
const SUSHY = `
import json, sys, warnings
warnings.filterwarnings('ignore')
import sushy
url, user, password, system_id, action = sys.argv[1:6]
root = sushy.Sushy(url + '/redfish/v1', username=user, password=password, verify=False)
system = root.get_system('/redfish/v1/Systems/' + system_id)
if action == 'read':
    print(json.dumps({
        'power': system.power_state.value,
        'cpus': system.processors.summary.count,
        'memoryGiB': system.memory_summary.size_gib,
        'macs': sorted(n.mac_address for n in system.ethernet_interfaces.get_members()),
        'resets': sorted(v.value for v in system.get_allowed_reset_system_values()),
    }))
elif action == 'off':
    system.reset_system(sushy.RESET_FORCE_OFF)
elif action == 'on':
    system.reset_system(sushy.RESET_ON)
`;

describe('the simulated BMC fleet of a local cluster', () => {
  let clusters: LocalClusters;
  let client: KubeClient;
  let target: ConsoleTarget;
  let machines: Machine[];
  const host = () => machines[0]!;
  const hostPort = () => new URL(target.endpoint).host;
  const power = async (id: string) =>
    (await consoleRequest<Machine>(target, 'GET', consolePaths.machine(id))).power;

  before(async () => {
    clusters = await LocalClusters.open({ quiet: true, infrastructure: [simulatedBmcFleet] });
    const info = await clusters.up({
      name: NAME,
      pools: parsePools('w=1'),
      infraFlags: { 'bare-metal-hosts': '4:racks=2' },
    });
    assert.ok(info.infrastructure.bmc?.endpoint, 'cluster status shows the fleet');
    client = KubeClient.fromKubeConfig(clusters.kubeConfig(NAME));
    const cm = endpointConfigMap('bmc');
    const published = await client.get<V1ConfigMap>(ConfigMaps, cm.name, cm.namespace);
    target = { endpoint: published.data?.endpoint ?? '', ca: published.data?.caCert ?? '' };
    machines = await consoleRequest<Machine[]>(target, 'GET', consolePaths.machines);
  });

  after(async () => {
    client?.close();
    await clusters?.delete(NAME);
  });

  it('runs on loopback HTTPS, published with its certificate, which a client can pin', async () => {
    assert.match(target.endpoint, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.match(target.ca ?? '', /-----BEGIN CERTIFICATE-----/);
    // consoleRequest verified the certificate against the published one to get here.
    assert.equal(machines.length, 4);
  });

  it('is listed by cluster status: its endpoint and its machines', async () => {
    const bmc = (await clusters.status(NAME)).infrastructure.bmc;
    assert.equal(bmc?.endpoint, target.endpoint);
    assert.match(bmc?.summary ?? '', /^4 machines in 2 racks; \d+ on$/);
  });

  it('racks each physical machine as a BareMetalHost in metal3 with its rack, Secrets and BMC address', async () => {
    const hosts = (await client.list<BareMetalHost>(BareMetalHosts.type, { namespace: 'metal3' })).items;
    assert.deepEqual(hosts.map((h) => h.metadata?.name).sort(), [
      'bm-r0-00',
      'bm-r0-01',
      'bm-r1-00',
      'bm-r1-01',
    ]);
    for (const h of hosts) {
      const m = machines.find((x) => x.id === h.metadata?.name)!;
      assert.equal(h.metadata?.labels?.[RACK_LABEL], m.rack);
      assert.equal(h.spec?.bmc?.address, `redfish://${hostPort()}/redfish/v1/Systems/${m.id}`);
      assert.equal(h.spec?.bmc?.disableCertificateVerification, true);
      assert.equal(h.spec?.bootMACAddress, m.nics[0]?.mac);
      assert.equal(h.spec?.online, true);
      const creds = await client.get<V1Secret>(Secrets, h.spec!.bmc!.credentialsName, 'metal3');
      const decode = (v?: string) => Buffer.from(v ?? '', 'base64').toString();
      assert.deepEqual(
        [decode(creds.data?.username), decode(creds.data?.password)],
        [m.credentials.username, m.credentials.password],
      );
      const nd = await client.get<V1Secret>(Secrets, h.spec!.networkData!.name, 'metal3');
      const data = JSON.parse(decode(nd.data?.networkData));
      assert.equal(data.networks[0].id, 'oam-ipv4');
      assert.equal(data.networks[0].ip_address, m.nics[0]?.ip);
    }
  });

  describe("Debian's redfishtool", () => {
    const redfishtool = (...args: string[]) =>
      run('redfishtool', [
        '-r',
        hostPort(),
        '-S',
        'Always',
        '-u',
        host().credentials.username,
        '-p',
        host().credentials.password,
        ...args,
      ]);

    it('lists the Systems its credentials reach, and reads one', async () => {
      const list = await redfishtool('Systems', 'list');
      assert.equal(list.code, 0, list.err);
      assert.deepEqual(
        JSON.parse(list.out).Members.map((m: { Id: string }) => m.Id),
        [host().id],
      );
      const got = await redfishtool('-A', 'Session', 'Systems', '-I', host().id, 'get');
      assert.equal(got.code, 0, got.err);
      const system = JSON.parse(got.out);
      assert.deepEqual([system.Id, system.ProcessorSummary.Count], [host().id, host().cpus]);
    });

    it('restarts, switches off and on a machine, as the console sees', async () => {
      const before = await consoleRequest<Machine>(target, 'GET', consolePaths.machine(host().id));
      const restart = await redfishtool('Systems', '-I', host().id, 'reset', 'GracefulRestart');
      assert.equal(restart.code, 0, restart.err);
      const after = await consoleRequest<Machine>(target, 'GET', consolePaths.machine(host().id));
      assert.equal(after.power, 'On');
      assert.equal(after.boots, (before.boots ?? 0) + 1, 'the restart booted it once more');
      assert.equal((await redfishtool('Systems', '-I', host().id, 'reset', 'ForceOff')).code, 0);
      assert.equal(await power(host().id), 'Off');
      assert.equal((await redfishtool('Systems', '-I', host().id, 'reset', 'On')).code, 0);
      assert.equal(await power(host().id), 'On');
    });

    it('is refused with 401 when the password is wrong', async () => {
      const r = await run('redfishtool', [
        '-r',
        hostPort(),
        '-S',
        'Always',
        '-u',
        host().credentials.username,
        '-p',
        'wrong',
        'Systems',
        'list',
      ]);
      assert.notEqual(r.code, 0);
      assert.match(r.err, /401/);
    });
  });

  describe("python3-sushy, Ironic's Redfish library", () => {
    const sushy = (m: Machine, action: string) =>
      run(
        '/usr/bin/python3',
        ['-c', SUSHY, target.endpoint, m.credentials.username, m.credentials.password, m.id, action],
        pythonEnv,
      );

    it('reads the simulated hardware', async () => {
      const m = machines[1]!;
      const r = await sushy(m, 'read');
      assert.equal(r.code, 0, r.err);
      const seen = JSON.parse(r.out);
      assert.deepEqual(seen, {
        power: m.power,
        cpus: m.cpus,
        memoryGiB: m.memoryMiB / 1024,
        macs: m.nics.map((n) => n.mac).sort(),
        resets: ['ForceOff', 'ForceRestart', 'GracefulRestart', 'GracefulShutdown', 'On'],
      });
    });

    it('switches a machine on and off, as the console sees', async () => {
      const m = machines[1]!;
      const on = await sushy(m, 'on');
      assert.equal(on.code, 0, on.err);
      assert.equal(await power(m.id), 'On');
      const off = await sushy(m, 'off');
      assert.equal(off.code, 0, off.err);
      assert.equal(await power(m.id), 'Off');
    });
  });

  describe('nodewarden bmc', () => {
    it('lists the machines with -o json', async () => {
      const r = await bmc('machines', '-o', 'json');
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(
        (JSON.parse(r.out) as Machine[]).map((m) => m.id),
        machines.map((m) => m.id),
      );
    });

    it("switches a machine off behind the operator's back", async () => {
      const r = await bmc('power', host().id, 'off');
      assert.equal(r.code, 0, r.err);
      assert.equal(await power(host().id), 'Off');
    });

    it('refuses an unknown fault with 400 and sets nothing', async () => {
      const r = await bmc('faults', '--set', '{"unreachble": ["*"]}');
      assert.equal(r.code, 1);
      assert.match(r.err, /400 unknown fault "unreachble"; the faults are unreachable/);
      const faults = JSON.parse((await bmc('faults', '-o', 'json')).out);
      assert.deepEqual(faults.unreachable, []);
    });

    it('makes a machine unreachable to Redfish clients until the fault is cleared', async () => {
      assert.equal((await bmc('faults', '--set', JSON.stringify({ unreachable: [host().id] }))).code, 0);
      try {
        const r = await run('redfishtool', [
          '-r',
          hostPort(),
          '-S',
          'Always',
          '-u',
          host().credentials.username,
          '-p',
          host().credentials.password,
          'Systems',
          '-I',
          host().id,
          'get',
        ]);
        assert.notEqual(r.code, 0, 'no answer from an unreachable BMC');
      } finally {
        assert.equal((await bmc('faults', '--clear')).code, 0);
      }
    });
  });

  describe('across cluster down and up', () => {
    it('keeps its machines, their power, its port and its certificate, and adds only the hosts missing', async () => {
      await consoleRequest(target, 'POST', consolePaths.power(machines[2]!.id), { power: 'On' });
      await clusters.down(NAME);
      assert.equal(
        (await clusters.status(NAME)).infrastructure.bmc,
        undefined,
        'the fleet stops with the cluster',
      );

      const again = await clusters.up({ name: NAME, infraFlags: { 'bare-metal-hosts': '6:racks=2' } });
      assert.equal(again.infrastructure.bmc?.endpoint, target.endpoint, 'the same port when it is free');
      client.close();
      client = KubeClient.fromKubeConfig(clusters.kubeConfig(NAME));
      const cm = endpointConfigMap('bmc');
      const published = await client.get<V1ConfigMap>(ConfigMaps, cm.name, cm.namespace);
      assert.equal(published.data?.caCert, target.ca, 'the same certificate');
      const now = await consoleRequest<Machine[]>(target, 'GET', consolePaths.machines);
      assert.equal(now.length, 6);
      for (const m of machines) {
        const kept = now.find((x) => x.id === m.id);
        assert.deepEqual(
          { ...kept, power: undefined, boots: undefined, lastBootTarget: undefined },
          { ...m, power: undefined, boots: undefined, lastBootTarget: undefined },
        );
      }
      assert.equal(now.find((x) => x.id === machines[2]!.id)?.power, 'On');
      const hosts = (await client.list<BareMetalHost>(BareMetalHosts.type, { namespace: 'metal3' })).items;
      assert.equal(hosts.length, 6);
    });

    it("moves the hosts' BMC addresses to its new port when the old one is taken", async () => {
      await clusters.down(NAME);
      const old = new URL(target.endpoint);
      const squatter = createServer();
      await new Promise<void>((resolve) => squatter.listen(Number(old.port), '127.0.0.1', resolve));
      let endpoint: string | undefined;
      try {
        endpoint = (await clusters.up({ name: NAME })).infrastructure.bmc?.endpoint;
      } finally {
        squatter.close();
      }
      assert.ok(endpoint && endpoint !== target.endpoint, `a new port, not ${old.port}`);
      client.close();
      client = KubeClient.fromKubeConfig(clusters.kubeConfig(NAME));
      const hosts = (await client.list<BareMetalHost>(BareMetalHosts.type, { namespace: 'metal3' })).items;
      assert.equal(hosts.length, 6);
      for (const h of hosts) {
        assert.equal(
          h.spec?.bmc?.address,
          `redfish://${new URL(endpoint).host}/redfish/v1/Systems/${h.metadata?.name}`,
        );
      }
    });
  });
});
