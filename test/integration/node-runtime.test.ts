// What a real node runs, as hack/build-controlplane.sh and hack/build-node-runtime.sh
// build it, judged by the binaries themselves: the versions they report; the
// built containerd started from the configuration src/cluster/real-nodes/
// renders, reading it as written, importing the three images under the names
// kubelet and pods ask for, and running the test app in real containers
// (runc) — then stopped, leaving no process, mount or cgroup behind.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildImage } from '../../src/cluster/image/oci.ts';
import { operatorImageName } from '../../src/cluster/image/operator-image.ts';
import { renderContainerdConfig } from '../../src/cluster/real-nodes/containerd-config.ts';
import {
  appVersion,
  controlPlaneBinaries,
  type NodeRuntimePaths,
  nodeRuntime,
  pinnedVersions,
} from '../../src/cluster/toolchain.ts';

const versions = pinnedVersions();
/** stdout; stderr only in the error when it fails (containerd's clients warn about cgroup v1 on every call). */
const output = (file: string, args: string[]) =>
  execFileSync(file, args, { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });

describe('the node binaries as built', () => {
  it('kubelet and kube-proxy report the control plane’s Kubernetes version', async () => {
    const bins = await controlPlaneBinaries({ quiet: true });
    assert.equal(output(bins.kubelet, ['--version']).trim(), `Kubernetes ${versions.kube}`);
    assert.equal(output(bins['kube-proxy'], ['--version']).trim(), `Kubernetes ${versions.kube}`);
  });

  it('containerd, ctr and the shim report the pinned containerd, CoreDNS and pause theirs', async () => {
    const rt = await nodeRuntime({ quiet: true });
    const containerd = `github.com/containerd/containerd/v2 ${versions.containerd}`;
    assert.match(output(rt.containerd, ['--version']), new RegExp(`^containerd ${containerd}`));
    assert.match(output(rt.ctr, ['--version']), new RegExp(`^ctr ${containerd}`));
    assert.match(output(rt.shim, ['-v']), new RegExp(`Version: +${versions.containerd}\\n`));
    assert.match(output(rt.coredns, ['-version']), new RegExp(`^CoreDNS-${versions.coredns.slice(1)}\\n`));
    assert.equal(output(rt.pause, ['-v']).trim(), `pause.c ${versions.pause}`);
  });
});

const skip =
  process.getuid?.() !== 0
    ? 'containerd and runc run containers as root only on these machines'
    : !existsSync('/usr/sbin/runc')
      ? 'no /usr/sbin/runc (hack/debian-packages.sh installs runc)'
      : false;
if (skip) console.log(`# node-runtime: containerd not started: ${skip}`);

/** Host paths containerd would use by default; the rendered configuration must keep it off every one. */
const HOST_PATHS = [
  '/etc/containerd',
  '/etc/cni/net.d',
  '/etc/cdi',
  '/var/run/cdi',
  '/var/run/nri',
  '/var/lib/containerd',
  '/opt/nri',
];
/**
 * The one host folder containerd uses whatever its configuration says: its shims' sockets go under
 * /run/containerd/s (a constant in containerd). Allowed, if empty once containerd stops; anything
 * else under /run/containerd is judged. WHY: on a fresh machine (no /run/containerd before) ctr's
 * default FIFO folder and the runc root also appeared there, until the runs named their own.
 */
const RUN_DIR = '/run/containerd';
const SHIM_SOCKETS = '/run/containerd/s';

/** Every path under root (root included), or none when it does not exist. */
function treeOf(root: string): string[] {
  if (!existsSync(root)) return [];
  return [root, ...readdirSync(root, { recursive: true }).map((p) => join(root, String(p)))];
}
const CGROUP_ROOT = '/sys/fs/cgroup';
/** The containers' cgroup parent, removed from every hierarchy at the end. */
const CGROUP_PARENT = `nwtest-node-runtime-${process.pid}`;

