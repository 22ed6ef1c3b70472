// Local clusters: a real control plane (through kwokctl's binary runtime) plus
// a simulated fleet of nodes, kept under one state folder per cluster so that
// `down` then `up` brings back every object (etcd's data stays on disk).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, type V1Node } from '@kubernetes/client-node';
import { KubeClient } from '../runtime/client.ts';
import { type K8sObject, Nodes } from '../runtime/resources.ts';
import { fleetNodes, fleetSize, Labels, type Pool } from './fleet.ts';
// Every local cluster carries the simulated cloud its nodes are instances of.
import './infra/cloud/addon.ts';
import { isReady } from '../runtime/conditions.ts';
import { type InfraContext, registeredInfrastructure } from './infra/index.ts';
import { Kwokctl } from './kwokctl.ts';
import { type BinPaths, controlPlaneBinaries, pinnedVersions } from './toolchain.ts';

export type Progress = (message: string) => void;

export interface UpOptions {
  name: string;
  /** The fleet; when omitted, a restarted cluster keeps the fleet it was created with. */
  pools?: Pool[];
  /** Pin the API server's port (default: a free one). */
  port?: number;
  timeoutMs?: number;
  /** Extra component flags at creation, as kwokctl's component=flag=value (e.g. kube-apiserver=v=4). */
  extraArgs?: string[];
  /** How long a machine the simulated cloud launches takes to boot (default 5 s; kept across restarts). */
  bootDelayMs?: number;
  signal?: AbortSignal;
  progress?: Progress;
}

export interface ClusterInfo {
  name: string;
  state: 'running' | 'stopped' | 'absent';
  kubeconfig: string;
  server?: string;
  serverVersion?: string;
  nodes?: { total: number; ready: number };
  /** The simulated cloud, while it runs. */
  cloud?: { endpoint: string };
  logs: string;
}

/** What we record next to kwokctl's own files, so a restart knows its fleet. */
interface ClusterRecord {
  pools: Pool[];
  createdAt: string;
  kubeVersion: string;
  /** Set once the fleet's nodes exist; from then on their set is the cloud's to change. */
  fleetCreated?: boolean;
}

export const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/;

/** Cluster state lives here; binaries live in the build cache instead. */
export function stateDir(): string {
  return (
    process.env.NODEWARDEN_STATE_DIR ??
    join(process.env.XDG_STATE_HOME ?? join(homedir(), '.local', 'state'), 'nodewarden')
  );
}

/** The folder of a cluster's add-on (see infra/index.ts). */
export function infraDir(cluster: string, addon: string): string {
  return join(stateDir(), 'clusters', cluster, 'infra', addon);
}

export class LocalClusters {
  private readonly kwokctl: Kwokctl;
  private readonly bins: BinPaths;

  private constructor(kwokctl: Kwokctl, bins: BinPaths) {
    this.kwokctl = kwokctl;
    this.bins = bins;
  }

  /** Builds (or finds in the cache) the control plane, then manages clusters with it. */
  static async open(opts: { quiet?: boolean } = {}): Promise<LocalClusters> {
    const bins = await controlPlaneBinaries(opts);
    return new LocalClusters(new Kwokctl(bins, stateDir()), bins);
  }

  binaries(): BinPaths {
    return this.bins;
  }

  dir(name: string): string {
    return this.kwokctl.clusterDir(name);
  }

  kubeconfigPath(name: string): string {
    return join(this.dir(name), 'kubeconfig.yaml');
  }

  exists(name: string): boolean {
    return existsSync(join(this.dir(name), 'kwok.yaml'));
  }

  list(): string[] {
    const root = join(this.kwokctl.workdir, 'clusters');
    if (!existsSync(root)) return [];
    return readdirSync(root).filter((n) => this.exists(n));
  }

