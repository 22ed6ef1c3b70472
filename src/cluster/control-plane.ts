// Control planes (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok) through kwokctl's binary runtime, each kept under
// <workdir>/clusters/<name>/ so that stop then start brings back every object.
// No fleet and no add-ons: local-cluster.ts builds clusters on this, and a
// simulator (a hypervisor's nested clusters) can run its own under its folder.
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { stateDir } from '../cli/local-state.ts';
import { KubeClient } from '../runtime/client.ts';
import { type KubeConfigSource, KubeConfig as LiteKubeConfig } from '../runtime/kubeconfig.ts';
import { Kwokctl } from './kwokctl.ts';
import { clearNodeLeases, leasesLeftBehind, listNodeLeases } from './node-leases.ts';
import type { ControlPlaneAdditions } from './real-nodes/control-plane.ts';
import { type BinPaths, controlPlaneBinaries } from './toolchain.ts';

export const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/;

/** kwokctl's name for the kwok process (its pid file is pids/kwok-controller.pid). */
const KWOK_COMPONENT = 'kwok-controller';

// Where cluster state lives is a leaf the command kit reads too (to name a stopped cluster).
export { stateDir };

/** The folder of a local cluster's add-on (see infra/index.ts). */
export function infraDir(cluster: string, addon: string): string {
  return join(stateDir(), 'clusters', cluster, 'infra', addon);
}

export function checkName(name: string): void {
  if (!CLUSTER_NAME.test(name)) {
    throw new Error(`cluster name "${name}" must be a DNS label of at most 32 characters`);
  }
}

export interface CreateOptions {
  /** Pin the API server's port (default: a free one); see assertPortFree for a friendly refusal. */
  port?: number;
  /** Extra component flags, as kwokctl's component=flag=value (e.g. kube-apiserver=v=4). */
  extraArgs?: string[];
  /** For a cluster with real nodes: the API server's and kwok's additions. */
  additions?: ControlPlaneAdditions;
  signal?: AbortSignal;
}

/**
 * Where the control planes under one folder keep their files, read without their binaries: a
 * look at clusters (list, status, delete of one that is not there) must not build them.
 */
export class ControlPlaneFolders {
  readonly workdir: string;

  constructor(workdir: string = stateDir()) {
    this.workdir = workdir;
  }

  dir(name: string): string {
    return join(this.workdir, 'clusters', name);
  }

  kubeconfigPath(name: string): string {
    return join(this.dir(name), 'kubeconfig.yaml');
  }

  /** kwokctl's configuration the control plane was created from, next to the clusters' folder. */
  configPath(name: string): string {
    return join(this.workdir, `kwokctl-${name}.yaml`);
  }

  exists(name: string): boolean {
    return existsSync(join(this.dir(name), 'kwok.yaml'));
  }

  /** Nothing of it on disk, not even what an interrupted creation leaves. */
  absent(name: string): boolean {
    return !existsSync(this.dir(name)) && !existsSync(this.configPath(name));
  }

  list(): string[] {
    const root = join(this.workdir, 'clusters');
    if (!existsSync(root)) return [];
    return readdirSync(root).filter((n) => this.exists(n));
  }
}

/** The control planes under one folder, by name. */
export class ControlPlanes {
  private readonly kwokctl: Kwokctl;
  private readonly folders: ControlPlaneFolders;
  readonly bins: BinPaths;

  constructor(bins: BinPaths, workdir: string) {
    this.folders = new ControlPlaneFolders(workdir);
    this.kwokctl = new Kwokctl(bins, workdir);
    this.bins = bins;
  }

  /** Builds (or finds in the cache) the binaries; control planes live under `workdir` (default stateDir()). */
  static async open(opts: { quiet?: boolean; workdir?: string } = {}): Promise<ControlPlanes> {
    return new ControlPlanes(await controlPlaneBinaries(opts), opts.workdir ?? stateDir());
  }

  get workdir(): string {
    return this.folders.workdir;
  }

  dir(name: string): string {
    return this.folders.dir(name);
  }

  kubeconfigPath(name: string): string {
    return this.folders.kubeconfigPath(name);
  }

  exists(name: string): boolean {
    return this.folders.exists(name);
  }

  list(): string[] {
    return this.folders.list();
  }

  /**
   * client-node's KubeConfig, for callers of its generated API clients (tests, benches).
   * Loaded on first call: the import alone costs ~85 MiB RSS, which no command should pay.
   */
  kubeConfig(name: string): KubeConfig {
    const { KubeConfig: Full } = createRequire(import.meta.url)(
      '@kubernetes/client-node',
    ) as typeof import('@kubernetes/client-node');
    const kc = new Full();
    kc.loadFromFile(this.kubeconfigPath(name));
    return kc;
  }

