// Proof 1 of the VM image (issue 23): `make vm-image`'s image run as a container
// (runc, as the kubelet's runtime would, privileged, in a network namespace of
// its own wired like a pod's) with exactly the env and ConfigMap desired.ts
// renders for a worker. QEMU starts (TCG where /dev/kvm cannot run a guest),
// the guest applies its Ignition config — the hostname and the SSH user it asked
// for, reported from inside the guest on its serial console — and takes the
// pod's address by DHCP; /healthz (asked by the pod's own probe command)
// answers only after that; preStop powers the guest off within the grace period.
// Then a master's pod: its etcd share (the pod's etcd volume) mounted over 9p,
// its control plane started from the images the OS image carries, its API
// server answering at the pod's address with the cluster's CA and the admin
// kubeconfig the operator writes, and its kubelet, joined by TLS bootstrap,
// a Ready node (issue 23, Proof 2's guest half).
// Its own target (make test-vm): a cold build and TCG boots take minutes.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { KVMCluster } from '../../src/api/kvm.ts';
import { KVMClusters } from '../../src/api/kvm.ts';
import {
  GUEST_REPORT_PREFIX,
  USER_DATA_KEY,
  VM_SHUTDOWN_COMMAND,
  VmMounts,
  vmImageName,
} from '../../src/api/vm-image.ts';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { bootstrapBindings } from '../../src/kvm/act/workload-kubeconfig.ts';
import { desiredCluster } from '../../src/kvm/plan/desired.ts';
import { TERMINATION_GRACE_SECONDS } from '../../src/kvm/plan/desired-node.ts';
import type { ClusterPki } from '../../src/kvm/plan/pki.ts';
import { masterServiceEndpoint, workloadKubeconfig } from '../../src/kvm/plan/workload-kubeconfig.ts';
import { clusterPki } from '../unit/kvm/fixtures.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
const TOOLS = ['mmdebstrap', 'umoci', 'runc', 'ip', 'qemu-img', 'mkfs.ext4'];
const missing = TOOLS.filter((t) => !['/usr/bin', '/usr/sbin', '/sbin'].some((d) => existsSync(join(d, t))));
const skip =
  process.getuid?.() !== 0
    ? 'runc runs a container, and mmdebstrap a chroot, as root only on these machines'
    : missing.length > 0
      ? `missing ${missing.join(', ')} (hack/debian-packages.sh installs them)`
      : false;
if (skip) console.log(`# vm-image: skipped: ${skip}`);

const SSH_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0cHJvb2Ytb2YtdGhlLXZtLWltYWdl proof@nodewarden';
/** The cluster DNS address the pod's resolv.conf names, as a kubelet writes it. */
const POD_NAMESERVER = '10.96.0.10';
const dir = mkdtempSync(join(tmpdir(), 'nw-vm-image-'));
const archive = join(dir, 'nodewarden-vm.tar');

