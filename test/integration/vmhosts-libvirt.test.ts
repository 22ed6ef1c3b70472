// VirtualHostPool on real libvirt: a private libvirtd (Debian's) in a network
// namespace made for the VM host, real QEMU guests (KVM when a kernel boots
// on it, else TCG: detected), the VM host agent serving Redfish for them on
// loopback, read and powered by clients nobody here wrote (redfishtool,
// python3-sushy); then the pool controller and the host controller, in this
// process against the real API server, making a pool of 1 node × 3 VMs on it:
// domains with the IPPool's MACs, hosts available through the agent's
// Redfish, power kept, scale-down and deletion that leave nothing behind.
// Skips, saying why, only where libvirt cannot run.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { type BareMetalHost, BareMetalHosts } from '../../src/api/baremetal.ts';
import { type IPPool, IPPools, type VirtualHostPool, VirtualHostPools } from '../../src/api/virtualhosts.ts';
import { hostControllerRbac, setupBareMetalHosts } from '../../src/baremetal/hosts/controller.ts';
import type { HeldVm, VmDefinition } from '../../src/baremetal/virtualhosts/hypervisors/hypervisor.ts';
import { type AccelChoice, detectAccel } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/accel.ts';
import { VmHostAgent } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/agent.ts';
import { agentRoleBinding } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/agent-pod.ts';
import { agentPaths } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/agent-protocol.ts';
import {
  LibvirtHypervisors,
  publishAgent,
  publishedAgents,
} from '../../src/baremetal/virtualhosts/hypervisors/libvirt/hypervisors.ts';
import {
  libvirtdMissing,
  PrivateLibvirtd,
  vmHostNamespaces,
} from '../../src/baremetal/virtualhosts/hypervisors/libvirt/libvirtd.ts';
import { POOL_LABEL } from '../../src/baremetal/virtualhosts/objects.ts';
import { setupVirtualHostPools, virtualHostPoolRbac } from '../../src/baremetal/virtualhosts/setup.ts';
import { managerRules } from '../../src/manifests/rbac.ts';
import { bootKernel } from '../../src/qemu/accel.ts';
import { buildInitramfs } from '../../src/qemu/initramfs.ts';
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
  RoleBindings,
  Secrets,
  ServiceAccounts,
} from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig } from '../harness/cluster.ts';
import { ClusterRoleBindings, ClusterRoles, serviceAccountWithClusterRole } from '../harness/rbac.ts';

const RUN = randomBytes(3).toString('hex');
const NS = `nwtest-vmh-${RUN}`;
const HV_LABEL = `nwtest-libvirt-${RUN}`;
const ROLE = `nwtest-vmhosts-libvirt-${RUN}`;
const NODE = 'worker-000';
const DIR = `/tmp/nw-vmh-${RUN}`;
const VHP = VirtualHostPools.type;
const BMH = BareMetalHosts.type;

const skip = await libvirtdMissing();
if (skip) console.log(`# vmhosts-libvirt: skipped: ${skip}`);

const log = createLogger({ level: process.env.NODEWARDEN_LOG_LEVEL ?? 'silent' });
let libvirtd: PrivateLibvirtd;
let agent: VmHostAgent;
let accel: AccelChoice;

interface Run {
  code: number;
  out: string;
  err: string;
}
function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { env, timeout: 120_000 }, (error, out, err) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}
const virsh = (...args: string[]) => libvirtd.virsh.run(args);
const domains = async () => (await libvirtd.virsh.domains()).sort();
const domstate = async (id: string) => (await virsh('domstate', id)).trim();
const macsOf = async (id: string) =>
  [...(await virsh('domiflist', id)).matchAll(/([0-9a-f]{2}(?::[0-9a-f]{2}){5})/g)].map((m) => m[1]);

