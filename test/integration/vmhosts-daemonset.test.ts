// The VM host agent as users run it: the VirtualHostPool's DaemonSet runs
// `nodewarden vm-host agent` from the operator's image (built here, with
// Debian's virsh) in a pod on a real node of a local cluster, against a
// libvirtd started for that node inside the node's network and mount
// namespaces (the file system where the pod's hostPaths are, as a node's own
// libvirtd has it) and reached through its socket folder (a hostPath, per
// node with $(NODE_NAME) in --vm-host-libvirt-dir, as the local cluster's
// nodes share one file system). The operator, installed by Helm on the same
// node, defines the pool's VMs through that in-pod agent and registers them
// as BareMetalHosts over its Redfish at the node's address: they reach
// `available`, and a host put online runs its domain. A second pool's agent
// on the node stands by while the first holds port 8000, and takes over when
// the first pool goes.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  AGENTS_NAMESPACE,
  AGENTS_SECRET,
} from '../../src/baremetal/virtualhosts/hypervisors/libvirt/agent-protocol.ts';
import {
  libvirtdMissing,
  PrivateLibvirtd,
} from '../../src/baremetal/virtualhosts/hypervisors/libvirt/libvirtd.ts';
import { POOL_LABEL } from '../../src/baremetal/virtualhosts/objects.ts';
import { stateDir } from '../../src/cluster/local-cluster.ts';
import { REPO_ROOT } from '../../src/cluster/toolchain.ts';
import { eventually } from '../harness/cluster.ts';
import { clusterCommand, kubectl, kubectlApply, realNodesSkipReason } from '../harness/real-nodes.ts';

const run = promisify(execFile);
const skip = realNodesSkipReason() || (await libvirtdMissing());
if (skip) console.log(`# vmhosts-daemonset: skipped: ${skip}`);

const NAME = 'nwvmds';
const NODE = 'real-000';
const NS = 'nodewarden-system';
const POOL = 'inpod';
const VMS = 2;
const kubeconfig = () => join(stateDir(), 'clusters', NAME, 'kubeconfig.yaml');
const k = (...args: string[]) => kubectl(kubeconfig(), ...args);
const work = mkdtempSync(join(tmpdir(), 'nw-vmds-'));
/** Each node's libvirtd folder; its sockets in sock/ (a short path: a socket's must fit 108 bytes). */
const LIBVIRT_ROOT = join(work, 'lv');
/** The node's holder: its network and mount namespaces are the node's. */
const holderPid = () =>
  Number(readFileSync(join(stateDir(), 'clusters', NAME, 'real-nodes', NODE, 'pids', 'holder.pid'), 'utf8'));

const hostsOf = async (pool: string) =>
  JSON.parse(await k('get', 'baremetalhosts', '-n', 'default', '-l', `${POOL_LABEL}=${pool}`, '-o', 'json'))
    .items as Host[];

/** What the node's agent published: its endpoint and token. */
const published = async () => {
  const data = JSON.parse(
    await k('get', 'secret', '-n', AGENTS_NAMESPACE, AGENTS_SECRET, '-o', 'jsonpath={.data}'),
  ) as Record<string, string>;
  return JSON.parse(Buffer.from(data[NODE] ?? 'e30=', 'base64').toString()) as {
    endpoint?: string;
    token?: string;
  };
};

const agentPodOf = async (pool: string) =>
  (JSON.parse(await k('get', 'pods', '-n', 'default', '-o', 'json')).items as Pod[]).find((p) =>
    p.metadata.name.startsWith(`${pool}-agent-`),
  );

/** A pool of VMS VMs on the real node; `third` picks its network's third octet block (one per pool). */
const poolObject = (name = POOL, third = 0) => ({
  apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
  kind: 'VirtualHostPool',
  metadata: { name, namespace: 'default' },
  spec: {
    nodeSelector: { matchLabels: { 'kubernetes.io/hostname': NODE } },
    networks: [
      {
        name: `oam-${name}`,
        subnet: `192.168.${third}.0/20`,
        staticAllocationStart: `192.168.${third + 2}.10`,
        staticAllocationStop: `192.168.${third + 2}.40`,
        dhcpAllocationStart: `192.168.${third + 4}.0`,
        dhcpAllocationStop: `192.168.${third + 7}.255`,
        instanceSubnetBitStep: 4,
        dnsServers: ['192.168.0.2'],
      },
    ],
    nodes: [
      {
        name: 'worker',
        count: VMS,
        cpus: 1,
        memoryMiB: 256,
        diskGB: 1,
        networkInterfaces: [{ name: 'enp1s0', network: `oam-${name}` }],
      },
    ],
    bmcCredentials: { username: 'admin', password: 'in-pod' },
  },
});