/** Nodes of 1 CPU and 2 GiB: the smallest the CRD takes, kind to two shared cores under TCG. */
function cluster(): KVMCluster {
  return KVMClusters.make(
    { name: 'proof', namespace: 'default', generation: 1 },
    {
      masters: [{ id: 'm1', cpus: 1, memory: '2G' }],
      workers: [{ id: 'w1', cpus: 1, memory: '2G' }],
      release: { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' },
      network: { vni: 7 },
      api: { domain: 'api.proof.example.com' },
      sshUsers: [{ name: 'core', publicKey: SSH_KEY }],
    },
  );
}

// biome-ignore lint/suspicious/noExplicitAny: reading a rendered pod spec
type Any = any;
const sh = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One VM pod as the kubelet would run it: desired.ts's container and ConfigMap, a namespace, a bundle. */
class VmPod {
  readonly id: string;
  readonly nodeNs: string;
  readonly podNs: string;
  readonly dir: string;
  readonly container: Any;
  readonly userData: string;
  /** The container's stdout and stderr as they came: for messages. */
  consoleLog = '';
  /** Its stdout alone, the guest's serial console: its lines never split by the container's own log on stderr. */
  serialLog = '';
  exited: Promise<number | null> = Promise.resolve(null);
  private runc?: ChildProcess;

  readonly nodeId: 'w1' | 'm1';
  readonly podName: string;
  readonly podIp: string;
  readonly pki: ClusterPki;

  constructor(nodeId: 'w1' | 'm1', podName: string, podIp: string) {
    this.nodeId = nodeId;
    this.podName = podName;
    this.podIp = podIp;
    // The configs a VM gets: a real PKI issued as the operator issues one.
    const kc = cluster();
    this.pki = clusterPki(kc);
    const node = desiredCluster(kc, { m1: 1, w1: 2 }, this.pki).nodes.find(
      (n) => n.node.id === nodeId,
    ) as Any;
    this.container = node.deployment.spec.template.spec.containers[0];
    this.userData = node.configMap.data[USER_DATA_KEY];
    this.id = `nw-vm-${nodeId}-${process.pid}`;
    this.nodeNs = `nw-vmnode-${nodeId}-${process.pid}`;
    this.podNs = `nw-vmpod-${nodeId}-${process.pid}`;
    this.dir = join(dir, nodeId);
  }

  /** The env as the kubelet resolves it: the downward API gives the pod's name. */
  env(): string[] {
    return this.container.env.map(
      (e: Any) =>
        `${e.name}=${e.valueFrom?.fieldRef?.fieldPath === 'metadata.name' ? this.podName : e.value}`,
    );
  }

  /** The image unpacked, the pod's volumes and its namespace made. */
  prepare(): void {
    mkdirSync(join(this.dir, 'configmap'), { recursive: true });
    writeFileSync(join(this.dir, 'configmap', USER_DATA_KEY), this.userData);
    mkdirSync(join(this.dir, 'emptydir'));
    mkdirSync(join(this.dir, 'etcd'));
    writeFileSync(join(this.dir, 'resolv.conf'), `nameserver ${POD_NAMESERVER}\n`);
    sh('umoci', ['unpack', '--image', `${join(dir, 'layout')}:${VERSION}`, join(this.dir, 'bundle')]);
    this.network();
    const mounts = this.container.volumeMounts.map((m: Any) => m.mountPath);
    const volumes: Record<string, string> = {
      [VmMounts.ignition]: join(this.dir, 'configmap'),
      [VmMounts.rootfs]: join(this.dir, 'emptydir'),
      ...(mounts.includes(VmMounts.etcdData) ? { [VmMounts.etcdData]: join(this.dir, 'etcd') } : {}),
      '/etc/resolv.conf': join(this.dir, 'resolv.conf'),
    };
    this.privilegedBundle(volumes);
  }

  /**
   * The pod's namespace, wired as the CNI bridge plugin does on a real node: a veth to a bridge on
   * the node side that holds the gateway, its port in hairpin mode (which sends the guest's
   * broadcasts back into the pod), an address, a default route.
   */
  private network(): void {
    sh('ip', ['netns', 'add', this.nodeNs]);
    sh('ip', ['netns', 'add', this.podNs]);
    sh('ip', [
      'link',
      'add',
      'vmh0',
      'netns',
      this.nodeNs,
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      this.podNs,
    ]);
    const inNode = (...a: string[]) => sh('ip', ['-n', this.nodeNs, ...a]);
    const inPod = (...a: string[]) => sh('ip', ['-n', this.podNs, ...a]);
    inNode('link', 'add', 'cni0', 'type', 'bridge');
    inNode('addr', 'add', '10.250.0.1/24', 'dev', 'cni0');
    inNode('link', 'set', 'cni0', 'up');
    inNode('link', 'set', 'vmh0', 'master', 'cni0', 'up');
    inNode('link', 'set', 'vmh0', 'type', 'bridge_slave', 'hairpin', 'on');
    inPod('link', 'set', 'lo', 'up');
    inPod('addr', 'add', `${this.podIp}/24`, 'dev', 'eth0');
    inPod('link', 'set', 'eth0', 'up');
    inPod('route', 'add', 'default', 'via', '10.250.0.1');
  }

  /** The bundle's config as a privileged pod's container: the pod's namespace, its volumes, its env. */
  private privilegedBundle(volumes: Record<string, string>): void {
    const path = join(this.dir, 'bundle', 'config.json');
    const c = JSON.parse(readFileSync(path, 'utf8'));
    c.process.terminal = false;
    c.process.env = [...c.process.env, ...this.env()];
    // privileged: every capability runc knows (listed in number order) that this process may hand on
    const bounding = BigInt(
      `0x${/CapBnd:\s*(\w+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`,
    );
    const all = (JSON.parse(sh('runc', ['features'])).linux.capabilities as string[]).filter(
      (_, bit) => (bounding >> BigInt(bit)) & 1n,
    );
    for (const set of ['bounding', 'effective', 'permitted']) c.process.capabilities[set] = all;
    c.linux.namespaces = c.linux.namespaces
      .filter((n: Any) => n.type !== 'network')
      .concat([{ type: 'network', path: `/var/run/netns/${this.podNs}` }]);
    c.linux.maskedPaths = [];
    c.linux.readonlyPaths = [];
    delete c.linux.seccomp;
    c.linux.resources = { devices: [{ allow: true, access: 'rwm' }] };
    const device = (path: string, minor: number) => ({
      path,
      type: 'c',
      major: 10,
      minor,
      fileMode: 0o666,
      uid: 0,
      gid: 0,
    });
    c.linux.devices = [
      device('/dev/net/tun', 200),
      ...(existsSync('/dev/kvm') ? [device('/dev/kvm', 232)] : []),
    ];
    for (const [dest, source] of Object.entries(volumes))
      c.mounts.push({ destination: dest, type: 'bind', source, options: ['rbind', 'rw'] });
    writeFileSync(path, JSON.stringify(c));
  }

  /** The container's exit code, null while it runs. */
  exitedCode(): number | null {
    return this.runc?.exitCode ?? null;
  }

  exec(args: string[], timeout = 30_000) {
    return spawnSync('runc', ['exec', this.id, ...args], { timeout, encoding: 'utf8' });
  }

  /** Runs the container and asks its probe until it answers; the time that took. */
  async bootUntilHealthy(): Promise<number> {
    const start = Date.now();
    const runc = spawn('runc', ['run', '--bundle', join(this.dir, 'bundle'), this.id], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.runc = runc;
    this.exited = new Promise((resolve) => runc.on('exit', (code) => resolve(code)));
    runc.stdout?.on('data', (b: Buffer) => {
      this.serialLog += b.toString();
      this.consoleLog += b.toString();
    });
    runc.stderr?.on('data', (b: Buffer) => {
      this.consoleLog += b.toString();
    });
    const probe: string[] = this.container.readinessProbe.exec.command;
    let sawUnready = false;
    for (;;) {
      assert.ok(Date.now() - start < 900_000, `no /healthz in 15 min:\n${this.consoleLog.slice(-4000)}`);
      assert.equal(runc.exitCode, null, `the container stopped:\n${this.consoleLog.slice(-4000)}`);
      const before = this.serialLog;
      if (this.exec(probe).status === 0) {
        // The guest said what it became before the container said it was up.
        assert.ok(before.includes(`${GUEST_REPORT_PREFIX}hostname=`), 'healthy before the guest reported');
        break;
      }
      if (this.consoleLog.includes('qemu-system-x86_64 ')) sawUnready = true;
      await sleep(1_000);
    }
    assert.ok(sawUnready, 'the probe failed while QEMU ran and the guest was not up yet');
    return Date.now() - start;
  }

  /** What the guest reported about itself on its serial console. */
  report(): string[] {
    return this.serialLog
      .split('\n')
      .map((l) => l.slice(l.indexOf(GUEST_REPORT_PREFIX)))
      .filter((l) => l.startsWith(GUEST_REPORT_PREFIX))
      .map((l) => l.slice(GUEST_REPORT_PREFIX.length).trim());
  }

  /** The guest's progress lines (hack/vm-os-image/guest-progress): its way to Kubernetes. */
  progress(): string {
    return this.report()
      .filter((l) => l.startsWith('progress '))
      .join('\n');
  }

  /** preStop as the kubelet runs it; seconds until the container ended. */
  async preStop(): Promise<number> {
    const start = Date.now();
    // Not spawnSync: the console must be read while the guest shuts down, or its last lines are lost.
    const r = await new Promise<{ status: number; out: string }>((resolve) =>
      execFile(
        'runc',
        ['exec', this.id, ...VM_SHUTDOWN_COMMAND],
        { encoding: 'utf8', timeout: TERMINATION_GRACE_SECONDS * 1000 },
        (e, stdout, stderr) => resolve({ status: e ? Number(e.code ?? 1) : 0, out: stdout + stderr }),
      ),
    );
    assert.equal(r.status, 0, r.out);
    const code = await Promise.race([this.exited, sleep(60_000).then(() => 'still running')]);
    assert.equal(code, 0, `the container: ${code}\n${this.consoleLog.slice(-3000)}`);
    assert.match(this.consoleLog, /reboot: Power down/);
    return (Date.now() - start) / 1000;
  }

  remove(): void {
    // Kept for a look when asked (NODEWARDEN_VM_CONSOLE_DIR): the serial console is the only window into a guest.
    this.runc?.kill('SIGKILL');
    spawnSync('runc', ['delete', '--force', this.id]);
    spawnSync('ip', ['netns', 'del', this.podNs]);
    spawnSync('ip', ['netns', 'del', this.nodeNs]);
    // After the clean-up: a directory that is not there must not leak the namespaces.
    const keep = process.env.NODEWARDEN_VM_CONSOLE_DIR;
    if (keep) {
      mkdirSync(keep, { recursive: true });
      writeFileSync(join(keep, `${this.nodeId}-console.log`), this.consoleLog);
    }
  }
}

const t = { build: 0, unpack: 0 };
function buildAndUnpack(): void {
  let start = Date.now();
  execFileSync('bash', [join(ROOT, 'hack/build-vm-image.sh'), archive], { cwd: ROOT, stdio: 'inherit' });
  t.build = Date.now() - start;
  start = Date.now();
  mkdirSync(join(dir, 'layout'));
  sh('tar', ['-xf', archive, '-C', join(dir, 'layout')]);
  t.unpack = Date.now() - start;
}
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the VM image, run as a worker pod would run it', { skip }, () => {
  const pod = new VmPod('w1', 'worker-w1-6b8d9c7f5-q2x7k', '10.250.0.5');
  before(
    () => {
      buildAndUnpack();
      pod.prepare();
    },
    { timeout: 1_800_000 },
  );
  after(() => pod.remove());

  it('is the image the operator names by default', () => {
    assert.equal(pod.container.image, vmImageName(VERSION));
    const index = JSON.parse(sh('tar', ['-xOf', archive, 'index.json']));
    assert.equal(index.manifests[0].annotations['io.containerd.image.name'], vmImageName(VERSION));
  });

  it('boots the guest; /healthz answers only once the guest applied its Ignition config', async () => {
    const ms = await pod.bootUntilHealthy();
    console.log(
      `# vm-image: build ${(t.build / 1000).toFixed(0)} s, unpack ${(t.unpack / 1000).toFixed(0)} s, worker boot to /healthz ${(ms / 1000).toFixed(1)} s`,
    );
    console.log(`# vm-image: ${/\[vm\] accelerator: .*/.exec(pod.consoleLog)?.[0]}`);
  });

  it('the guest took the hostname and the SSH user its Ignition config asked for, and the pod address by DHCP', () => {
    const report = pod.report();
    const all = report.join('\n');
    assert.ok(report.includes(`hostname=${pod.podName}`), all);
    assert.ok(
      report.some((l) => /^user=core groups=.*\bsudo\b/.test(l) && /\bdocker\b/.test(l)),
      all,
    );
    assert.ok(report.includes(`user=core key=${SSH_KEY}`), all);
    assert.ok(report.includes(`address=${pod.podIp}/24`), all);
    // The guest reaches its gateway though the node's bridge sends its broadcasts back into the pod.
    assert.ok(report.includes('gateway=10.250.0.1 reachable'), all);
    // The pod's DNS server, by the same lease: a worker resolves the master Service by it.
    assert.ok(report.includes(`nameservers=${POD_NAMESERVER}`), all);
    assert.ok(
      report.some((l) => /^mount=\/var\/lib\/containerd \/dev\/vd\w,xfs$/.test(l)),
      all,
    );
    assert.ok(
      report.some((l) => /^mount=\/var\/lib\/kubelet \/dev\/vd\w,xfs$/.test(l)),
      all,
    );
    assert.ok(!report.some((l) => l.startsWith('mount=/var/lib/etcd')), 'no etcd share on a worker');
  });

  it("the pod's address reaches the guest from the node's side", () => {
    const ping = ['netns', 'exec', pod.nodeNs, '/bin/busybox', 'ping', '-c', '2', '-W', '5', pod.podIp];
    const r = spawnSync('ip', ping, { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

  it('preStop powers the guest off over QMP within the grace period, and the container ends', async () => {
    const seconds = await pod.preStop();
    assert.ok(seconds < TERMINATION_GRACE_SECONDS, `${seconds} s`);
    console.log(`# vm-image: worker preStop to powered off ${seconds.toFixed(1)} s`);
  });
});

describe('the VM image, run as a master pod would run it', { skip }, () => {
  const pod = new VmPod('m1', 'master-m1-7c9f8d6b4-x5k2p', '10.250.0.6');
  before(() => pod.prepare(), { timeout: 120_000 });
  after(() => {
    // The guest's way to Kubernetes, in the log whatever happened: the phases' times, or where it stopped.
    console.log(`# vm-image: master guest progress:\n${pod.progress().replace(/^/gm, '#   ')}`);
    pod.remove();
  });

  // The operator's kubeconfig for the cluster, pointed at the pod's address (as the master
  // Service would be), from the node's side: kubectl runs in the node's namespace.
  const kubeconfig = join(dir, 'proof-admin.conf');
  let kubectlBin = '';
  let booted = 0;
  // Not spawnSync: the container's console must be read while kubectl waits.
  const kubectl = (args: string[], input?: string) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const argv = [
        'netns',
        'exec',
        pod.nodeNs,
        kubectlBin,
        '--kubeconfig',
        kubeconfig,
        // Under TCG the guest's API server may take seconds to answer.
        '--request-timeout=30s',
      ];
      const child = execFile(
        'ip',
        [...argv, ...args],
        { encoding: 'utf8', timeout: 60_000 },
        (e, stdout, stderr) =>
          resolve({ status: e ? (typeof e.code === 'number' ? e.code : 1) : 0, stdout, stderr }),
      );
      // kubectl may be gone before it read stdin (a refused connection): not this test's error.
      child.stdin?.on('error', () => {});
      child.stdin?.end(input);
    });
  /** Asks until the answer passes, at most `minutes`; the last answer and the time it took. */
  async function until(what: string, minutes: number, args: string[], ok: (out: string) => boolean) {
    const start = Date.now();
    for (;;) {
      const r = await kubectl(args);
      if (r.status === 0 && ok(r.stdout)) return Date.now() - start;
      const last = (r.stdout + r.stderr).trim().slice(-600);
      assert.ok(
        Date.now() - start < minutes * 60_000,
        `${what}: not in ${minutes} min; last: ${last}\nguest:\n${pod.progress()}\n${pod.consoleLog.slice(-2500)}`,
      );
      assert.equal(pod.exitedCode(), null, `the container stopped:\n${pod.consoleLog.slice(-4000)}`);
      await sleep(5_000);
    }
  }

  it("boots; the pod's etcd volume is the guest's /var/lib/etcd, over 9p", async () => {
    kubectlBin = (await controlPlaneBinaries({ quiet: true })).kubectl;
    const at = masterServiceEndpoint('proof', 443);
    writeFileSync(
      kubeconfig,
      workloadKubeconfig('proof', pod.pki, { ...at, url: `https://${pod.podIp}:443` }),
    );
    const ms = await pod.bootUntilHealthy();
    booted = Date.now();
    const report = pod.report();
    assert.ok(report.includes(`hostname=${pod.podName}`), report.join('\n'));
    assert.ok(report.includes('mount=/var/lib/etcd etcdshare,9p'), report.join('\n'));
    console.log(`# vm-image: master boot to /healthz ${(ms / 1000).toFixed(1)} s`);
  });

  it("its API server, from the OS image's images, answers at the pod's address with the cluster's CA", async () => {
    const ms = await until('/readyz', 25, ['get', '--raw', '/readyz'], (out) => out.trim() === 'ok');
    console.log(`# vm-image: master /healthz to API server ready ${(ms / 1000).toFixed(0)} s`);
    const pods = await kubectl(['get', 'pods', '-n', 'kube-system', '-o', 'name']);
    console.log(`# vm-image: ${pods.stdout.trim().split('\n').join(' ')}`);
  });

  it('its kubelet joins by TLS bootstrap (the bindings the operator applies) and the master is a Ready node', async () => {
    const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: bootstrapBindings() });
    // No client-side validation: its OpenAPI download alone can outlast a timeout under TCG.
    const apply = ['apply', '--validate=false', '-f', '-'];
    const start = Date.now();
    for (let r = await kubectl(apply, list); r.status !== 0; r = await kubectl(apply, list)) {
      assert.ok(Date.now() - start < 300_000, `the bindings not applied in 5 min: ${r.stderr}`);
      await sleep(5_000);
    }
    const ready = (out: string) =>
      (JSON.parse(out).items as Any[]).some(
        (n) =>
          n.metadata.name === pod.podName &&
          n.status.conditions?.some((c: Any) => c.type === 'Ready' && c.status === 'True'),
      );
    const ms = await until('a Ready node', 15, ['get', 'nodes', '-o', 'json'], ready);
    const node = JSON.parse((await kubectl(['get', 'node', pod.podName, '-o', 'json'])).stdout);
    assert.equal(node.metadata.labels['kvm.nodewarden.dev/role'], 'master');
    // Mirror pods come after the Node registered, their phase later still: asked until they show.
    const running = (out: string) =>
      (JSON.parse(out).items as Any[])
        .filter((p) => p.status?.phase === 'Running')
        .map((p) => p.metadata.labels?.component);
    const controlPlane = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];
    await until('the static pods Running', 5, ['get', 'pods', '-n', 'kube-system', '-o', 'json'], (out) =>
      controlPlane.every((c) => running(out).includes(c)),
    );
    console.log(
      `# vm-image: master API server ready to node Ready ${(ms / 1000).toFixed(0)} s; /healthz to Ready ${((Date.now() - booted) / 1000).toFixed(0)} s`,
    );
  });

  it('powers off on preStop', async () => {
    const seconds = await pod.preStop();
    assert.ok(seconds < TERMINATION_GRACE_SECONDS, `${seconds} s`);
  });
});
