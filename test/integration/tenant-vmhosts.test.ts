// A TenantCluster on real VM hosts, its services on real nodes: one local
// cluster with real nodes (kubelet, containerd, runc) and a VM host agent with
// a libvirtd of its own for a simulated node (`cluster up --vm-hosts`); a
// VirtualHostPool of 2 VMs there, real QEMU domains, whose BareMetalHosts the
// real host controller brings to available through the agent's Redfish; a
// TenantCluster holding both as its control plane is Ready, its HAProxy and
// jump host (the images `make service-images` builds) running on the real
// nodes. Over ssh to the jump host, `host list` lists the two VMs and `host
// reboot` resets one through the agent's Redfish (redfishtool in the pod, the
// agent's port published at the cluster's gateway: the operator runs out of
// cluster, so its loopback is given with --jumphost-loopback-at), as libvirt's
// reboot event shows. Deleting the cluster and the pool leaves no domain or
// volume.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  HAPROXY_IMAGE_REPOSITORY,
  NODEWARDEN_VERSION,
  serviceImageName,
} from '../../src/api/service-images.ts';
import { VirtualHostPools } from '../../src/api/virtualhosts.ts';
import { libvirtdMissing } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/libvirtd.ts';
import { Virsh } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/virsh.ts';
import { POOL_LABEL } from '../../src/baremetal/virtualhosts/objects.ts';
import { infraDir } from '../../src/cluster/control-plane.ts';
import { agentOf, vmHostsAddon } from '../../src/cluster/infra/vm-hosts/addon.ts';
import { stateDir } from '../../src/cluster/local-cluster.ts';
import { CLUSTER_GATEWAY } from '../../src/cluster/real-nodes/layout.ts';
import { controlPlaneBinaries, REPO_ROOT } from '../../src/cluster/toolchain.ts';
import { eventually } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';
import { oamNetwork } from '../harness/pools.ts';
import { clusterCommand, kubectl, kubectlApply, realNodesSkipReason } from '../harness/real-nodes.ts';
import { readyServicePods, servicesRolledOut } from '../harness/tenant-services.ts';

const run = promisify(execFile);
const skip = realNodesSkipReason() || (await libvirtdMissing());
if (skip) console.log(`# tenant cluster on VM hosts: skipped: ${skip}`);

const NAME = 'nwvmtenant';
const NETNS = `nw-${NAME}`;
/** The simulated node the VM host agent is started for: `--nodes 1` names it. */
const HV_NODE = 'worker-000';
const HV_LABEL = 'nodewarden.dev/vm-host';
const POOL = 'vms';
const TC = 'vmedge';
const IFACE = 'enp1s0-oam';
const HAPROXY_IMAGE = serviceImageName(HAPROXY_IMAGE_REPOSITORY, NODEWARDEN_VERSION);
const REAL = { 'nodewarden.dev/real': 'true' };
const API_NODE_PORT = 31444;
const SSH_NODE_PORT = 32223;
const kubeconfig = () => join(stateDir(), 'clusters', NAME, 'kubeconfig.yaml');
const k = (...args: string[]) => kubectl(kubeconfig(), ...args);
const apply = (obj: object) => kubectlApply(kubeconfig(), obj);
const work = mkdtempSync(join(tmpdir(), 'nw-tenant-vmhosts-'));
after(() => rmSync(work, { recursive: true, force: true }));
// biome-ignore lint/suspicious/noExplicitAny: objects read field by field as kubectl prints them
type Any = any;
const json = async (...args: string[]): Promise<Any> => JSON.parse(await k(...args, '-o', 'json'));
const condition = (o: Any, type: string) => o.status?.conditions?.find((c: Any) => c.type === type);

/** The node's libvirtd, through the socket in the agent's state folder (it lives in a namespace of its own). */
const agent = () => agentOf({ dir: infraDir(NAME, vmHostsAddon.name) }, HV_NODE);
const virsh = () => new Virsh(`qemu:///system?socket=${agent().state}/libvirtd/sock/libvirt-sock`);
const poolDomains = async () =>
  (await virsh().domains()).filter((d) => d.startsWith(`default-${POOL}-`)).sort();
