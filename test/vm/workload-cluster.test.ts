// Issue 23, Proof 2: a real workload cluster of one master and one worker. The
// operator, from its image by Helm, runs in a pod on a real node of a local
// cluster; the KVMCluster's VM pods run on the real nodes and boot
// `make vm-os-image`'s image (TCG where /dev/kvm cannot run a guest). The
// master's control plane comes up from the images the OS image carries; the
// operator reaches its API server through the master Service and writes
// `<id>-kubeconfig`; kubectl with that kubeconfig, through the same Service,
// lists the master, then the worker (joined through the master Service by TLS
// bootstrap), as Ready nodes. The local cluster's simulated hypervisor leaves
// these VM pods alone: the Nodes are real kubelets'. Its own target (make
// test-vm): TCG boots take minutes.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { VmAnnotations } from '../../src/api/vm-image.ts';
import { stateDir } from '../../src/cluster/local-cluster.ts';
import { controlPlaneBinaries, REPO_ROOT } from '../../src/cluster/toolchain.ts';
import { kubeconfigSecretName } from '../../src/kvm/plan/names.ts';
import { eventually } from '../harness/cluster.ts';
import {
  clusterCommand,
  kubectl,
  kubectlApply,
  leftovers,
  realNodesSkipReason,
} from '../harness/real-nodes.ts';

const run = promisify(execFile);
const TOOLS = ['mmdebstrap', 'umoci', 'qemu-img', 'mkfs.ext4'];
const missing = TOOLS.filter((t) => !['/usr/bin', '/usr/sbin', '/sbin'].some((d) => existsSync(join(d, t))));
const skip =
  realNodesSkipReason() ||
  (missing.length > 0 ? `missing ${missing.join(', ')} (hack/debian-packages.sh)` : false);
if (skip) console.log(`# workload-cluster: skipped: ${skip}`);

const NAME = 'nwwc';
/** Where kubectl reaches the master Service from (any real node's network namespace would do). */
const NODE = 'real-000';
const NS = 'nodewarden-system';
const ID = 'wc1';
const kubeconfig = () => join(stateDir(), 'clusters', NAME, 'kubeconfig.yaml');
const k = (...args: string[]) => kubectl(kubeconfig(), ...args);
const work = mkdtempSync(join(tmpdir(), 'nw-wc-'));
const since = (t: number) => `${((Date.now() - t) / 1000).toFixed(0)} s`;

/** One master and one worker of 1 CPU each (the machine's 2 cores, shared with the local cluster) and small runtime disks (mkfs under TCG). */
const kvmCluster = {
  apiVersion: 'kvm.nodewarden.dev/v1alpha1',
  kind: 'KVMCluster',
  metadata: { name: ID, namespace: 'default' },
  spec: {
    masters: [{ id: 'm1', cpus: 1, memory: '2G', dockerVolumeSizeGB: 5 }],
    workers: [{ id: 'w1', cpus: 1, memory: '2G', dockerVolumeSizeGB: 5 }],
    release: { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: 'debian' },
    network: { vni: 9 },
    api: { domain: `api.${ID}.example.com` },
    unhealthyNodes: { terminate: false },
  },
};

interface Pod {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { nodeName?: string };
  status: { phase?: string; containerStatuses?: { ready: boolean; restartCount: number }[] };
}

const vmPod = async (role: 'master' | 'worker') =>
  (
    JSON.parse(await k('get', 'pods', '-n', ID, '-l', `kvm.nodewarden.dev/role=${role}`, '-o', 'json'))
      .items as Pod[]
  )[0];
const masterPod = () => vmPod('master');

interface Node {
  metadata: { name: string; annotations?: Record<string, string> };
  status: {
    conditions?: { type: string; status: string }[];
    nodeInfo?: { osImage: string; kubeletVersion: string };
  };
}
const isReady = (n: Node) => n.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/** What the VM's console, the operator and the cluster said, for a failure seen only in CI's log. */
const diagnose = async (err: Error): Promise<never> => {
  const pod = await masterPod().catch(() => undefined);
  const said = await Promise.all(
    [
      k('get', 'pods,events', '-A', '-o', 'wide'),
      pod ? k('logs', '-n', ID, pod.metadata.name, '--tail', '60') : Promise.resolve('no master pod'),
      k('logs', '-n', NS, 'deployment/nodewarden-controller-manager', '--tail', '40'),
      k('get', 'kvmcluster', ID, '-n', 'default', '-o', 'yaml'),
    ].map((p) => p.catch((e: Error) => e.message)),
  );
  throw new Error(`${err.message}\n${said.join('\n')}`);
};

