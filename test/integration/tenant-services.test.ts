// A TenantCluster's support services proven with real processes nobody here
// wrote: HAProxy (Debian's) runs the rendered control-plane config on
// 127.0.0.1 against stand-in API servers and takes out the one whose /readyz
// fails; the jump host's `host` helper reboots and powers a machine of the simulated BMC
// fleet through Debian's redfishtool; and the rendered objects are applied to
// the real API server, owned by a real TenantCluster, twice without change.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type TenantCluster, TenantClusters } from '../../src/api/tenant.ts';
import { BmcServer } from '../../src/cluster/infra/bmc/server.ts';
import { ensureCertificate } from '../../src/cluster/infra/bmc/tls.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import {
  ConfigMaps,
  CustomResourceDefinitions,
  Deployments,
  type K8sObject,
  Secrets,
  Services,
} from '../../src/runtime/resources.ts';
import { renderServices } from '../../src/tenant/services/index.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import { claimedHost, find, fleet, secretFile, tenantCluster } from '../unit/tenant/services/fixtures.ts';
import {
  ApiServerStandIn,
  freePort,
  HAProxyRun,
  selfSigned,
  tcpAnswer,
  tcpStandIn,
  whoAnswers,
} from '../unit/tenant/services/live-stand-ins.ts';