  /** The cluster's kubeconfig read by our own reader: what our KubeClient needs. */
  clientConfig(name: string): LiteKubeConfig {
    const kc = new LiteKubeConfig();
    kc.loadFromFile(this.kubeconfigPath(name));
    return kc;
  }

  /** Creates and starts a new control plane; resolves once kwokctl saw its components up. */
  async create(name: string, opts: CreateOptions = {}): Promise<void> {
    checkName(name);
    mkdirSync(this.workdir, { recursive: true });
    const config = this.configPath(name);
    this.kwokctl.writeConfig(config, opts.additions);
    const args = ['--name', name, '-c', config, 'create', 'cluster', '--kubeconfig', '', '--wait', '60s'];
    if (opts.port !== undefined) args.push('--kube-apiserver-port', String(opts.port));
    for (const a of opts.extraArgs ?? []) args.push('--extra-args', a);
    await this.kwokctl.mustRun(args, { signal: opts.signal });
  }

  /** Starts a stopped control plane from its saved state. */
  async start(name: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    checkName(name);
    await this.kwokctl.mustRun(['--name', name, 'start', 'cluster', '--wait', '60s'], opts);
  }

  /**
   * After a restart, gives the nodes to the kwok that now runs (see node-leases.ts):
   * if an earlier kwok left node leases (created before `since`), stop kwok, delete
   * every node lease, and start kwok again, which creates them anew and plays every
   * pod. Returns when kwok was restarted, or undefined when nothing was left behind.
   */
  async handOverNodes(name: string, client: KubeClient, since: number): Promise<number | undefined> {
    if (leasesLeftBehind((await listNodeLeases(client)).leases, since).length === 0) return undefined;
    await this.kwokctl.stopComponent(name, KWOK_COMPONENT);
    let restarted = Date.now();
    try {
      // Every node lease goes, also any the stopped kwok created in its short life: it would bind the next one too.
      await clearNodeLeases(client);
    } finally {
      // Started again whatever happened: a cluster is never left without its kwok.
      restarted = Date.now();
      await this.start(name); // starts only what does not run: kwok
    }
    return restarted;
  }

  /** Stops its processes; the data stays for the next start. */
  async stop(name: string, opts: { bestEffort?: boolean } = {}): Promise<void> {
    const args = ['--name', name, 'stop', 'cluster'];
    if (opts.bestEffort) await this.kwokctl.run(args);
    else await this.kwokctl.mustRun(args);
  }

  private configPath(name: string): string {
    return this.folders.configPath(name);
  }

  /** Stops it and removes kwokctl's data and configuration (not what others keep in its folder). */
  async delete(name: string): Promise<void> {
    checkName(name);
    rmSync(this.configPath(name), { force: true });
    if (!this.exists(name)) return;
    // kwokctl also removes the cluster's context from the kubeconfig it is given; we never
    // added one elsewhere, so point it at the cluster's own file, which goes with it.
    await this.kwokctl.mustRun([
      '--name',
      name,
      'delete',
      'cluster',
      '--kubeconfig',
      this.kubeconfigPath(name),
    ]);
  }

  /** Waits until the API server answers. */
  async waitForApi(name: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const client = clusterClient(this.clientConfig(name), { probe: true });
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    try {
      while (Date.now() < deadline) {
        signal?.throwIfAborted();
        try {
          await client.request({ method: 'GET', path: '/version' });
          return;
        } catch (err) {
          last = err;
          await sleep(100);
        }
      }
    } finally {
      client.close();
    }
    throw new Error(`the API server did not answer within ${timeoutMs / 1000}s: ${String(last)}`);
  }
}

/** Refuses a port something on 127.0.0.1 holds already, with a message saying what to do. */
export async function assertPortFree(port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `port ${port} on 127.0.0.1 is already taken; choose another --port or stop what holds it`
            : `cannot use port ${port}: ${err.message}`,
        ),
      ),
    );
    server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
  });
}

/** Our client for a cluster's own housekeeping: one keep-alive pool; no waiting when probing. */
export function clusterClient(kc: KubeConfigSource, opts: { probe?: boolean } = {}): KubeClient {
  return KubeClient.fromKubeConfig(kc, {
    qps: 0,
    userAgent: 'nodewarden-cluster',
    ...(opts.probe ? { maxRetries: 0, requestTimeoutMs: 2000 } : {}),
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