describe('containerd started from the rendered configuration', { skip }, () => {
  let rt: NodeRuntimePaths;
  const dir = mkdtempSync(join(tmpdir(), 'nw-node-runtime-'));
  const sock = join(dir, 'containerd.sock');
  const config = join(dir, 'config.toml');
  const hostPathsBefore = HOST_PATHS.filter((p) => existsSync(p));
  const runBefore = treeOf(RUN_DIR);
  let containerd: ChildProcess | undefined;
  const ctr = (...args: string[]) => output(rt.ctr, ['-a', sock, '-n', 'k8s.io', ...args]);

  before(async () => {
    rt = await nodeRuntime({ quiet: true });
    writeFileSync(
      config,
      renderContainerdConfig({
        root: join(dir, 'root'),
        state: join(dir, 'state'),
        grpcAddress: sock,
        ttrpcAddress: `${sock}.ttrpc`,
        cniConfDir: join(dir, 'cni'),
        sandboxImage: rt.imageNames.pause,
      }),
    );
  });

  after(async () => {
    // A failed test still leaves nothing: the same steps as the last test, without its checks.
    await stopContainerd(containerd);
    removeCgroups();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the configuration as written: no unknown key, no migration, the values it set', () => {
    const { stdout: dump, stderr } = spawnSync(rt.containerd, ['--config', config, 'config', 'dump'], {
      encoding: 'utf8',
    });
    for (const line of [
      `root = '${dir}/root'`,
      `state = '${dir}/state'`,
      `address = '${sock}'`,
      `address = '${sock}.ttrpc'`,
      `sandbox = '${rt.imageNames.pause}'`,
      'restrict_oom_score_adj = true',
      "BinaryName = '/usr/sbin/runc'",
      'SystemdCgroup = false',
      `conf_dir = '${dir}/cni'`,
    ]) {
      assert.ok(
        dump.split('\n').some((l) => l.trim() === line),
        `config dump lacks ${line}`,
      );
    }
    assert.doesNotMatch(stderr, /unknown key|migrated/i);
  });

  it('starts and answers ctr version', async () => {
    const log = openSync(join(dir, 'containerd.log'), 'a');
    containerd = spawn(rt.containerd, ['--config', config], { stdio: ['ignore', log, log] });
    const server = await waitFor(() => ctr('version'), 30_000);
    assert.match(server, new RegExp(`Server:\\n +Version: +${versions.containerd}`));
  });

  it('imports the three images under the names kubelet and pods ask for', () => {
    for (const archive of Object.values(rt.images)) ctr('images', 'import', archive);
    const names = ctr('images', 'ls', '-q')
      .split('\n')
      .filter((n) => n && !n.startsWith('sha256:'));
    assert.deepEqual(names.sort(), Object.values(rt.imageNames).sort());
    assert.match(
      ctr('images', 'ls'),
      /registry\.k8s\.io\/pause:3\.10\.2 .*io\.cri-containerd\.pinned=pinned/,
    );
  });

  it("imports an archive the operator image's writer makes under the operator's full name", () => {
    const name = operatorImageName(appVersion());
    const image = buildImage({
      names: [name],
      layers: [
        {
          entries: [{ kind: 'file', path: 'hello', mode: 0o644, data: Buffer.from('hi') }],
          createdBy: 'test',
        },
      ],
      config: {},
      created: 0,
    });
    const archive = join(dir, 'operator-like.tar');
    writeFileSync(archive, image.archive);
    ctr('images', 'import', archive);
    assert.ok(ctr('images', 'ls', '-q').split('\n').includes(name), `${name} not listed`);
    // skopeo, which test/integration/image.test.ts reads the real one with, still finds it by tag.
    const inspected = JSON.parse(output('skopeo', ['inspect', `oci-archive:${archive}:${appVersion()}`]));
    assert.equal(inspected.Digest, image.digest);
  });

  it('runs the test app: a hook leaves its proof, resolve and get reach a server in another container', async () => {
    const image = rt.imageNames.testapp;
    // Its own cgroup, FIFO folder and runc root: ctr's defaults are host paths.
    const cgroup = (id: string) => [
      '--cgroup',
      `/${CGROUP_PARENT}/${id}`,
      '--fifo-dir',
      join(dir, 'fifo'),
      '--runc-root',
      join(dir, 'runc'),
    ];
    mkdirSync(join(dir, 'proof'));
    const bind = `type=bind,src=${join(dir, 'proof')},dst=/proof,options=rbind:rw`;
    ctr(
      'run',
      '--rm',
      '--mount',
      bind,
      ...cgroup('hook'),
      image,
      'nw-hook',
      '/testapp',
      'prestop',
      '--file',
      '/proof/log',
    );
    assert.match(readFileSync(join(dir, 'proof', 'log'), 'utf8'), /^\S+ \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);

    const port = await freeLoopbackPort();
    const serveLog = join(dir, 'serve.log');
    const serveArgs = ['serve', '--address', '127.0.0.1', '--port', String(port)];
    ctr(
      'run',
      '-d',
      '--net-host',
      '--log-uri',
      `file://${serveLog}`,
      ...cgroup('serve'),
      image,
      'nw-serve',
      '/testapp',
      ...serveArgs,
    );
    const body = await waitFor(async () => {
      const res = await fetch(`http://127.0.0.1:${port}/`);
      return res.ok ? res.text() : Promise.reject(new Error(`status ${res.status}`));
    }, 15_000);
    assert.equal(body.trim(), hostname());

    const get = ctr(
      'run',
      '--rm',
      '--net-host',
      ...cgroup('get'),
      image,
      'nw-get',
      '/testapp',
      'get',
      `http://127.0.0.1:${port}/healthz`,
    );
    assert.equal(get, '200 OK\nok\n');
    const resolved = ctr(
      'run',
      '--rm',
      '--net-host',
      ...cgroup('resolve'),
      image,
      'nw-resolve',
      '/testapp',
      'resolve',
      'localhost',
    );
    assert.ok(resolved.split('\n').includes('127.0.0.1'), resolved);

    ctr('tasks', 'kill', '--signal', 'SIGTERM', 'nw-serve');
    await waitFor(
      () => (/STOPPED/.test(ctr('tasks', 'ls')) ? 'stopped' : Promise.reject(new Error('running'))),
      15_000,
    );
    ctr('tasks', 'delete', 'nw-serve'); // fails with the task's exit code when not 0
    ctr('containers', 'rm', 'nw-serve');
    const logged = readFileSync(serveLog, 'utf8');
    assert.match(logged, /GET \/ from 127\.0\.0\.1/);
    assert.match(logged, /received SIGTERM, shutting down\n.*stopped\n$/);
  });

  it('stops, leaving no process, mount, cgroup or host path of its own', async () => {
    assert.ok(containerd, 'containerd was not started');
    await stopContainerd(containerd);
    const processes = processesNaming(dir);
    assert.deepEqual(processes, [], `processes left: ${processes.join('\n')}`);
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((l) => l.includes(dir));
    assert.deepEqual(mounts, []);
    removeCgroups();
    const cgroups = readdirSync(CGROUP_ROOT).filter((h) => existsSync(join(CGROUP_ROOT, h, CGROUP_PARENT)));
    assert.deepEqual(cgroups, []);
    assert.deepEqual(
      HOST_PATHS.filter((p) => existsSync(p)),
      hostPathsBefore,
    );
    const newUnderRun = treeOf(RUN_DIR).filter((p) => !runBefore.includes(p));
    assert.deepEqual(
      newUnderRun.filter((p) => p !== RUN_DIR && p !== SHIM_SOCKETS),
      [],
      'left under /run/containerd',
    );
  });
});

/** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
function stopContainerd(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** The containers' cgroups, leaves first, in every hierarchy (runc removes each container's own, not its parent). */
function removeCgroups(): void {
  for (const h of readdirSync(CGROUP_ROOT)) {
    const parent = join(CGROUP_ROOT, h, CGROUP_PARENT);
    if (!existsSync(parent)) continue;
    // A cgroup folder goes with rmdir once empty; its files are the kernel's, not removable.
    for (const child of readdirSync(parent, { withFileTypes: true }).filter((e) => e.isDirectory())) {
      rmdirSync(join(parent, child.name));
    }
    rmdirSync(parent);
  }
}

function processesNaming(path: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .flatMap((pid) => {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
        return cmd.includes(path) ? [`${pid} ${cmd}`] : [];
      } catch {
        return []; // gone meanwhile
      }
    });
}

async function waitFor<T>(probe: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await probe();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