const poolVolumes = async () =>
  (await virsh().volumes('nodewarden')).filter((v) => v.startsWith(`default-${POOL}-`));
const poolHosts = async () =>
  ((await json('get', 'baremetalhosts', '-n', 'default', '-l', `${POOL_LABEL}=${POOL}`)).items as Any[]).sort(
    (a, b) => (a.metadata.name < b.metadata.name ? -1 : 1),
  );

function poolObject() {
  return {
    apiVersion: VirtualHostPools.apiVersion,
    kind: 'VirtualHostPool',
    metadata: { name: POOL, namespace: 'default' },
    spec: {
      nodeSelector: { matchLabels: { [HV_LABEL]: 'true' } },
      networks: [oamNetwork({ dnsServers: ['192.168.0.2'] })],
      nodes: [
        {
          name: 'cp',
          count: 2,
          cpus: 1,
          memoryMiB: 256,
          diskGB: 1,
          networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
        },
      ],
      bmcCredentials: { username: 'admin', password: 'vm-tenant' },
    },
  };
}

function tenantCluster(publicKey: string) {
  return {
    apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
    kind: 'TenantCluster',
    metadata: { name: TC, namespace: 'default' },
    spec: {
      nodes: { ControlPlane: { count: { active: 2 } } },
      services: {
        controlPlaneLoadBalancer: {
          nodePort: API_NODE_PORT,
          nodeInterfaceId: IFACE,
          image: HAPROXY_IMAGE,
          placement: { nodeSelector: REAL },
        },
        jumpHost: {
          nodePort: SSH_NODE_PORT,
          nodeInterfaceId: IFACE,
          nodeSSHPrivateKeys: `${TC}-node-keys`,
          sshAuthorizedKeys: [publicKey],
          placement: { nodeSelector: REAL },
        },
      },
    },
  };
}