const dir = mkdtempSync(join(tmpdir(), 'tenant-services-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const KEYS = ['id_ed25519'];
// biome-ignore lint/suspicious/noExplicitAny: objects read field by field as the API server returns them
type Any = any;

describe('the control-plane load balancer under the real HAProxy', () => {
  const backends = ['cp-0', 'cp-1', 'cp-2'];
  let standIns: ApiServerStandIn[] = [];
  const haproxy = new HAProxyRun(dir);
  let front = 0;

  before(async () => {
    const tls = selfSigned(dir);
    standIns = backends.map((n) => new ApiServerStandIn(n, tls));
    await Promise.all(standIns.map((s) => s.start()));
    const hosts = backends.map((n) => claimedHost(n, 'ControlPlane', '127.0.0.1'));
    const { objects, problems } = renderServices(tenantCluster(), hosts, {}, KEYS);
    assert.deepEqual(problems, []);
    const rendered = secretFile(find(objects, 'Secret', 'blue-controlplane-lb'), 'haproxy.cfg');
    // Only the ports move to loopback ones that are free here; checks, timeouts and balancing stay as rendered.
    front = await freePort();
    let cfg = rendered.replace(/^(\s*bind) :6443$/m, `$1 127.0.0.1:${front}`);
    cfg = cfg.replace(/^(\s*server (\S+) 127\.0\.0\.1):6443$/gm, (_, head: string, name: string) => {
      const s = standIns.find((x) => x.name === name);
      assert.ok(s, `unexpected server ${name}`);
      return `${head}:${s.port}`;
    });
    assert.notEqual(cfg, rendered);
    assert.equal([...cfg.matchAll(/:6443/g)].length, 0, cfg);
    await haproxy.start('controlplane', cfg, [front]);
  });

  after(() => {
    haproxy.stop();
    for (const s of standIns) s.stop();
  });

  /** The backends that answer n fresh connections. */
  async function answering(n = 9): Promise<string[]> {
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) seen.add(await whoAnswers(front));
    return [...seen].sort();
  }

  it('carries an HTTPS request through to the API servers, every one of them in turn', async () => {
    assert.deepEqual(await answering(), backends, haproxy.log);
  });

  it("checks each API server's /readyz over TLS", async () => {
    await eventually('a /readyz check on every backend', async () =>
      standIns.every((s) => s.checks > 0) ? true : undefined,
    );
  });

  it('takes out an API server whose /readyz answers 500, and brings it back once it answers 200', async () => {
    const sick = standIns[2]!;
    sick.readyz = 500;
    const checksBefore = sick.checks;
    // fall 4 at inter 5s: about 20 s, as rendered.
    await eventually(
      'cp-2 out of rotation',
      async () => ((await answering()).join() === 'cp-0,cp-1' ? true : undefined),
      45_000,
      1000,
    );
    assert.ok(
      sick.checks - checksBefore >= 4,
      `HAProxy checked ${sick.checks - checksBefore} times before giving up`,
    );
    assert.match(haproxy.log, /cp-2 is DOWN/);
    sick.readyz = 200;
    await eventually(
      'cp-2 back in rotation',
      async () => ((await answering()).join() === backends.join() ? true : undefined),
      30_000,
      1000,
    );
  });
});

describe('the worker load balancer under the real HAProxy', () => {
  const haproxy = new HAProxyRun(dir);
  const standIns = new Map<string, Server>();
  let ports: number[] = [];

  before(async () => {
    // The workers (127.0.0.2 and .3) listen on the node ports themselves, as the rendered
    // backends expect; only HAProxy's binds move from every address to 127.0.0.1.
    for (let attempt = 0; ports.length === 0; attempt++) {
      const start = 30000 + Math.floor(Math.random() * 2700);
      try {
        for (const p of [start, start + 1]) {
          (await tcpStandIn('127.0.0.1', p, 'probe')).close();
          for (const [name, ip] of [
            ['w-0', '127.0.0.2'],
            ['w-1', '127.0.0.3'],
          ] as const)
            standIns.set(`${name}:${p}`, await tcpStandIn(ip, p, name));
        }
        ports = [start, start + 1];
      } catch (err) {
        for (const s of standIns.values()) s.close();
        standIns.clear();
        if (attempt > 10) throw err;
      }
    }
    const tc = tenantCluster({
      workerLoadBalancer: {
        nodePortRange: { start: ports[0]!, end: ports[1]! },
        nodeInterfaceId: 'oam-ipv4',
      },
    });
    const hosts = [claimedHost('w-0', 'Worker', '127.0.0.2'), claimedHost('w-1', 'Worker', '127.0.0.3')];
    const { objects, problems } = renderServices(tc, hosts, {}, KEYS);
    assert.deepEqual(problems, []);
    const rendered = secretFile(find(objects, 'Secret', 'blue-worker-lb'), 'haproxy.cfg');
    const cfg = rendered.replace(/^(\s*bind) :(\d+)$/gm, '$1 127.0.0.1:$2');
    assert.equal([...cfg.matchAll(/bind 127\.0\.0\.1:/g)].length, 2, cfg);
    await haproxy.start('worker', cfg, ports);
  });

  after(() => {
    haproxy.stop();
    for (const s of standIns.values()) s.close();
  });

  async function answering(port: number, n = 6): Promise<string[]> {
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) seen.add(await tcpAnswer(port));
    return [...seen].sort();
  }

  it('sends each node port to that port on every worker', async () => {
    for (const p of ports) assert.deepEqual(await answering(p), [`w-0:${p}`, `w-1:${p}`], haproxy.log);
  });

  it('takes a worker out of one port when its TCP check fails there, and only there', async () => {
    const [down, up] = ports as [number, number];
    standIns.get(`w-1:${down}`)!.close();
    await eventually(
      `w-1 out of port ${down}`,
      async () => ((await answering(down)).join() === `w-0:${down}` ? true : undefined),
      45_000,
      1000,
    );
    assert.match(haproxy.log, new RegExp(`worker-${down}/w-1 is DOWN`));
    assert.deepEqual(await answering(up), [`w-0:${up}`, `w-1:${up}`]);
  });
});

