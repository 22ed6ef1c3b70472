// Where the control-plane binaries come from: hack/build-controlplane.sh builds
// them from the Go module proxy into a cache keyed by the pins in
// hack/versions.env, and prints the folder. A warm cache answers at once.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The repository root: src/cluster/ and dist/cluster/ are both two levels down. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Built by one script from one module: kubelet and kube-proxy are a real node's, same version as the rest. */
export const CONTROL_PLANE_BINARIES = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubectl',
  'kubelet',
  'kube-proxy',
  'etcd',
  'kwok',
  'kwokctl',
] as const;
export type Binary = (typeof CONTROL_PLANE_BINARIES)[number];

export interface Versions {
  kube: string;
  etcd: string;
  kwok: string;
  node: string;
  containerd: string;
  coredns: string;
  pause: string;
}

/** The pins, read from the one file that holds them. */
export function pinnedVersions(): Versions {
  const text = readFileSync(join(REPO_ROOT, 'hack', 'versions.env'), 'utf8');
  const get = (key: string): string => {
    const m = new RegExp(`^${key}=(\\S+)`, 'm').exec(text);
    if (!m?.[1]) throw new Error(`hack/versions.env has no ${key}`);
    return m[1];
  };
  return {
    kube: get('KUBE_VERSION'),
    etcd: get('ETCD_VERSION'),
    kwok: get('KWOK_VERSION'),
    node: get('NODE_VERSION'),
    containerd: get('CONTAINERD_VERSION'),
    coredns: get('COREDNS_VERSION'),
    pause: get('PAUSE_VERSION'),
  };
}

export type BinPaths = Record<Binary, string>;

/**
 * The folder of built binaries. NODEWARDEN_BIN_DIR overrides (for binaries built
 * elsewhere); otherwise the build script runs, showing its progress on stderr
 * when it has to build.
 */
export async function controlPlaneBinaries(opts: { quiet?: boolean } = {}): Promise<BinPaths> {
  let dir = process.env.NODEWARDEN_BIN_DIR;
  if (!dir) {
    dir = await runBuildScript('build-controlplane.sh', opts.quiet ?? false);
  }
  const paths = Object.fromEntries(CONTROL_PLANE_BINARIES.map((b) => [b, join(dir, b)])) as BinPaths;
  const missing = CONTROL_PLANE_BINARIES.filter((b) => !existsSync(paths[b]));
  if (missing.length > 0) {
    throw new Error(
      `control-plane binaries missing in ${dir}: ${missing.join(', ')} (run make controlplane)`,
    );
  }
  return paths;
}

/** What a real node runs besides kubelet and kube-proxy, built by hack/build-node-runtime.sh. */
export interface NodeRuntimePaths {
  /** The folder the script printed. */
  dir: string;
  containerd: string;
  ctr: string;
  /** containerd-shim-runc-v2: containerd finds it next to itself or on PATH. */
  shim: string;
  coredns: string;
  /** Static: the sandbox image's one file, and each node's namespace holder. */
  pause: string;
  /** The tests' workload: serve, prestop, get, resolve (hack/noderuntime/testapp). */
  testapp: string;
  /** OCI archives for `ctr -n k8s.io images import`, each importing under its name in imageNames. */
  images: NodeImages;
  imageNames: NodeImages;
}

export interface NodeImages {
  /** The sandbox image kubelet's pods run (containerd's pinned sandbox). */
  pause: string;
  coredns: string;
  testapp: string;
}

/** The names the node runtime's images import under: kubeadm's pause name, localhost/ for ours. */
export function nodeImageNames(versions: Versions, appVersion: string): NodeImages {
  return {
    pause: `registry.k8s.io/pause:${versions.pause}`,
    coredns: `localhost/coredns:${versions.coredns}`,
    testapp: `localhost/nodewarden-testapp:${appVersion}`,
  };
}

/** The node runtime's folder, built (or found cached) by its script as the control plane's is. */
export async function nodeRuntime(opts: { quiet?: boolean } = {}): Promise<NodeRuntimePaths> {
  const dir = await runBuildScript('build-node-runtime.sh', opts.quiet ?? false);
  const paths: NodeRuntimePaths = {
    dir,
    containerd: join(dir, 'containerd'),
    ctr: join(dir, 'ctr'),
    shim: join(dir, 'containerd-shim-runc-v2'),
    coredns: join(dir, 'coredns'),
    pause: join(dir, 'pause'),
    testapp: join(dir, 'testapp'),
    images: {
      pause: join(dir, 'images', 'pause.tar'),
      coredns: join(dir, 'images', 'coredns.tar'),
      testapp: join(dir, 'images', 'testapp.tar'),
    },
    imageNames: nodeImageNames(pinnedVersions(), appVersion()),
  };
  const { images, imageNames: _, ...binaries } = paths;
  const missing = [...Object.values(binaries), ...Object.values(images)].filter((p) => !existsSync(p));
  if (missing.length > 0) {
    throw new Error(`node runtime incomplete, missing: ${missing.join(', ')} (run make node-runtime)`);
  }
  return paths;
}

/** Runs a hack/build-*.sh script; its last line of output is the folder it built or found. */
function runBuildScript(script: string, quiet: boolean): Promise<string> {
  return lastLineOf('bash', [join(REPO_ROOT, 'hack', script)], quiet).catch((err: Error) => {
    throw new Error(`hack/${script} failed (${err.message}); see its output above`);
  });
}

/**
 * Runs a command and answers the last line it printed. WHY on 'close', not 'exit': 'exit' may
 * come before the last of stdout is read; the soak's libvirt share then read no folder from a
 * build script that had printed one and exited 0 ("failed (exit 0)", seed 7).
 */
export function lastLineOf(command: string, args: string[], quiet: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', quiet ? 'ignore' : 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code === 0 && line) resolve(line);
      else reject(new Error(code === 0 ? 'exit 0 with nothing printed' : `exit ${code}`));
    });
  });
}

/** nodewarden's own version, from package.json. */
export function appVersion(): string {
  return (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The version a built binary reports, e.g. for `nodewarden version`. */
export async function binaryVersion(path: string): Promise<string> {
  const { stdout } = await promisify(execFile)(path, ['--version']);
  return stdout.trim().split('\n')[0] ?? '';
}