function keyPair(name: string): { key: string; pub: string } {
  const key = join(work, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', key]);
  return { key, pub: readFileSync(`${key}.pub`, 'utf8').trim() };
}

describe('a tenant cluster on VM hosts, its services on real nodes', { skip, timeout: 900_000 }, () => {
  let op: OperatorProcess | undefined;
  const user = keyPair('user');
  let nodeIp = '';
  const started = Date.now();

  /** `what` once `probe` answers, or an error with the operator's warnings and the cluster's state. */
  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, ms: number) =>
    eventually(what, probe, ms, 1000).catch(async (err: Error) => {
      const state = await k(
        'get',
        'tenantcluster,virtualhostpool,baremetalhost,pods,events',
        '-A',
        '-o',
        'wide',
      ).catch((e: Error) => e.message);
      const said = (op?.logs ?? [])
        .filter((l) => ['warn', 'error', 'fatal'].includes(String(l.level)))
        .slice(-20)
        .map((l) => JSON.stringify(l).slice(0, 600));
      throw new Error(`${err.message}\n${said.join('\n')}\n${state}`);
    });

  before(async () => {
    execFileSync('bash', [join(REPO_ROOT, 'hack/build-service-images.sh'), work], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await clusterCommand(
      'up',
      ...['--name', NAME, '--nodes', '1', '--real-nodes', '2', '--vm-hosts', HV_NODE, '--timeout', '3m'],
    );
    console.log(
      `# cluster up with real nodes and a VM host: ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    for (const image of ['nodewarden-jumphost.tar', 'nodewarden-haproxy.tar'])
      await clusterCommand('load-image', '--name', NAME, join(work, image));
    const { kubectl: kubectlBin } = await controlPlaneBinaries({ quiet: true });
    await run(join(REPO_ROOT, 'hack/install-crds.sh'), [kubectlBin, 'install'], {
      cwd: REPO_ROOT,
      env: { ...process.env, KUBECONFIG: kubeconfig() },
    });
    nodeIp = (
      await k(
        ...['get', 'nodes', '-l', 'nodewarden.dev/real=true'],
        ...['-o', 'jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}'],
      )
    ).trim();
    assert.match(nodeIp, /^\d+\.\d+\.\d+\.\d+$/);
    op = startOperator(
      [
        ...['--controllers', 'virtualhostpool,baremetalhost,tenantcluster'],
        ...['--vm-hypervisors', 'libvirt', '--baremetal-resync', '30s'],
        // The agent's port on the host's loopback is published at the cluster's gateway.
        ...['--jumphost-loopback-at', CLUSTER_GATEWAY],
      ],
      { kubeconfig: kubeconfig() },
    );
  });

  after(async () => {
    await op?.stop();
    if (existsSync(kubeconfig())) await clusterCommand('delete', '--name', NAME).catch(() => {});
  });

  it("defines 2 domains on the node's libvirt, their hosts available through the agent's Redfish", async () => {
    const t = Date.now();
    await k('label', 'node', HV_NODE, `${HV_LABEL}=true`);
    await apply(poolObject());
    const hosts = await waitFor(
      '2 hosts available',
      async () => {
        const hs = await poolHosts();
        return hs.length === 2 && hs.every((h) => h.status?.provisioning?.state === 'available')
          ? hs
          : undefined;
      },
      240_000,
    );
    console.log(`# 2 VMs available ${((Date.now() - t) / 1000).toFixed(1)} s after the pool was created`);
    assert.deepEqual(
      await poolDomains(),
      hosts.map((h) => `default-${h.metadata.name}`),
    );
    for (const h of hosts)
      assert.match(h.spec.bmc.address, /^redfish:\/\/127\.0\.0\.1:\d+\/redfish\/v1\/Systems\//);
  });

  it('holds both as the control plane of a TenantCluster that is Ready, its services on the real nodes', async () => {
    const t = Date.now();
    await apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${TC}-node-keys`, namespace: 'default' },
      stringData: { id_ed25519: readFileSync(user.key, 'utf8') },
    });
    await apply(tenantCluster(user.pub));
    // Ready counts the hosts; ServicesRunning, the service pods Ready on their nodes.
    const tc = await waitFor(
      `${TC} Ready, its services running`,
      async () => {
        const o = await json('get', 'tenantcluster', TC);
        const at = (type: string) => {
          const c = condition(o, type);
          return c?.status === 'True' && c.observedGeneration === o.metadata.generation;
        };
        // Running, not RollingOut: the jump host rolls once more as the hosts it holds settle.
        const settled = condition(o, 'ServicesRunning')?.reason === 'Running';
        return at('Ready') && at('ServicesRunning') && settled ? o : undefined;
      },
      180_000,
    );
    console.log(
      `# tenant cluster Ready, services running ${((Date.now() - t) / 1000).toFixed(1)} s after it was created`,
    );
    const held = (tc.status.hosts.ControlPlane as Any[]).map((h) => h.name).sort();
    assert.deepEqual(
      held,
      (await poolHosts()).map((h) => h.metadata.name),
    );
    assert.match(
      condition(tc, 'ServicesRunning').message,
      /^controlplane-lb on real-\d+, jumphost on real-\d+$/,
    );
    await servicesRolledOut(json);
    const ready = await readyServicePods(json);
    assert.deepEqual(ready.map((p) => p.metadata.labels['app.kubernetes.io/component']).sort(), [
      'controlplane-lb',
      'jumphost',
    ]);
    for (const p of ready) assert.match(p.spec.nodeName, /^real-\d+$/);
  });

  /** A command on the jump host, over ssh to its node port from the cluster's network namespace. */
  const ssh = (command: string) =>
    run(
      'ip',
      [
        ...['netns', 'exec', NETNS, 'ssh', '-i', user.key, '-p', String(SSH_NODE_PORT)],
        ...['-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null'],
        ...['-o', 'ConnectTimeout=10', `root@${nodeIp}`, command],
      ],
      { timeout: 60_000 },
    );

  it('lists the two VMs over ssh to the jump host, each with its BMC where the pod reaches the agent', async () => {
    // Rolled out, one pod each: a session is never cut by a pod being replaced.
    await servicesRolledOut(json);
    const { stdout } = await eventually(
      'host list over ssh',
      () => ssh('host list').catch(() => undefined),
      60_000,
      2000,
    );
    const held = (await json('get', 'tenantcluster', TC)).status.hosts.ControlPlane as Any[];
    assert.equal(held.length, 2);
    for (const h of held) {
      const address = (await poolHosts()).find((x) => x.metadata.name === h.name).spec.bmc.address as string;
      // The agent's port on the host's loopback, at the cluster's gateway.
      const port = new URL(address.replace(/^redfish:/, 'https:')).port;
      const line = `${h.name}\\s+${h.ip}\\s+redfish://${CLUSTER_GATEWAY}:${port}`.replaceAll('.', '\\.');
      assert.match(stdout, new RegExp(`^${line}$`, 'm'));
    }
  });

  it('reboots a VM through its BMC with `host reboot` on the jump host: libvirt reports the domain reset', async () => {
    const [target] = await poolHosts();
    const domain = `default-${target.metadata.name}`;
    assert.equal((await virsh().run(['domstate', domain])).trim(), 'running');
    // libvirt's reboot event is QEMU's reset of the guest: what a Redfish GracefulRestart does to a running domain.
    const event = run(
      'virsh',
      ['-c', virsh().uri, 'event', '--domain', domain, '--event', 'reboot', '--timeout', '100'],
      { timeout: 120_000 },
    ).then(
      (r) => r.stdout,
      (err: { stdout?: string; message: string }) => `${err.stdout ?? ''}${err.message}`,
    );
    await new Promise((r) => setTimeout(r, 1000));
    // Only a connection that did not open is tried again: then the command never ran.
    const reboot = async (): Promise<{ stdout: string }> => {
      for (let tries = 1; ; tries++) {
        try {
          return await ssh(`host reboot ${target.metadata.name}`);
        } catch (err) {
          if (tries >= 5 || !/connect to host/.test((err as { stderr?: string }).stderr ?? '')) {
            // What the pods and the jump host said, for a failure seen only in CI's log.
            const pods = await k('get', 'pods,endpointslices', '-o', 'wide').catch((e: Error) => e.message);
            const logs = await k('logs', '-l', 'app.kubernetes.io/component=jumphost', '--tail=20').catch(
              (e: Error) => e.message,
            );
            throw new Error(`${(err as Error).message}\n${pods}\n${logs}`);
          }
          console.log(`# ssh to the jump host did not connect (try ${tries}); again in 2 s`);
          await new Promise((r) => setTimeout(r, 2000));
        }
      }
    };
    const { stdout } = await reboot();
    assert.match(stdout, new RegExp(`restarting ${target.metadata.name} through ${CLUSTER_GATEWAY}:\\d+`));
    assert.match(await event, new RegExp(`event 'reboot' for domain '?${domain}'?`));
    assert.equal((await virsh().run(['domstate', domain])).trim(), 'running');
  });

  it('leaves no domain or volume once the tenant cluster and the pool are deleted', async () => {
    await k('delete', 'tenantcluster', TC, '--wait=false');
    await waitFor(
      `${TC} gone`,
      async () => ((await json('get', 'tenantclusters')).items.length === 0 ? true : undefined),
      60_000,
    );
    await k('delete', 'virtualhostpool', POOL, '--wait=false');
    await waitFor(
      'the pool gone',
      async () => ((await json('get', 'virtualhostpools')).items.length === 0 ? true : undefined),
      120_000,
    );
    assert.deepEqual(await poolDomains(), []);
    assert.deepEqual(await poolVolumes(), []);
    assert.deepEqual(await poolHosts(), []);
    console.log(`# whole test ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
});