/** QEMU processes running guests of this libvirtd (their command lines name our folder). */
function qemuProcesses(): { pid: number; guest: string; rssKiB: number }[] {
  const out: { pid: number; guest: string; rssKiB: number }[] = [];
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (!cmd[0]?.includes('qemu-system') || !cmd.join(' ').includes(DIR)) continue;
      const guest = cmd[cmd.indexOf('-name') + 1]?.match(/guest=([^,]+)/)?.[1] ?? '?';
      const rss = Number(readFileSync(`/proc/${p}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
      out.push({ pid: Number(p), guest, rssKiB: rss });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

before(
  async () => {
    if (skip) return;
    libvirtd = await PrivateLibvirtd.start({ name: RUN, dir: DIR });
    const t = Date.now();
    accel = await detectAccel(libvirtd.virsh);
    console.log(`# guests run as type=${accel.type} (${Date.now() - t} ms to detect): ${accel.reason}`);
    agent = await VmHostAgent.start({ libvirtUri: libvirtd.uri, dir: `${DIR}/agent`, accel });
  },
  { timeout: 120_000 },
);

after(
  async () => {
    await agent?.close();
    await libvirtd?.stop();
  },
  { timeout: 120_000 },
);

describe('a private libvirtd for a VM host', { skip }, () => {
  it('runs in a network namespace of its own, reached from the host through its unix socket', async () => {
    assert.ok(vmHostNamespaces().includes(`nw-vmh-${RUN}`));
    const pid = Number(readFileSync(`${DIR}/libvirtd.pid`, 'utf8'));
    assert.notEqual(
      (await run('readlink', [`/proc/${pid}/ns/net`])).out,
      (await run('readlink', ['/proc/self/ns/net'])).out,
      'libvirtd is not in the host network namespace',
    );
    assert.match(await virsh('version'), /Running hypervisor: QEMU/);
  });

  it('takes KVM only where a kernel boots on it, and says which it took', () => {
    assert.ok(['kvm', 'qemu'].includes(accel.type));
    assert.ok(accel.reason.length > 0);
  });
});

const vmDef = (id: string, mac: string): VmDefinition => ({
  id,
  flavor: { name: 'tiny', cpus: 1, memoryMiB: 1024 },
  disks: [{ sizeGB: 1 }],
  nics: [{ name: 'enp1s0', mac, ip: '10.9.0.5', network: 'probe' }],
  credentials: { username: 'admin', password: `pw-${RUN}` },
});

describe('the VM host agent', { skip }, () => {
  const id = `direct-${RUN}`;
  let held: HeldVm;
  const hv = () => new LibvirtHypervisors({ [NODE]: JSON.stringify(agent.published) }).of(NODE);
  const port = () => new URL(agent.endpoint).port;
  const { REQUESTS_CA_BUNDLE: _r, CURL_CA_BUNDLE: _c, ...pythonEnv } = process.env;
  const redfishtool = (...args: string[]) =>
    run('redfishtool', [
      '-r',
      `127.0.0.1:${port()}`,
      '-S',
      'Always',
      '-u',
      'admin',
      '-p',
      `pw-${RUN}`,
      ...args,
    ]);
  const sushy = (action: string) =>
    run('/usr/bin/python3', ['-c', SUSHY, agent.endpoint, 'admin', `pw-${RUN}`, id, action], pythonEnv);

  it('defines a VM as a domain switched off, again as a no-op, and refuses another definition with 409', async () => {
    held = await hv().define(vmDef(id, '02:00:00:aa:00:01'));
    assert.equal(held.power, 'Off');
    assert.equal(held.redfishAddress, `redfish://127.0.0.1:${port()}/redfish/v1/Systems/${id}`);
    assert.deepEqual(await hv().define(vmDef(id, '02:00:00:aa:00:01')), held);
    await assert.rejects(hv().define(vmDef(id, '02:00:00:aa:00:02')), /409/);
    assert.ok((await domains()).includes(id));
    assert.equal(await domstate(id), 'shut off');
    assert.deepEqual(await macsOf(id), ['02:00:00:aa:00:01']);
    assert.deepEqual(
      (await hv().list()).map((v) => v.id),
      [id],
    );
  });

  it('answers its console only with its token, and its probe only while libvirtd answers', async () => {
    const ca = agent.caPem;
    const get = (path: string, token?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpsRequest(new URL(path, agent.endpoint), {
          ca,
          headers: token ? { authorization: `Bearer ${token}` } : {},
        });
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    assert.equal(await get(agentPaths.vms), 401);
    assert.equal(await get(agentPaths.vms, 'not-the-token'), 401);
    assert.equal(await get(agentPaths.vms, agent.token), 200);
    assert.equal(await get(agentPaths.healthz), 200);
  });

  it("serves Redfish that Debian's redfishtool reads and powers", async () => {
    const list = await redfishtool('Systems', 'list');
    assert.equal(list.code, 0, list.err);
    assert.deepEqual(
      JSON.parse(list.out).Members.map((m: { Id: string }) => m.Id),
      [id],
    );
    const got = await redfishtool('-A', 'Session', 'Systems', '-I', id, 'get');
    assert.equal(got.code, 0, got.err);
    const system = JSON.parse(got.out);
    assert.deepEqual([system.Id, system.PowerState, system.ProcessorSummary.Count], [id, 'Off', 1]);
    assert.equal((await redfishtool('Systems', '-I', id, 'reset', 'On')).code, 0);
    assert.equal(await domstate(id), 'running');
    assert.equal((await redfishtool('Systems', '-I', id, 'reset', 'ForceRestart')).code, 0);
    assert.equal(await domstate(id), 'running');
    assert.equal((await redfishtool('Systems', '-I', id, 'reset', 'ForceOff')).code, 0);
    assert.equal(await domstate(id), 'shut off');
    const wrong = await run('redfishtool', [
      '-r',
      `127.0.0.1:${port()}`,
      '-S',
      'Always',
      '-u',
      'admin',
      '-p',
      'wrong',
      'Systems',
      'list',
    ]);
    assert.match(wrong.err, /401/);
  });

  it("serves Redfish that python3-sushy, Ironic's library, reads and powers", async () => {
    const r = await sushy('read');
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(JSON.parse(r.out), {
      power: 'Off',
      cpus: 1,
      memoryGiB: 1,
      macs: ['02:00:00:aa:00:01'],
      resets: ['ForceOff', 'ForceRestart', 'GracefulRestart', 'GracefulShutdown', 'On'],
    });
    assert.equal((await sushy('on')).code, 0);
    assert.equal(await domstate(id), 'running');
    assert.equal((await sushy('off')).code, 0);
    assert.equal(await domstate(id), 'shut off');
  });

  it('sets a one-time boot override to the CD, which the next start uses and forgets', async () => {
    const patch = await redfishtool('Systems', '-I', id, 'setBootOverride', 'Once', 'Cd');
    assert.equal(patch.code, 0, patch.err);
    assert.match(await virsh('dumpxml', '--inactive', id), /<boot dev='cdrom'\/>\s*<boot dev='hd'\/>/);
    assert.equal((await redfishtool('Systems', '-I', id, 'reset', 'On')).code, 0);
    assert.match(
      await virsh('dumpxml', id),
      /<boot dev='cdrom'\/>\s*<boot dev='hd'\/>/,
      'it started from the CD',
    );
    assert.match(
      await virsh('dumpxml', '--inactive', id),
      /<boot dev='hd'\/>\s*<boot dev='cdrom'\/>/,
      'and forgot it',
    );
    const got = JSON.parse((await redfishtool('Systems', '-I', id, 'get')).out);
    assert.deepEqual(
      [got.Boot.BootSourceOverrideTarget, got.Boot.BootSourceOverrideEnabled],
      ['None', 'Disabled'],
    );
    await virsh('destroy', id);
  });

  it('removes the VM: domain, volumes and its network', async () => {
    await hv().remove(id);
    await hv().remove(id);
    assert.ok(!(await domains()).includes(id));
    assert.deepEqual(await libvirtd.virsh.volumes('nodewarden'), []);
    assert.ok(!(await libvirtd.virsh.networks()).includes('nw-probe'));
  });
});

// ------------------------------------------------------------- a live ISO

const ISOLINUX = '/usr/lib/ISOLINUX/isolinux.bin';
const LDLINUX = '/usr/lib/syslinux/modules/bios/ldlinux.c32';
const MARKER = `NODEWARDEN-LIVE-ISO-${RUN}`;
/** Why no live ISO can be made here, or undefined. */
const isoMissing = (): string | undefined =>
  !bootKernel()
    ? 'no kernel under /boot (Debian: linux-image-cloud-amd64)'
    : !existsSync(ISOLINUX) || !existsSync(LDLINUX)
      ? 'no isolinux (Debian: isolinux, syslinux-common)'
      : !existsSync('/usr/bin/genisoimage')
        ? 'no genisoimage'
        : undefined;

/** A BIOS-bootable ISO: isolinux, Debian's kernel and an initramfs that prints MARKER on the serial console and stays up. */
async function buildLiveIso(dir: string): Promise<string> {
  const root = `${dir}/iso`;
  mkdirSync(`${root}/isolinux`, { recursive: true });
  mkdirSync(`${root}/live`, { recursive: true });
  writeFileSync(`${root}/isolinux/isolinux.bin`, readFileSync(ISOLINUX));
  writeFileSync(`${root}/isolinux/ldlinux.c32`, readFileSync(LDLINUX));
  writeFileSync(
    `${root}/isolinux/isolinux.cfg`,
    'SERIAL 0 115200\nDEFAULT live\nPROMPT 0\nTIMEOUT 0\nLABEL live\n  KERNEL /live/vmlinuz\n  APPEND initrd=/live/initrd.gz console=ttyS0 panic=-1 quiet\n',
  );
  writeFileSync(`${root}/live/vmlinuz`, readFileSync(bootKernel()!));
  await buildInitramfs(`${root}/live/initrd.gz`, `echo ${MARKER}\nwhile true; do sleep 3600; done\n`);
  const iso = `${dir}/live.iso`;
  const made = await run('genisoimage', [
    ...['-quiet', '-o', iso, '-b', 'isolinux/isolinux.bin', '-c', 'isolinux/boot.cat'],
    ...['-no-emul-boot', '-boot-load-size', '4', '-boot-info-table', '-J', '-R', '-V', 'NWLIVE', root],
  ]);
  assert.equal(made.code, 0, made.err);
  return iso;
}

/** Serves one file over HTTP on loopback, as an image server would. */
async function serveFile(file: string): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': statSync(file).size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/live.iso`, server };
}

// ------------------------------------------------------- the pool on libvirt

type Obj = K8sObject & { data?: Record<string, string> };
const client = KubeClient.fromKubeConfig(testKubeConfig());
const stop = new AbortController();
let manager: Manager;
let running: Promise<void>;
const POOL = 'lv';
/** VMs in the pool: 3, or NWTEST_LIBVIRT_VMS for a figure at another size. */
const N = Number(process.env.NWTEST_LIBVIRT_VMS ?? 3);

function poolObject(count: number): VirtualHostPool {
  return {
    apiVersion: VirtualHostPools.apiVersion,
    kind: 'VirtualHostPool',
    metadata: { name: POOL, namespace: NS },
    spec: {
      nodeSelector: { matchLabels: { [HV_LABEL]: 'true' } },
      networks: [oamNetwork({ dnsServers: ['192.168.0.2'] })],
      nodes: [
        {
          name: 'worker',
          count,
          cpus: 1,
          memoryMiB: 256,
          diskGB: 2,
          networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
        },
      ],
      bmcCredentials: { username: 'admin', password: `vm-${RUN}` },
    },
  } as VirtualHostPool;
}
const hostsOf = async () =>
  (await client.list<BareMetalHost>(BMH, { namespace: NS, labelSelector: `${POOL_LABEL}=${POOL}` })).items;
const vmAllocations = async () => {
  const p = await client.get<IPPool>(IPPools.type, `${POOL}-oam`, NS).catch(() => undefined);
  return (p?.spec.allocations ?? []).filter((a) => a.owner.startsWith('vm/'));
};
const poolDomains = async () => (await domains()).filter((d) => d.startsWith(`${NS}-${POOL}-`));
const poolVolumes = async () =>
  (await libvirtd.virsh.volumes('nodewarden')).filter((v) => v.startsWith(`${NS}-${POOL}-`));

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
  }
}