describe("the jump host's host helper against the simulated BMC fleet", () => {
  let bmc: BmcServer;
  const python = () => join(dir, 'host');

  before(async () => {
    bmc = new BmcServer({
      certificate: ensureCertificate(mkdirSync(join(dir, 'bmc'), { recursive: true })!, 'tenant'),
      tickMs: 0,
    });
    await bmc.start();
    bmc.state.define({
      id: 'cp-0',
      kind: 'physical',
      rack: 'r0',
      cpus: 8,
      memoryMiB: 16384,
      diskGB: 100,
      nics: [{ name: 'eno1', mac: '02:00:00:00:0a:01' }],
      credentials: { username: 'admin', password: 'pw-cp-0' },
    });
  });
  after(() => bmc.close());

  function jumpHostFiles(password: string): { hosts: string } {
    const host = claimedHost('cp-0', 'ControlPlane', '192.168.10.10', {
      bmc: { address: `redfish://${bmc.address}/redfish/v1/Systems/cp-0`, username: 'admin', password },
    });
    const { objects, problems } = renderServices(tenantCluster(), [host], {}, KEYS);
    assert.deepEqual(problems, []);
    const helper = (find(objects, 'ConfigMap', 'blue-jumphost').data as Record<string, string>).host!;
    writeFileSync(python(), helper);
    const hosts = join(dir, `hosts-${password}`);
    writeFileSync(hosts, secretFile(find(objects, 'Secret', 'blue-jumphost'), 'hosts'));
    return { hosts };
  }

  // Asynchronous: the fleet answers from this very process, so a blocking spawn would starve it.
  const run = (hosts: string, ...args: string[]) =>
    new Promise<{ status: number; out: string }>((resolve) => {
      execFile(
        'python3',
        [python(), ...args],
        { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODEWARDEN_HOSTS: hosts } },
        (err, stdout, stderr) =>
          resolve({ status: err ? Number(err.code ?? 1) : 0, out: `${stdout}${stderr}` }),
      );
    });

  it('reboots the machine with redfishtool, as its BMC sees', async () => {
    const { hosts } = jumpHostFiles('pw-cp-0');
    const before = bmc.state.get('cp-0')!.boots;
    const r = await run(hosts, 'reboot', 'cp-0');
    assert.equal(r.status, 0, r.out);
    assert.equal(bmc.state.get('cp-0')!.boots, before + 1);
    assert.equal(bmc.state.get('cp-0')!.power, 'On');
  });

  it('reads and switches the power with redfishtool: off, status, on', async () => {
    const { hosts } = jumpHostFiles('pw-cp-0');
    assert.equal((await run(hosts, 'off', 'cp-0', '--force')).status, 0);
    assert.equal(bmc.state.get('cp-0')!.power, 'Off');
    const off = await run(hosts, 'status', 'cp-0');
    assert.equal(off.status, 0, off.out);
    assert.equal(off.out, 'cp-0: Off\n');
    assert.equal((await run(hosts, 'on', 'cp-0')).status, 0);
    assert.equal(bmc.state.get('cp-0')!.power, 'On');
    assert.equal((await run(hosts, 'status', 'cp-0')).out, 'cp-0: On\n');
  });

  it('fails, and reboots nothing, with credentials the BMC refuses', async () => {
    const { hosts } = jumpHostFiles('wrong');
    const before = bmc.state.get('cp-0')!.boots;
    const r = await run(hosts, 'reboot', 'cp-0');
    assert.notEqual(r.status, 0);
    assert.match(r.out, /401|nauthori[sz]ed|cant|error/i);
    assert.equal(bmc.state.get('cp-0')!.boots, before);
  });
});