  async up(opts: UpOptions): Promise<ClusterInfo> {
    const { name } = opts;
    const say = opts.progress ?? (() => {});
    checkName(name);
    const started = Date.now();
    const record = this.readRecord(name);
    let pools = opts.pools ?? record?.pools;
    if (!pools) throw new Error(`cluster "${name}" has no fleet yet: give --nodes or --pools`);
    if (opts.port !== undefined) await assertPortFree(opts.port);

    const fresh = !this.exists(name);
    if (!fresh && record && opts.pools && JSON.stringify(opts.pools) !== JSON.stringify(record.pools)) {
      say(
        `cluster "${name}" keeps the fleet it was created with; --nodes and --pools apply on creation only`,
      );
      pools = record.pools;
    }
    const signal = opts.signal;
    const kubeVersion = pinnedVersions().kube;
    try {
      if (!fresh) {
        say(`starting cluster "${name}" from its saved state`);
        await this.kwokctl.mustRun(['--name', name, 'start', 'cluster', '--wait', '60s'], { signal });
      } else {
        mkdirSync(this.kwokctl.workdir, { recursive: true });
        const config = join(this.kwokctl.workdir, `kwokctl-${name}.yaml`);
        this.kwokctl.writeConfig(config);
        say(
          `creating cluster "${name}" (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)`,
        );
        const args = ['--name', name, '-c', config, 'create', 'cluster', '--kubeconfig', '', '--wait', '60s'];
        if (opts.port !== undefined) args.push('--kube-apiserver-port', String(opts.port));
        for (const a of opts.extraArgs ?? []) args.push('--extra-args', a);
        await this.kwokctl.mustRun(args, { signal });
      }
      signal?.throwIfAborted();
      const kc = this.kubeConfig(name);
      await waitForApi(kc, opts.timeoutMs ?? 60_000, signal);
      say(`control plane ready in ${((Date.now() - started) / 1000).toFixed(1)}s`);

      const next: ClusterRecord = {
        pools,
        createdAt: record?.createdAt ?? new Date().toISOString(),
        kubeVersion,
        fleetCreated: !fresh && record?.fleetCreated === true,
      };
      this.writeRecord(name, next);
      const client = clusterClient(kc);
      let ready: number;
      try {
        // The fleet is created once, with the cluster. After that its nodes are the
        // cloud's: a rolling upgrade replaces them under new names, and a restart
        // must not bring the old names back.
        let want = 0;
        if (!next.fleetCreated) {
          const created = await ensureNodes(client, fleetNodes(pools, kubeVersion), signal);
          if (created > 0) say(`created ${created} simulated nodes`);
          want = fleetSize(pools);
          this.writeRecord(name, { ...next, fleetCreated: true });
        }
        ready = await waitForReadyNodes(client, want, opts.timeoutMs ?? 120_000, say, signal);
      } finally {
        client.close();
      }
      say(`cluster "${name}" up with ${ready} Ready nodes in ${((Date.now() - started) / 1000).toFixed(1)}s`);
      for (const addon of registeredInfrastructure()) {
        say(`starting simulated ${addon.name}`);
        const ctx = this.infraContext(name, addon.name);
        mkdirSync(ctx.dir, { recursive: true });
        await addon.up({ ...ctx, bootDelayMs: opts.bootDelayMs, progress: say });
        signal?.throwIfAborted();
      }
      return await this.status(name);
    } catch (err) {
      // Interrupted (Ctrl-C): leave no processes behind. A cluster we were creating
      // is removed, like kind does; one we were restarting is stopped with its data.
      if (signal?.aborted) {
        if (fresh) await this.delete(name).catch(() => {});
        else {
          await this.stopInfrastructure(name).catch(() => {});
          await this.kwokctl.run(['--name', name, 'stop', 'cluster']);
        }
      }
      throw err;
    }
  }

  private infraContext(name: string, addon: string): InfraContext {
    const dir = infraDir(name, addon);
    const record = this.readRecord(name);
    return {
      cluster: name,
      kubeconfig: this.kubeconfigPath(name),
      dir,
      pools: record?.pools ?? [],
      kubernetesVersion: record?.kubeVersion ?? pinnedVersions().kube,
    };
  }

  /** Stops every add-on, last started first; stopping one that does not run is a no-op. */
  private async stopInfrastructure(name: string): Promise<void> {
    for (const addon of [...registeredInfrastructure()].reverse()) {
      await addon.down(this.infraContext(name, addon.name));
    }
  }

  /** Stops every process of the cluster; its data stays for the next `up`. */
  async down(name: string): Promise<void> {
    checkName(name);
    if (!this.exists(name)) throw new Error(`no cluster named "${name}"`);
    await this.stopInfrastructure(name);
    await this.kwokctl.mustRun(['--name', name, 'stop', 'cluster']);
  }