interface Pod {
  metadata: { name: string };
  spec: { nodeName?: string; containers: { image: string; args?: string[] }[] };
  status: { containerStatuses?: { ready: boolean }[] };
}
interface Host {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { bmc?: { address?: string } };
  status?: { provisioning?: { state?: string } };
}

/** What the cluster, the agents and the pools said, for a failure seen only in CI's log. */
const diagnose = async (err: Error): Promise<never> => {
  const said = await Promise.all(
    [
      k('get', 'pods,events', '-A', '-o', 'wide'),
      k(
        'logs',
        '-n',
        'default',
        '-l',
        'app.kubernetes.io/name=nodewarden-hypervisor-agent',
        '--tail',
        '30',
        '--prefix',
      ),
      k('logs', '-n', NS, 'deployment/nodewarden-controller-manager', '--tail', '40'),
      k('get', 'virtualhostpools,baremetalhosts', '-A', '-o', 'yaml'),
    ].map((p) => p.catch((e: Error) => e.message)),
  );
  throw new Error(`${err.message}\n${said.join('\n')}`);
};

describe('the VM host agent in its DaemonSet on a real node', { skip, timeout: 1_200_000 }, () => {
  let libvirtd: PrivateLibvirtd | undefined;
  let image = '';

  before(async () => {
    const archive = join(work, 'nodewarden.tar');
    const built = execFileSync('bash', [join(REPO_ROOT, 'hack/build-image.sh'), archive], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    image = /(localhost\/nodewarden:\S+)/.exec(built)?.[1] ?? '';
    assert.ok(image, `the image's name in: ${built}`);
    await clusterCommand(
      ...['up', '--name', NAME, '--nodes', '0', '--real-nodes', '1'],
      ...['--boot-delay', '1s', '--timeout', '3m'],
    );
    await clusterCommand('load-image', '--name', NAME, archive);
    // The node's libvirtd, in the node's own network namespace (the VMs' bridges sit beside its
    // pods) and on its file system (the serial logs the agent names under its hostPath are there).
    libvirtd = await PrivateLibvirtd.start({
      name: NODE,
      dir: join(LIBVIRT_ROOT, NODE),
      netns: `nw-${NAME}-${NODE}`,
      mountsOf: holderPid(),
    });
  });

  after(async () => {
    if (existsSync(kubeconfig())) {
      for (const pool of [POOL, 'second'])
        await k('delete', 'virtualhostpool', pool, '--wait=true', '--timeout=120s').catch(() => '');
    }
    // Before the node goes: its QEMUs write into the node's folder.
    await libvirtd?.stop();
    if (existsSync(kubeconfig())) await clusterCommand('delete', '--name', NAME).catch(() => '');
    rmSync(work, { recursive: true, force: true });
  });

  it('runs the agent from the operator image, publishes it at the node address, and makes the VMs available', async () => {
    const helm = (await run('hack/build-helm.sh', [], { cwd: REPO_ROOT })).stdout.trim().split('\n').at(-1)!;
    const [repository, tag] = image.split(':') as [string, string];
    await run(
      helm,
      [
        ...['install', 'nodewarden', 'charts/nodewarden', '-n', NS, '--create-namespace'],
        ...['--set', 'replicas=1', '--set-string', 'nodeSelector.nodewarden\\.dev/real=true'],
        ...['--set-string', `image.repository=${repository}`, '--set-string', `image.tag=${tag}`],
        ...['--set', 'extraArgs[0]=--vm-hypervisors=libvirt'],
        ...['--set-string', `extraArgs[1]=--vm-host-agent-image=${image}`],
        ...['--set-string', `extraArgs[2]=--vm-host-libvirt-dir=${LIBVIRT_ROOT}/$(NODE_NAME)/sock`],
      ],
      { cwd: REPO_ROOT, env: { ...process.env, KUBECONFIG: kubeconfig() } },
    );
    const t = Date.now();
    // Applied once the operator's webhook, which admits pools, answers.
    await eventually(
      'the pool admitted',
      () =>
        kubectlApply(kubeconfig(), poolObject()).then(
          () => true,
          () => undefined,
        ),
      180_000,
    );

    const agentPod = await eventually(
      "the pool's agent pod Ready on the real node",
      async () => {
        const p = await agentPodOf(POOL);
        return p?.status.containerStatuses?.every((c) => c.ready) ? p : undefined;
      },
      240_000,
    ).catch(diagnose);
    assert.equal(agentPod.spec.nodeName, NODE);
    assert.equal(agentPod.spec.containers[0]!.image, image);
    assert.deepEqual(agentPod.spec.containers[0]!.args?.slice(0, 2), ['vm-host', 'agent']);

    const hosts = await eventually(
      `${VMS} BareMetalHosts available through the in-pod agent`,
      async () => {
        const all = JSON.parse(await k('get', 'baremetalhosts', '-n', 'default', '-o', 'json'))
          .items as Host[];
        return all.length === VMS && all.every((h) => h.status?.provisioning?.state === 'available')
          ? all
          : undefined;
      },
      400_000,
    ).catch(diagnose);
    console.log(`# ${VMS} VMs available through the in-pod agent: ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const nodeIp = (
      await k('get', 'node', NODE, '-o', 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')
    ).trim();
    for (const h of hosts)
      assert.match(h.spec.bmc?.address ?? '', new RegExp(`^redfish://${nodeIp}:8000/redfish/v1/Systems/`));
    // The domains are the node's libvirtd's: read through its socket from outside the pod.
    const domains = (await libvirtd!.virsh.domains()).sort();
    assert.equal(domains.length, VMS, `virsh lists ${domains.join(', ')}`);
  });

  it("powers a VM's domain on through the in-pod agent's Redfish when its host is put online", async () => {
    const [host] = await hostsOf(POOL);
    assert.ok(host, `a host of pool ${POOL}`);
    const system = host.spec.bmc?.address?.split('/').at(-1) ?? '';
    assert.equal((await libvirtd!.virsh.run(['domstate', system])).trim(), 'shut off');
    const t = Date.now();
    await k(
      'patch',
      'baremetalhost',
      host.metadata.name,
      '-n',
      'default',
      '--type',
      'merge',
      '-p',
      '{"spec":{"online":true}}',
    );
    const running = await eventually(
      'one domain running',
      async () => {
        for (const d of await libvirtd!.virsh.domains())
          if ((await libvirtd!.virsh.run(['domstate', d])).trim() === 'running') return d;
        return undefined;
      },
      180_000,
      1_000,
    ).catch(diagnose);
    console.log(
      `# online: true to a running domain through the in-pod agent: ${((Date.now() - t) / 1000).toFixed(1)} s`,
    );
    assert.equal(running, system, "the host's System is that domain");
  });

  it("stands a second pool's agent by on the same node, its VMs served by the first's, and hands over when the first goes", async () => {
    const first = await published();
    assert.ok(first.token, "the first pool's agent published");
    await kubectlApply(kubeconfig(), poolObject('second', 16));
    const standby = await eventually(
      "the second pool's agent standing by",
      async () => {
        const p = await agentPodOf('second');
        if (!p) return undefined;
        const log = await k('logs', '-n', 'default', p.metadata.name).catch(() => '');
        return /standing by until it is free/.test(log) ? p : undefined;
      },
      120_000,
      1_000,
    ).catch(diagnose);
    assert.equal(standby.spec.nodeName, NODE);
    await eventually(
      `the second pool's ${VMS} hosts available through the first pool's agent`,
      async () => {
        const all = await hostsOf('second');
        return all.length === VMS && all.every((h) => h.status?.provisioning?.state === 'available')
          ? true
          : undefined;
      },
      300_000,
    ).catch(diagnose);
    assert.equal((await published()).token, first.token, 'still the first agent');
    assert.equal((await libvirtd!.virsh.domains()).length, 2 * VMS);

    const t = Date.now();
    await k('delete', 'virtualhostpool', POOL, '--wait=true', '--timeout=180s');
    const now = await eventually(
      "the second pool's agent published in the first's place",
      async () => {
        const p = await published();
        return p.token && p.token !== first.token ? p : undefined;
      },
      180_000,
      1_000,
    ).catch(diagnose);
    console.log(
      `# the first pool deleted to the second's agent published: ${((Date.now() - t) / 1000).toFixed(1)} s`,
    );
    assert.equal(now.endpoint, first.endpoint, 'at the same address and port');
    assert.equal((await hostsOf(POOL)).length, 0);
    assert.equal((await libvirtd!.virsh.domains()).length, VMS, "only the second pool's domains remain");
  });
});
