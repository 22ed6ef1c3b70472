// Proof 1 of the VM image (issue 23): `make vm-image`'s image run as a container
// (runc, as the kubelet's runtime would, privileged, in a network namespace of
// its own wired like a pod's) with exactly the env and ConfigMap desired.ts
// renders for a worker. QEMU starts (TCG where /dev/kvm cannot run a guest),
// the guest applies its Ignition config — the hostname and the SSH user it asked
// for, reported from inside the guest on its serial console — and takes the
// pod's address by DHCP; /healthz (asked by the pod's own probe command)
// answers only after that; preStop powers the guest off within the grace period.
// Its own target (make test-vm): a cold build and a TCG boot take minutes.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
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
import { desiredCluster } from '../../src/kvm/plan/desired.ts';
import { TERMINATION_GRACE_SECONDS } from '../../src/kvm/plan/desired-node.ts';

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
const POD_NAME = 'worker-w1-6b8d9c7f5-q2x7k';
const POD_IP = '10.250.0.5';
const ID = `nw-vm-${process.pid}`;
const NODE_NS = `nw-vmnode-${process.pid}`;
const POD_NS = `nw-vmpod-${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'nw-vm-image-'));

/** A worker of 1 CPU and 2 GiB: the smallest the CRD takes, kind to two shared cores under TCG. */
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
const worker = desiredCluster(cluster(), { m1: 1, w1: 2 }).nodes.find((n) => n.node.id === 'w1') as Any;
const pod = worker.deployment.spec.template.spec;
const container = pod.containers[0];
const userData = worker.configMap.data[USER_DATA_KEY] as string;
/** The env as the kubelet resolves it: the downward API gives the pod's name. */
const env: string[] = container.env.map(
  (e: Any) => `${e.name}=${e.valueFrom?.fieldRef?.fieldPath === 'metadata.name' ? POD_NAME : e.value}`,
);
const probe: string[] = container.readinessProbe.exec.command;

const sh = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
/** The pod's namespace, wired as a CNI bridge would: a veth to the node side, an address, a default route. */
function podNetwork(): void {
  sh('ip', ['netns', 'add', NODE_NS]);
  sh('ip', ['netns', 'add', POD_NS]);
  sh('ip', [
    'link',
    'add',
    'vmh0',
    'netns',
    NODE_NS,
    'type',
    'veth',
    'peer',
    'name',
    'eth0',
    'netns',
    POD_NS,
  ]);
  const inNode = (...a: string[]) => sh('ip', ['-n', NODE_NS, ...a]);
  const inPod = (...a: string[]) => sh('ip', ['-n', POD_NS, ...a]);
  inNode('addr', 'add', '10.250.0.1/24', 'dev', 'vmh0');
  inNode('link', 'set', 'vmh0', 'up');
  inPod('link', 'set', 'lo', 'up');
  inPod('addr', 'add', `${POD_IP}/24`, 'dev', 'eth0');
  inPod('link', 'set', 'eth0', 'up');
  inPod('route', 'add', 'default', 'via', '10.250.0.1');
}

/** The bundle's config as a privileged pod's container: the pod's namespace, its volumes, its env. */
function privilegedBundle(bundle: string, volumes: Record<string, string>): void {
  const path = join(bundle, 'config.json');
  const c = JSON.parse(readFileSync(path, 'utf8'));
  c.process.terminal = false;
  c.process.env = [...c.process.env, ...env];
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
    .concat([{ type: 'network', path: `/var/run/netns/${POD_NS}` }]);
  c.linux.maskedPaths = [];
  c.linux.readonlyPaths = [];
  delete c.linux.seccomp;
  c.linux.resources = { devices: [{ allow: true, access: 'rwm' }] };
  c.linux.devices = [
    { path: '/dev/net/tun', type: 'c', major: 10, minor: 200, fileMode: 0o666, uid: 0, gid: 0 },
    ...(existsSync('/dev/kvm')
      ? [{ path: '/dev/kvm', type: 'c', major: 10, minor: 232, fileMode: 0o666, uid: 0, gid: 0 }]
      : []),
  ];
  for (const [dest, source] of Object.entries(volumes))
    c.mounts.push({ destination: dest, type: 'bind', source, options: ['rbind', 'rw'] });
  writeFileSync(path, JSON.stringify(c));
}

const exec = (args: string[], timeout = 30_000) =>
  spawnSync('runc', ['exec', ID, ...args], { timeout, encoding: 'utf8' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the VM image, run as a worker pod would run it', { skip }, () => {
  let runc: ChildProcess | undefined;
  let consoleLog = '';
  let exited: Promise<number | null>;
  const t = { build: 0, unpack: 0, boot: 0 };
  const archive = join(dir, 'nodewarden-vm.tar');

  before(
    () => {
      let start = Date.now();
      execFileSync('bash', [join(ROOT, 'hack/build-vm-image.sh'), archive], { cwd: ROOT, stdio: 'inherit' });
      t.build = Date.now() - start;
      start = Date.now();
      mkdirSync(join(dir, 'layout'));
      sh('tar', ['-xf', archive, '-C', join(dir, 'layout')]);
      sh('umoci', ['unpack', '--image', `${join(dir, 'layout')}:${VERSION}`, join(dir, 'bundle')]);
      t.unpack = Date.now() - start;
      const ignition = join(dir, 'configmap');
      mkdirSync(ignition);
      writeFileSync(join(ignition, USER_DATA_KEY), userData);
      mkdirSync(join(dir, 'emptydir'));
      writeFileSync(join(dir, 'resolv.conf'), 'nameserver 10.96.0.10\n');
      podNetwork();
      privilegedBundle(join(dir, 'bundle'), {
        [VmMounts.ignition]: ignition,
        [VmMounts.rootfs]: join(dir, 'emptydir'),
        '/etc/resolv.conf': join(dir, 'resolv.conf'),
      });
    },
    { timeout: 1_800_000 },
  );

  after(() => {
    spawnSync('runc', ['delete', '--force', ID]);
    spawnSync('ip', ['netns', 'del', POD_NS]);
    spawnSync('ip', ['netns', 'del', NODE_NS]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('is the image the operator names by default', () => {
    assert.equal(container.image, vmImageName(VERSION));
    const index = JSON.parse(sh('tar', ['-xOf', archive, 'index.json']));
    assert.equal(index.manifests[0].annotations['io.containerd.image.name'], vmImageName(VERSION));
  });

  it('boots the guest; /healthz answers only once the guest applied its Ignition config', async () => {
    const start = Date.now();
    runc = spawn('runc', ['run', '--bundle', join(dir, 'bundle'), ID], { stdio: ['ignore', 'pipe', 'pipe'] });
    exited = new Promise((resolve) => runc?.on('exit', (code) => resolve(code)));
    const collect = (b: Buffer) => {
      consoleLog += b.toString();
    };
    runc.stdout?.on('data', collect);
    runc.stderr?.on('data', collect);
    let sawUnready = false;
    for (;;) {
      assert.ok(Date.now() - start < 900_000, `no /healthz in 15 min:\n${consoleLog.slice(-4000)}`);
      assert.equal(runc.exitCode, null, `the container stopped:\n${consoleLog.slice(-4000)}`);
      const before = consoleLog;
      const r = exec(probe);
      if (r.status === 0) {
        // The guest said what it became before the container said it was up.
        assert.ok(before.includes(`${GUEST_REPORT_PREFIX}hostname=`), 'healthy before the guest reported');
        break;
      }
      if (consoleLog.includes('qemu-system-x86_64 ')) sawUnready = true;
      await sleep(1_000);
    }
    t.boot = Date.now() - start;
    assert.ok(sawUnready, 'the probe failed while QEMU ran and the guest was not up yet');
    console.log(
      `# vm-image: build ${(t.build / 1000).toFixed(0)} s, unpack ${(t.unpack / 1000).toFixed(0)} s, boot to /healthz ${(t.boot / 1000).toFixed(1)} s`,
    );
    console.log(`# vm-image: ${/\[vm\] accelerator: .*/.exec(consoleLog)?.[0]}`);
  });

  it('the guest took the hostname and the SSH user its Ignition config asked for, and the pod address by DHCP', () => {
    const report = consoleLog
      .split('\n')
      .map((l) => l.slice(l.indexOf(GUEST_REPORT_PREFIX)))
      .filter((l) => l.startsWith(GUEST_REPORT_PREFIX))
      .map((l) => l.slice(GUEST_REPORT_PREFIX.length).trim());
    assert.ok(report.includes(`hostname=${POD_NAME}`), report.join('\n'));
    assert.ok(
      report.some((l) => /^user=core groups=.*\bsudo\b/.test(l) && /\bdocker\b/.test(l)),
      report.join('\n'),
    );
    assert.ok(report.includes(`user=core key=${SSH_KEY}`), report.join('\n'));
    assert.ok(report.includes(`address=${POD_IP}/24`), report.join('\n'));
    assert.ok(
      report.some((l) => /^mount=\/var\/lib\/containerd \/dev\/vd\w,xfs$/.test(l)),
      report.join('\n'),
    );
  });

  it("the pod's address reaches the guest from the node's side", () => {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', NODE_NS, '/bin/busybox', 'ping', '-c', '2', '-W', '5', POD_IP],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

  it('preStop powers the guest off over QMP within the grace period, and the container ends', async () => {
    const start = Date.now();
    const r = exec([...VM_SHUTDOWN_COMMAND], TERMINATION_GRACE_SECONDS * 1000);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const code = await Promise.race([exited, sleep(60_000).then(() => 'still running')]);
    const seconds = (Date.now() - start) / 1000;
    assert.equal(code, 0, `the container: ${code}\n${consoleLog.slice(-3000)}`);
    assert.ok(seconds < TERMINATION_GRACE_SECONDS, `${seconds} s`);
    assert.match(consoleLog, /reboot: Power down/);
    console.log(`# vm-image: preStop to powered off ${seconds.toFixed(1)} s`);
  });
});