describe('the rendered objects on the real API server', () => {
  const namespace = useNamespace('tenant-services');
  let client: KubeClient;
  let tc: TenantCluster;
  const base = 30100 + 5 * Math.floor(Math.random() * 400);
  const apply = (type: typeof Secrets, o: K8sObject) =>
    client.patch<K8sObject>(type, o.metadata!.name!, o.metadata!.namespace, o, {
      type: 'apply',
      force: true,
      fieldManager: 'nodewarden-tenant-test',
    });
  const typeOf = (o: K8sObject) =>
    ({ ConfigMap: ConfigMaps, Secret: Secrets, Service: Services, Deployment: Deployments })[o.kind!]!;
  const render = (hosts = fleet()) => {
    const spec = tenantCluster({
      controlPlaneLoadBalancer: { nodePort: base, nodeInterfaceId: 'oam-ipv4' },
      jumpHost: { ...tenantCluster().spec.services!.jumpHost!, nodePort: base + 1 },
      workerLoadBalancer: { nodePortRange: { start: base + 2, end: base + 4 }, nodeInterfaceId: 'oam-ipv4' },
    });
    return renderServices({ ...spec, metadata: tc.metadata }, hosts, {}, KEYS);
  };

  before(async () => {
    client = KubeClient.fromKubeConfig(testKubeConfig());
    const crd = TenantClusters.crd();
    await client.createIfAbsent(CustomResourceDefinitions, crd as never);
    await eventually('TenantCluster CRD established', async () => {
      const got = await client.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
        CustomResourceDefinitions,
        crd.metadata.name,
      );
      return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
        ? true
        : undefined;
    });
    tc = await eventually('the TenantCluster created', () =>
      client.create<TenantCluster>(
        TenantClusters.type,
        TenantClusters.make(
          { name: 'blue', namespace: namespace() },
          { nodes: { ControlPlane: { count: { active: 3 } } } },
        ),
      ),
    );
  });
  after(async () => {
    // Gone before the next suite: a later operator would otherwise schedule it onto that suite's hosts.
    await client.delete(TenantClusters.type, 'blue', namespace(), { ignoreNotFound: true });
    client.close();
  });

  it('takes every object, owned by the TenantCluster, and a second apply changes nothing', async () => {
    const { objects, problems } = render();
    assert.deepEqual(problems, []);
    const first = [];
    for (const o of objects) first.push(await apply(typeOf(o), o));
    for (const o of first) assert.equal(o.metadata?.ownerReferences?.[0]?.uid, tc.metadata.uid);
    const again = [];
    for (const o of render().objects) again.push(await apply(typeOf(o), o));
    // A Deployment's status moves on its own (its controller); its generation moves only with its spec.
    const version = (o: K8sObject) =>
      `${o.kind}/${o.metadata?.name} ${o.metadata?.generation ?? o.metadata?.resourceVersion}`;
    assert.deepEqual(again.map(version), first.map(version));
    const svc = await client.get<K8sObject>(Services, 'blue-worker-lb', namespace());
    assert.deepEqual(
      (svc.spec as Any).ports.map((p: Any) => p.nodePort),
      [base + 2, base + 3, base + 4],
    );
  });

  it('carries the hostAliases and BMC credentials as stored (the anchor services case)', async () => {
    const d = await client.get<K8sObject>(Deployments, 'blue-jumphost', namespace());
    assert.deepEqual(
      (d.spec as Any).template.spec.hostAliases,
      fleet().map((h) => ({ ip: h.ips['oam-ipv4'], hostnames: [h.name] })),
    );
    const hosts = JSON.parse(
      secretFile(await client.get<K8sObject>(Secrets, 'blue-jumphost', namespace()), 'hosts'),
    );
    assert.deepEqual(
      hosts.map((h: { name: string; bmc: { username: string; password: string } }) => [
        h.name,
        h.bmc.username,
        h.bmc.password,
      ]),
      fleet().map((h) => [h.name, 'admin', `pw-${h.name}`]),
    );
  });

  it('moves the backends and rolls the load balancer when a host is replaced', async () => {
    const replaced = fleet().map((h) =>
      h.name === 'cp-1' ? claimedHost('cp-7', 'ControlPlane', '192.168.10.17') : h,
    );
    for (const o of render(replaced).objects) await apply(typeOf(o), o);
    const cfg = secretFile(
      await client.get<K8sObject>(Secrets, 'blue-controlplane-lb', namespace()),
      'haproxy.cfg',
    );
    assert.match(cfg, /server cp-7 192\.168\.10\.17:6443/);
    assert.doesNotMatch(cfg, /cp-1/);
    const d = await client.get<K8sObject>(Deployments, 'blue-controlplane-lb', namespace());
    assert.ok((d.metadata as Any).generation >= 2, 'the new config digest is a new pod template');
  });
});