async function labelNode(on: boolean): Promise<void> {
  await client.patch(
    Nodes,
    NODE,
    undefined,
    { metadata: { labels: { [HV_LABEL]: on ? 'true' : null } } },
    { type: 'merge' },
  );
}

describe(`a VirtualHostPool of 1 node × ${N} VMs on libvirt`, { skip }, () => {
  let started = 0;
  before(
    async () => {
      await installCrds();
      await client.create(Namespaces, { metadata: { name: NS } });
      await publishAgent(client, NODE, agent.published);
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
      setupVirtualHostPools(manager, { hypervisors: publishedAgents(client) });
      // A short resync: a domain switched off behind our back is found within it.
      setupBareMetalHosts(manager, { resyncMs: 5_000 });
      running = manager.start(stop.signal);
      await eventually('manager running', async () => (manager.isLeader() ? true : undefined), 60_000);
      await labelNode(true);
    },
    { timeout: 180_000 },
  );

  after(
    async () => {
      await labelNode(false).catch(() => {});
      await client.delete(VHP, POOL, NS, { ignoreNotFound: true }).catch(() => {});
      await eventually(
        'pool released',
        async () => ((await client.list(VHP, { namespace: NS })).items.length === 0 ? true : undefined),
        120_000,
      ).catch(() => {});
      stop.abort();
      await running;
      await publishAgent(client, NODE, undefined).catch(() => {});
      await client.delete(Namespaces, NS, undefined, { ignoreNotFound: true });
      await client.delete(ClusterRoleBindings, ROLE, undefined, { ignoreNotFound: true });
      await client.delete(ClusterRoles, ROLE, undefined, { ignoreNotFound: true });
    },
    { timeout: 180_000 },
  );

  it(`defines ${N} domains, each with the MAC the IPPool gave it`, async () => {
    started = Date.now();
    await client.create(VHP, poolObject(N));
    const ds = await eventually(
      `${N} domains`,
      async () => ((await poolDomains()).length === N ? poolDomains() : undefined),
      120_000,
    );
    const allocations = await eventually(`${N} VM addresses`, async () => {
      const a = await vmAllocations();
      return a.length === N ? a : undefined;
    });
    const macs = (await Promise.all(ds.map(macsOf))).flat().sort();
    assert.deepEqual(macs, allocations.map((a) => a.mac).sort());
    // On libvirt the pool's DaemonSet runs the agent, with the right to publish itself and no other.
    const set = await client.get<
      Obj & { spec: { template: { spec: { containers: { args: string[] }[] } } } }
    >(DaemonSets, `${POOL}-agent`, NS);
    assert.deepEqual(set.spec.template.spec.containers[0]!.args.slice(0, 2), ['vm-host', 'agent']);
    await client.get(ServiceAccounts, `${POOL}-vm-host-agent`, NS);
    await client.get(RoleBindings, agentRoleBinding(NS, POOL), 'kube-system');
    console.log(`# virsh list --all:\n${await virsh('list', '--all')}`);
  });

  it("brings their BareMetalHosts to available through the agent's Redfish", async () => {
    const hosts = await eventually(
      `${N} hosts available`,
      async () => {
        const hs = await hostsOf();
        return hs.length === N && hs.every((h) => h.status?.provisioning?.state === 'available')
          ? hs
          : undefined;
      },
      300_000,
      1_000,
    );
    console.log(
      `# ${N} VMs available ${((Date.now() - started) / 1000).toFixed(1)} s after the pool was created`,
    );
    for (const h of hosts) {
      assert.match(
        h.spec.bmc?.address ?? '',
        new RegExp(`^redfish://127\\.0\\.0\\.1:${new URL(agent.endpoint).port}/redfish/v1/Systems/`),
      );
      assert.equal(h.status?.hardware?.cpu?.count, 1);
    }
  });

  it('runs every domain, as online: true asks', async () => {
    await eventually(
      `${N} domains running`,
      async () => {
        const ds = await poolDomains();
        const states = await Promise.all(ds.map(domstate));
        return states.length === N && states.every((s) => s === 'running') ? true : undefined;
      },
      120_000,
      1_000,
    );
    const q = qemuProcesses().filter((p) => p.guest.startsWith(`${NS}-${POOL}-`));
    const mean = q.reduce((n, p) => n + p.rssKiB, 0) / Math.max(q.length, 1) / 1024;
    console.log(
      `# memory per VM (QEMU resident, flavor 256 MiB, ${accel.type}): ${mean.toFixed(0)} MiB over ${q.length} VMs`,
    );
  });

  it('powers a domain destroyed behind our back on again', async () => {
    const [victim] = await poolDomains();
    await virsh('destroy', victim!);
    assert.equal(await domstate(victim!), 'shut off');
    await eventually(
      'the domain running again',
      async () => ((await domstate(victim!)) === 'running' ? true : undefined),
      90_000,
      1_000,
    );
  });

  it('boots a live ISO provisioned by virtual media once its checksum holds: its marker on the VM serial console', {
    skip: isoMissing(),
  }, async () => {
    const iso = await buildLiveIso(DIR);
    const { url, server } = await serveFile(iso);
    try {
      const target = (await hostsOf()).map((h) => h.metadata.name!).sort()[2]!;
      const id = `${NS}-${target}`;
      // A checksum that is not the ISO's: a provisioning error, and nothing in the drive.
      const digest = createHash('sha256').update(readFileSync(iso)).digest('hex');
      const wrong = createHash('sha256').update('another ISO').digest('hex');
      const image = (checksum: string) => ({ spec: { image: { url, format: 'live-iso', checksum } } });
      await client.patch(BMH, target, NS, image(wrong), { type: 'merge' });
      const refused = await eventually(
        'a checksum mismatch',
        async () => {
          const h = await client.get<BareMetalHost>(BMH, target, NS);
          return h.status?.errorType ? h : undefined;
        },
        120_000,
        1_000,
      );
      assert.equal(refused.status?.errorType, 'provisioning error');
      assert.match(refused.status?.errorMessage ?? '', new RegExp(`sha256 is ${digest}`));
      assert.doesNotMatch(await virsh('dumpxml', id), /-cd\.iso'/);
      const t = Date.now();
      await client.patch(BMH, target, NS, image(digest), { type: 'merge' });
      let seen: BareMetalHost | undefined;
      await eventually(
        'provisioned',
        async () => {
          seen = await client.get<BareMetalHost>(BMH, target, NS);
          return seen.status?.provisioning?.state === 'provisioned' ? seen : undefined;
        },
        120_000,
        1_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; the host: ${JSON.stringify(seen?.status)}`);
      });
      // The running domain's CD drive alone in the message: the whole domain would bury it.
      const drive = /<disk type='file' device='cdrom'>[\s\S]*?<\/disk>/.exec(await virsh('dumpxml', id))?.[0];
      assert.ok(new RegExp(`<source file='[^']*${id}-cd\\.iso'`).test(drive ?? ''), `the CD drive: ${drive}`);
      const log = `${DIR}/agent/consoles/${id}.log`;
      await eventually(
        'the marker on the serial console',
        async () => (existsSync(log) && readFileSync(log, 'utf8').includes(MARKER) ? true : undefined),
        180_000,
        1_000,
      );
      console.log(
        `# live ISO: provisioned to marker on the serial console in ${((Date.now() - t) / 1000).toFixed(1)} s`,
      );
    } finally {
      server.close();
    }
  });

  it(`undefines ${N - 1} domains on scale ${N} → 1, deleting their volumes and releasing their addresses`, async () => {
    await client.patch(VHP, POOL, NS, { spec: { nodes: poolObject(1).spec.nodes } }, { type: 'merge' });
    await eventually(
      '1 domain, 1 volume, 1 address, 1 host',
      async () => {
        const [d, v, a, h] = await Promise.all([poolDomains(), poolVolumes(), vmAllocations(), hostsOf()]);
        return d.length === 1 && v.length === 1 && a.length === 1 && h.length === 1 ? true : undefined;
      },
      180_000,
      1_000,
    );
  });

  it('leaves no domain, volume, Secret, host or address once the pool is deleted', async () => {
    await client.delete(VHP, POOL, NS);
    await eventually(
      'the pool gone',
      async () => ((await client.list(VHP, { namespace: NS })).items.length === 0 ? true : undefined),
      180_000,
      1_000,
    );
    assert.deepEqual(await poolDomains(), []);
    assert.deepEqual(await poolVolumes(), []);
    assert.deepEqual(await hostsOf(), []);
    const secrets = (await client.list(Secrets, { namespace: NS, labelSelector: POOL_LABEL })).items;
    assert.deepEqual(secrets, []);
    assert.deepEqual(await vmAllocations(), []);
    await assert.rejects(client.get(RoleBindings, agentRoleBinding(NS, POOL), 'kube-system'), isNotFound);
    assert.deepEqual(
      await libvirtd.virsh.networks(),
      [],
      'the bridge of the last network went with its last VM',
    );
  });
});

describe('the VM host torn down', { skip }, () => {
  it('leaves no domain, process, bridge, namespace or folder', async () => {
    await agent.close();
    await libvirtd.stop();
    assert.ok(
      !vmHostNamespaces().includes(`nw-vmh-${RUN}`),
      'the namespace is gone, and its bridges with it',
    );
    assert.deepEqual(qemuProcesses(), []);
    assert.ok(!existsSync(DIR), 'the folder is gone');
    for (const f of ['libvirtd', 'virtlogd']) {
      const left = (await run('pgrep', ['-f', `${f} .*${DIR}`])).out.trim();
      assert.equal(left, '', `${f} still runs`);
    }
  });
});

/** Ironic's Redfish library against one System: `read` prints what it sees, `off` / `on` reset it. */
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

import { oamNetwork } from '../harness/pools.ts';