/** Builds an image archive with a hack/ script; what it printed. */
const buildImage = (script: string, archive: string) =>
  execFileSync('bash', [join(REPO_ROOT, 'hack', script), archive], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });

describe('a one-master workload cluster in a real VM', { skip, timeout: 3_000_000 }, () => {
  const t = { start: 0, created: 0 };
  let operatorImage = '';
  /** kubectl with the operator's kubeconfig, through the master Service, from the real node. */
  let viaService: (...args: string[]) => Promise<string> = () =>
    Promise.reject(new Error('no kubeconfig yet'));
  const workloadNodes = async () =>
    JSON.parse(await viaService('get', 'nodes', '-o', 'json')).items as Node[];

  before(
    async () => {
      t.start = Date.now();
      const built = buildImage('build-image.sh', join(work, 'nodewarden.tar'));
      operatorImage = /(localhost\/nodewarden:\S+)/.exec(built)?.[1] ?? '';
      assert.ok(operatorImage, `the image's name in: ${built}`);
      // Named as the operator's --kvm-vm-image default (test/vm/vm-image.test.ts checks the name).
      buildImage('build-vm-image.sh', join(work, 'vm.tar'));
      console.log(`# workload-cluster: images built in ${since(t.start)}`);
      // Two real nodes: each VM pod asks for its whole CPU, and one node's 2 beside the operator fit only one.
      // Both nodes share this machine's 2 cores, so the two guests share them too.
      await clusterCommand('up', '--name', NAME, '--nodes', '0', '--real-nodes', '2', '--timeout', '3m');
      for (const archive of ['nodewarden.tar', 'vm.tar'])
        await clusterCommand('load-image', '--name', NAME, join(work, archive));
      console.log(`# workload-cluster: cluster up, images loaded at ${since(t.start)}`);
    },
    { timeout: 1_800_000 },
  );

  after(async () => {
    if (existsSync(kubeconfig())) {
      await k('delete', 'kvmcluster', ID, '-n', 'default', '--wait=false').catch(() => '');
      await clusterCommand('delete', '--name', NAME).catch(() => '');
    }
    rmSync(work, { recursive: true, force: true });
  });

  it('the operator, installed by Helm on the real node, admits the KVMCluster', async () => {
    const helm = (await run('hack/build-helm.sh', [], { cwd: REPO_ROOT })).stdout.trim().split('\n').at(-1)!;
    const [repository, tag] = operatorImage.split(':') as [string, string];
    await run(
      helm,
      [
        ...['install', 'nodewarden', 'charts/nodewarden', '-n', NS, '--create-namespace'],
        ...['--set', 'replicas=1', '--set-string', 'nodeSelector.nodewarden\\.dev/real=true'],
        ...['--set-string', `image.repository=${repository}`, '--set-string', `image.tag=${tag}`],
        ...['--set', 'extraArgs[0]=--controllers=kvmcluster\\,kvm-vm-drain'],
      ],
      { cwd: REPO_ROOT, env: { ...process.env, KUBECONFIG: kubeconfig() } },
    );
    await eventually(
      'the KVMCluster admitted by the webhook',
      () =>
        kubectlApply(kubeconfig(), kvmCluster).then(
          () => true,
          () => undefined,
        ),
      240_000,
      2_000,
    ).catch(diagnose);
    t.created = Date.now();
  });

  it("the master's VM pod runs on the real node, under the VM image", async () => {
    const pod = await eventually(
      'the master pod Running',
      async () => {
        const p = await masterPod();
        return p?.status.phase === 'Running' ? p : undefined;
      },
      180_000,
      2_000,
    ).catch(diagnose);
    assert.match(pod.spec.nodeName ?? '', /^real-\d{3}$/);
    const log = await k('logs', '-n', ID, pod.metadata.name);
    console.log(
      `# workload-cluster: ${/\[vm\] accelerator: .*/.exec(log)?.[0] ?? 'no accelerator line yet'}`,
    );
  });

  it('the operator writes the kubeconfig Secret once the API server answers through the master Service', async () => {
    const secret = await eventually(
      `${kubeconfigSecretName(ID)} written`,
      async () => {
        const out = await k('get', 'secret', kubeconfigSecretName(ID), '-n', 'default', '-o', 'json').catch(
          () => '',
        );
        return out ? (JSON.parse(out) as { metadata: { labels?: Record<string, string> } }) : undefined;
      },
      1_500_000,
      5_000,
    ).catch(diagnose);
    // The operator's, not the simulated hypervisor's: it leaves VM pods on real nodes alone.
    assert.equal(secret.metadata.labels?.['app.kubernetes.io/managed-by'], 'nodewarden');
    console.log(`# workload-cluster: create to kubeconfig Secret ${since(t.created)}`);
  });

  it("kubectl with that kubeconfig, through the master Service, lists the master as a Ready node: a real kubelet's", async () => {
    const data = (
      await k('get', 'secret', kubeconfigSecretName(ID), '-n', 'default', '-o', 'jsonpath={.data.kubeconfig}')
    ).trim();
    const file = join(work, 'workload.conf');
    writeFileSync(file, Buffer.from(data, 'base64'));
    // The node's resolv.conf has no cluster DNS: the Service by its address, its name for TLS.
    const clusterIp = (
      await k('get', 'service', 'master', '-n', ID, '-o', 'jsonpath={.spec.clusterIP}')
    ).trim();
    const kubectlBin = (await controlPlaneBinaries({ quiet: true })).kubectl;
    viaService = (...args: string[]) =>
      run('ip', [
        ...['netns', 'exec', `nw-${NAME}-${NODE}`, kubectlBin, '--kubeconfig', file],
        ...['--server', `https://${clusterIp}:443`, '--tls-server-name', `master.${ID}.svc`, ...args],
      ]).then((r) => r.stdout);
    const pod = await masterPod();
    const master = pod?.metadata.name;
    const node = await eventually(
      'the master a Ready node',
      async () => (await workloadNodes()).find((n) => n.metadata.name === master && isReady(n)),
      900_000,
      5_000,
    ).catch(diagnose);
    assert.equal(node.metadata.annotations?.['kwok.x-k8s.io/node'], undefined, 'not a simulated node');
    // The OS the operator tells the simulated hypervisor a VM runs is the one the real guest reports.
    assert.equal(node.status.nodeInfo?.osImage, pod?.metadata.annotations?.[VmAnnotations.osVersion]);
    assert.match(node.status.nodeInfo?.osImage ?? '', /^Debian/);
    assert.equal(node.status.nodeInfo?.kubeletVersion, 'v1.37.1');
    console.log(`# workload-cluster: create to master Ready ${since(t.created)}`);
  });

  it('the worker VM joins through the master Service: a second Ready node, counted by the KVMCluster', async () => {
    const worker = await vmPod('worker');
    assert.match(worker?.spec.nodeName ?? '', /^real-\d{3}$/);
    const node = await eventually(
      'the worker a Ready node',
      async () =>
        (await workloadNodes()).find((n) => n.metadata.name === worker?.metadata.name && isReady(n)),
      900_000,
      5_000,
    ).catch(diagnose);
    assert.equal(node.status.nodeInfo?.kubeletVersion, 'v1.37.1');
    console.log(`# workload-cluster: create to worker Ready ${since(t.created)}`);
    await eventually(
      "the KVMCluster's status counting both",
      async () => {
        const kc = JSON.parse(await k('get', 'kvmcluster', ID, '-n', 'default', '-o', 'json'));
        return kc.status?.readyNodes === 2 ? true : undefined;
      },
      180_000,
      5_000,
    ).catch(diagnose);
  });

  it('deleting the KVMCluster powers the VMs off and leaves nothing on the node', async () => {
    const start = Date.now();
    // Not kubectl's --wait: a master's preStop (its control plane shut down under TCG) outlasts kubectl's minute here.
    await k('delete', 'kvmcluster', ID, '-n', 'default', '--wait=false');
    await eventually(
      'the KVMCluster and its VM pods gone',
      async () => {
        const left = await k('get', 'kvmcluster', '-n', 'default', '-o', 'name');
        return left.trim() === '' && !(await masterPod()) && !(await vmPod('worker')) ? true : undefined;
      },
      300_000,
      2_000,
    ).catch(diagnose);
    console.log(`# workload-cluster: delete to VM pods gone ${since(start)}`);
    await clusterCommand('delete', '--name', NAME);
    assert.deepEqual(await leftovers(NAME, join(stateDir(), 'clusters', NAME)), []);
  });
});