  /** Stops the cluster and removes all of its data. */
  async delete(name: string): Promise<void> {
    checkName(name);
    if (!existsSync(this.dir(name))) return;
    // Add-ons first: their processes live outside kwokctl's knowledge.
    await this.stopInfrastructure(name);
    // kwokctl also removes the cluster's context from the kubeconfig it is given; we never
    // added one elsewhere, so point it at the cluster's own file, which goes with it.
    if (this.exists(name)) {
      await this.kwokctl.mustRun([
        '--name',
        name,
        'delete',
        'cluster',
        '--kubeconfig',
        this.kubeconfigPath(name),
      ]);
    }
    // What kwokctl does not know of (our record, the add-ons' state) must not outlive
    // the cluster, or a new cluster of the same name would inherit it.
    rmSync(this.dir(name), { recursive: true, force: true });
  }

  async status(name: string): Promise<ClusterInfo> {
    checkName(name);
    const info: ClusterInfo = {
      name,
      state: 'absent',
      kubeconfig: this.kubeconfigPath(name),
      logs: join(this.dir(name), 'logs'),
    };
    if (!this.exists(name)) return info;
    info.state = 'stopped';
    const kc = this.kubeConfig(name);
    info.server = kc.getCurrentCluster()?.server;
    const client = clusterClient(kc, { probe: true });
    try {
      const version = await client.request<{ gitVersion?: string }>({ method: 'GET', path: '/version' });
      info.state = 'running';
      info.serverVersion = version.gitVersion;
      const nodes = await client.listAll<NodeLike>(Nodes);
      info.nodes = { total: nodes.items.length, ready: nodes.items.filter(isReady).length };
      const cloud = registeredInfrastructure().find((a) => a.name === 'cloud');
      const endpoint = await cloud?.endpoint?.(this.infraContext(name, cloud.name));
      if (endpoint) info.cloud = { endpoint };
    } catch {
      // not answering: stopped (or starting)
    } finally {
      client.close();
    }
    return info;
  }

  kubeConfig(name: string): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath(name));
    return kc;
  }

  private readRecord(name: string): ClusterRecord | undefined {
    const path = join(this.dir(name), 'nodewarden.json');
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as ClusterRecord) : undefined;
  }

  private writeRecord(name: string, record: ClusterRecord): void {
    writeFileSync(join(this.dir(name), 'nodewarden.json'), `${JSON.stringify(record, null, 2)}\n`);
  }
}

function checkName(name: string): void {
  if (!CLUSTER_NAME.test(name)) {
    throw new Error(`cluster name "${name}" must be a DNS label of at most 32 characters`);
  }
}

type NodeLike = Pick<V1Node, 'status'>;

export { isReady };

async function assertPortFree(port: number): Promise<void> {
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

/** Our client for the cluster's own housekeeping: one keep-alive pool; no waiting when probing. */
function clusterClient(kc: KubeConfig, opts: { probe?: boolean } = {}): KubeClient {
  return KubeClient.fromKubeConfig(kc, {
    qps: 0,
    userAgent: 'nodewarden-cluster',
    ...(opts.probe ? { maxRetries: 0, requestTimeoutMs: 2000 } : {}),
  });
}

async function waitForApi(kc: KubeConfig, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  const client = clusterClient(kc, { probe: true });
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

/** Creates the nodes that do not exist yet, many at a time; returns how many were created. */
async function ensureNodes(client: KubeClient, nodes: V1Node[], signal?: AbortSignal): Promise<number> {
  const existing = new Set(
    (await client.listAll(Nodes, { labelSelector: Labels.pool })).items.map((n) => n.metadata?.name),
  );
  const todo = nodes.filter((n) => !existing.has(n.metadata?.name));
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      signal?.throwIfAborted();
      const node = todo[next++]!;
      await client.createIfAbsent(Nodes, node as K8sObject);
    }
  };
  await Promise.all(Array.from({ length: Math.min(32, todo.length) }, worker));
  return todo.length;
}

/**
 * Waits until at least `min` fleet nodes exist and all of them are Ready (kwok
 * takes over the nodes of a restarted cluster). Returns how many are Ready.
 */
async function waitForReadyNodes(
  client: KubeClient,
  min: number,
  timeoutMs: number,
  say: Progress,
  signal?: AbortSignal,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let lastSaid = '';
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    const nodes = await client.listAll<NodeLike>(Nodes, { labelSelector: Labels.pool });
    const ready = nodes.items.filter(isReady).length;
    const want = Math.max(min, nodes.items.length);
    if (ready >= want) return ready;
    const said = `${ready}/${want} nodes Ready`;
    if (said !== lastSaid) {
      say(said);
      lastSaid = said;
    }
    await sleep(200);
  }
  throw new Error(`nodes did not all become Ready within ${timeoutMs / 1000}s; see the kwok log`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
