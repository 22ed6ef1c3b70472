// Local clusters: a real control plane (control-plane.ts) plus a simulated
// fleet of nodes and the simulated infrastructure (add-ons) it was opened
// with, kept under one state folder per cluster so that `down` then `up`
// brings back every object (etcd's data stays on disk).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig, V1Node } from '@kubernetes/client-node';
import type { KubeClient } from '../runtime/client.ts';
import { isReady } from '../runtime/conditions.ts';
import type { KubeConfig as ClientConfig } from '../runtime/kubeconfig.ts';
import { mapConcurrently } from '../runtime/pool.ts';
import { type K8sObject, Leases, Nodes } from '../runtime/resources.ts';
import {
  assertPortFree,
  ControlPlaneFolders,
  ControlPlanes,
  checkName,
  clusterClient,
  infraDir,
  sleep,
} from './control-plane.ts';
import { fleetNodes, fleetSize, Labels, type Pool } from './fleet.ts';
import type { InfraContext, SimulatedInfrastructure } from './infra/index.ts';
import { NODE_LEASE_NAMESPACE, type NodeLease, nodesWithoutHeartbeat } from './node-leases.ts';
import { controlPlaneForRealNodes } from './real-nodes/control-plane.ts';
import { REAL_NODE_LABEL, type RealNodesLayout } from './real-nodes/layout.ts';
import {
  addonsToPublish,
  apiPortOf,
  ensureClusterDns,
  nodeBinaries,
  RELAY_COMMAND,
  realNodesOf,
  recordInClusterEndpoints,
  waitForRealNodes,
} from './real-nodes/local.ts';
import { RealNodes } from './real-nodes/real-nodes.ts';
import { type BinPaths, pinnedVersions } from './toolchain.ts';

export { CLUSTER_NAME, infraDir, stateDir } from './control-plane.ts';

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
  /** The add-ons' own `cluster up` flags (their upFlags), by name without the dashes. */
  infraFlags?: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
  progress?: Progress;
}

export interface ClusterInfo {
  name: string;
  state: 'running' | 'stopped' | 'absent';
  kubeconfig: string;
  server?: string;
  serverVersion?: string;
  /** `real`: how many of them are real (kubelet and containerd) nodes. */
  nodes?: { total: number; ready: number; real: number };
  /** Each add-on that runs, by name (e.g. cloud), with where it answers. */
  infrastructure: Record<string, { endpoint: string; summary?: string }>;
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

export class LocalClusters {
  private readonly planes: ControlPlanes;
  private readonly infrastructure: readonly SimulatedInfrastructure[];

  private constructor(planes: ControlPlanes, infrastructure: readonly SimulatedInfrastructure[]) {
    this.planes = planes;
    this.infrastructure = infrastructure;
  }

  /**
   * Builds (or finds in the cache) the control plane, then manages clusters with it;
   * every cluster carries the given add-ons (the capabilities' simulators), none by default.
   * Open with the same add-ons each time: `down` and `delete` stop only those they were given.
   */
  static async open(
    opts: { quiet?: boolean; infrastructure?: readonly SimulatedInfrastructure[] } = {},
  ): Promise<LocalClusters> {
    const names = new Set<string>();
    for (const addon of opts.infrastructure ?? []) {
      if (names.has(addon.name)) throw new Error(`infrastructure "${addon.name}" given twice`);
      names.add(addon.name);
    }
    return new LocalClusters(await ControlPlanes.open(opts), [...(opts.infrastructure ?? [])]);
  }

  /** The clusters there are, read from the state folder alone (nothing is built for a look). */
  static names(): string[] {
    return new ControlPlaneFolders().list();
  }

  /**
   * What status says of a cluster with nothing on disk, or undefined when something of it is
   * there. WHY static: open() builds the control plane when the cache is cold, and a fresh
   * machine's first `cluster list` or `status` must not start a 25-minute build to say "none".
   */
  static absent(name: string, folders = new ControlPlaneFolders()): ClusterInfo | undefined {
    checkName(name);
    if (!folders.absent(name)) return undefined;
    return absentInfo(name, folders);
  }

  binaries(): BinPaths {
    return this.planes.bins;
  }

  dir(name: string): string {
    return this.planes.dir(name);
  }

  kubeconfigPath(name: string): string {
    return this.planes.kubeconfigPath(name);
  }

  exists(name: string): boolean {
    return this.planes.exists(name);
  }

  list(): string[] {
    return this.planes.list();
  }

  async up(opts: UpOptions): Promise<ClusterInfo> {
    const { name, signal } = opts;
    const say = opts.progress ?? (() => {});
    checkName(name);
    const started = Date.now();
    const record = this.readRecord(name);
    const fresh = !this.exists(name);
    const pools = fleetToRun(name, opts.pools, record, fresh, say);
    const real = realNodesOf(name, this.dir(name), pools);
    if (opts.port !== undefined) await assertPortFree(opts.port);
    try {
      await this.startControlPlane(opts, fresh, say, real);
      signal?.throwIfAborted();
      const kc = this.planes.clientConfig(name);
      await this.planes.waitForApi(name, opts.timeoutMs ?? 60_000, signal);
      say(`control plane ready in ${secondsSince(started)}s`);
      const ready = await this.bringUpFleet(kc, opts, { pools, record, fresh, started }, say);
      // Add-ons first: the real nodes' relay publishes their ports to pods.
      await this.startInfrastructure(name, opts.infraFlags, say, signal);
      if (real) await this.startRealNodes(name, real, opts, say);
      say(
        `cluster "${name}" up with ${ready + (real?.nodes.length ?? 0)} Ready nodes in ${secondsSince(started)}s`,
      );
      return await this.status(name);
    } catch (err) {
      // Interrupted (Ctrl-C): leave no processes behind. A cluster we were creating
      // is removed, like kind does; one we were restarting is stopped with its data.
      if (signal?.aborted) {
        if (fresh) await this.delete(name).catch(() => {});
        else {
          await this.stopInfrastructure(name).catch(() => {});
          if (real) await new RealNodes(real).down().catch(() => {});
          await this.planes.stop(name, { bestEffort: true });
        }
      }
      throw err;
    }
  }

  /** Creates the control plane of a new cluster, or starts a stopped one's from its saved state. */
  private async startControlPlane(
    opts: UpOptions,
    fresh: boolean,
    say: Progress,
    real: RealNodesLayout | undefined,
  ): Promise<void> {
    const { name, signal } = opts;
    if (!fresh) {
      say(`starting cluster "${name}" from its saved state`);
      await this.planes.start(name, { signal });
      return;
    }
    say(`creating cluster "${name}" (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)`);
    await this.planes.create(name, {
      ...(opts.port !== undefined ? { port: opts.port } : {}),
      ...(opts.extraArgs ? { extraArgs: opts.extraArgs } : {}),
      ...(real ? { additions: controlPlaneForRealNodes(real, this.dir(name)) } : {}),
      ...(signal ? { signal } : {}),
    });
  }

  /**
   * Starts the real nodes (network, relays, kubelets), waits for them, then makes sure of cluster
   * DNS, and records where pods reach the add-ons, whose ports the relays publish.
   */
  private async startRealNodes(
    name: string,
    layout: RealNodesLayout,
    opts: UpOptions,
    say: Progress,
  ): Promise<void> {
    const since = Date.now();
    say(`starting ${layout.nodes.length} real nodes (containerd, kubelet, kube-proxy)`);
    const kc = this.planes.clientConfig(name);
    const addons = addonsToPublish(await this.addonEndpoints(name));
    await new RealNodes(layout).up({
      clusterDir: this.dir(name),
      apiPort: apiPortOf(kc.getCurrentCluster()?.server),
      bins: await nodeBinaries(this.planes.bins, false),
      relay: RELAY_COMMAND,
      publish: [...addons.map((a) => a.port), ...(await this.addonLoopbackPorts(name))],
    });
    const client = clusterClient(kc);
    try {
      const names = layout.nodes.map((n) => n.name);
      await waitForRealNodes(client, names, since, opts.timeoutMs ?? 120_000, say);
      say(`${names.length} real nodes Ready in ${secondsSince(since)}s`);
      await ensureClusterDns(client);
      await recordInClusterEndpoints(client, addons);
    } finally {
      client.close();
    }
  }

  /** Where each running add-on answers. */
  private async addonEndpoints(name: string): Promise<{ name: string; endpoint: string }[]> {
    const out: { name: string; endpoint: string }[] = [];
    for (const addon of this.infrastructure) {
      const endpoint = await addon.endpoint?.(this.infraContext(name, addon.name));
      if (endpoint) out.push({ name: addon.name, endpoint });
    }
    return out;
  }

  /** The other ports of the host's loopback the running add-ons answer on. */
  private async addonLoopbackPorts(name: string): Promise<number[]> {
    const out: number[] = [];
    for (const addon of this.infrastructure)
      out.push(...((await addon.loopbackPorts?.(this.infraContext(name, addon.name))) ?? []));
    return out;
  }

  /** The real nodes of a cluster, from the fleet it was created with. */
  private realNodes(name: string): RealNodes | undefined {
    const layout = realNodesOf(name, this.dir(name), this.readRecord(name)?.pools ?? []);
    return layout ? new RealNodes(layout) : undefined;
  }

  /** Imports an image archive into every real node of a running cluster, as `kind load` does. */
  async loadImage(name: string, archive: string): Promise<number> {
    checkName(name);
    const real = this.realNodes(name);
    if (!real) throw new Error(`cluster "${name}" has no real nodes (create it with --real-nodes N)`);
    await real.loadImage((await nodeBinaries(this.planes.bins, true)).ctr, archive);
    return real.layout.nodes.length;
  }

  /**
   * Records the fleet, creates its nodes on the cluster's first run, and waits
   * for every node to be Ready with the heartbeat of the kwok that runs now.
   * Returns how many are Ready.
   */
  private async bringUpFleet(
    kc: ClientConfig,
    opts: UpOptions,
    run: { pools: Pool[]; record: ClusterRecord | undefined; fresh: boolean; started: number },
    say: Progress,
  ): Promise<number> {
    const { name, signal } = opts;
    const { pools, record, fresh } = run;
    const kubeVersion = pinnedVersions().kube;
    const next: ClusterRecord = {
      pools,
      createdAt: record?.createdAt ?? new Date().toISOString(),
      kubeVersion,
      fleetCreated: !fresh && record?.fleetCreated === true,
    };
    this.writeRecord(name, next);
    const client = clusterClient(kc);
    try {
      // kwok's heartbeats count from when the kwok that runs now started.
      let kwokSince = run.started;
      if (!fresh) {
        const restarted = await this.planes.handOverNodes(name, client, run.started);
        if (restarted !== undefined) {
          say('restarted kwok to take over the nodes from the previous run');
          kwokSince = restarted;
        }
      }
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
      return await waitForReadyNodes(client, want, kwokSince, opts.timeoutMs ?? 120_000, say, signal);
    } finally {
      client.close();
    }
  }

  /** Starts every add-on, in the order given, each with its own `cluster up` flags. */
  private async startInfrastructure(
    name: string,
    infraFlags: UpOptions['infraFlags'],
    say: Progress,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    for (const addon of this.infrastructure) {
      say(`starting simulated ${addon.name}`);
      const ctx = this.infraContext(name, addon.name);
      mkdirSync(ctx.dir, { recursive: true });
      await addon.up({ ...ctx, flags: ownFlags(addon, infraFlags), progress: say });
      signal?.throwIfAborted();
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
    for (const addon of [...this.infrastructure].reverse()) {
      await addon.down(this.infraContext(name, addon.name));
    }
  }

  /** Stops every process of the cluster; its data stays for the next `up`. */
  async down(name: string): Promise<void> {
    checkName(name);
    if (!this.exists(name)) throw new Error(`no cluster named "${name}"`);
    await this.stopInfrastructure(name);
    await this.realNodes(name)?.down();
    await this.planes.stop(name);
  }

  /** Stops the cluster and removes all of its data; false when there was no such cluster. */
  async delete(name: string): Promise<boolean> {
    checkName(name);
    if (!existsSync(this.dir(name))) {
      await this.planes.delete(name); // a creation interrupted early may have left kwokctl's config
      return false;
    }
    // Add-ons and real nodes first: their processes live outside kwokctl's knowledge.
    await this.stopInfrastructure(name);
    await this.realNodes(name)?.delete();
    await this.planes.delete(name);
    // What kwokctl does not know of (our record, the add-ons' state) must not outlive
    // the cluster, or a new cluster of the same name would inherit it.
    rmSync(this.dir(name), { recursive: true, force: true });
    return true;
  }

  async status(name: string): Promise<ClusterInfo> {
    checkName(name);
    const info = absentInfo(name, this.planes);
    if (!this.exists(name)) return info;
    info.state = 'stopped';
    const kc = this.planes.clientConfig(name);
    info.server = kc.getCurrentCluster()?.server;
    const client = clusterClient(kc, { probe: true });
    try {
      const version = await client.request<{ gitVersion?: string }>({ method: 'GET', path: '/version' });
      info.state = 'running';
      info.serverVersion = version.gitVersion;
      const nodes = await client.listAll<NodeLike>(Nodes);
      info.nodes = {
        total: nodes.items.length,
        ready: nodes.items.filter(isReady).length,
        real: nodes.items.filter((n) => n.metadata?.labels?.[REAL_NODE_LABEL] === 'true').length,
      };
      for (const addon of this.infrastructure) {
        const ctx = this.infraContext(name, addon.name);
        const endpoint = await addon.endpoint?.(ctx);
        // A summary is a nicety: an add-on that cannot give one still has its endpoint shown.
        const summary = endpoint ? await addon.summary?.(ctx).catch(() => undefined) : undefined;
        if (endpoint) info.infrastructure[addon.name] = { endpoint, ...(summary ? { summary } : {}) };
      }
    } catch {
      // not answering: stopped (or starting)
    } finally {
      client.close();
    }
    return info;
  }

  kubeConfig(name: string): KubeConfig {
    return this.planes.kubeConfig(name);
  }

  private readRecord(name: string): ClusterRecord | undefined {
    const path = join(this.dir(name), 'nodewarden.json');
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as ClusterRecord) : undefined;
  }

  private writeRecord(name: string, record: ClusterRecord): void {
    writeFileSync(join(this.dir(name), 'nodewarden.json'), `${JSON.stringify(record, null, 2)}\n`);
  }
}

type NodeLike = Pick<V1Node, 'status' | 'metadata'>;

/** The fleet's kwok nodes: a real node carries a pool label too, and its heartbeat is its kubelet's. */
const SIMULATED_FLEET = `${Labels.pool},!${REAL_NODE_LABEL}`;

export { isReady };

/** Creates the nodes that do not exist yet, many at a time; returns how many were created. */
async function ensureNodes(client: KubeClient, nodes: V1Node[], signal?: AbortSignal): Promise<number> {
  const existing = new Set(
    (await client.listAll(Nodes, { labelSelector: Labels.pool })).items.map((n) => n.metadata?.name),
  );
  const todo = nodes.filter((n) => !existing.has(n.metadata?.name));
  await mapConcurrently(todo, { concurrency: 32, ...(signal ? { signal } : {}) }, (node) =>
    client.createIfAbsent(Nodes, node as K8sObject),
  );
  return todo.length;
}

/**
 * Waits until at least `min` fleet nodes exist, all of them Ready, and the kwok
 * that runs now keeps every one's heartbeat (its lease renewed since `kwokSince`).
 * Ready alone says nothing after a restart: the controller-manager keeps the
 * nodes Ready for its grace period whether or not anything plays their pods.
 * Returns how many are Ready.
 */
async function waitForReadyNodes(
  client: KubeClient,
  min: number,
  kwokSince: number,
  timeoutMs: number,
  say: Progress,
  signal?: AbortSignal,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let lastSaid = '';
  let silentLeases = '';
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    const nodes = await client.listAll<NodeLike>(Nodes, { labelSelector: SIMULATED_FLEET });
    const ready = nodes.items.filter(isReady).length;
    const want = Math.max(min, nodes.items.length);
    const names = nodes.items.map((n) => n.metadata?.name ?? '');
    // Only the fleet's own: real nodes' leases are their kubelets', each its own holder.
    const fleet = new Set(names);
    const leases = (
      await client.listAll<NodeLease>(Leases, { namespace: NODE_LEASE_NAMESPACE })
    ).items.filter((l) => fleet.has(l.metadata?.name ?? ''));
    const silent = nodesWithoutHeartbeat(names, leases, kwokSince);
    if (ready >= want && silent.length === 0) return ready;
    const said = `${ready}/${want} nodes Ready, ${names.length - silent.length}/${want} with kwok's heartbeat`;
    if (said !== lastSaid) {
      say(said);
      lastSaid = said;
    }
    silentLeases = describeLeases(silent, leases);
    await sleep(200);
  }
  // Which nodes, and whose their leases were: a restart that hangs here says why in CI's log.
  throw new Error(
    `nodes did not all become Ready with kwok's heartbeat within ${timeoutMs / 1000}s (${lastSaid}; ` +
      `kwok running since ${new Date(kwokSince).toISOString()}; without it: ${silentLeases}); see the kwok log`,
  );
}

/** "worker-001 (held by kwok-abc, created 11:59:58Z, renewed 12:00:01Z)", for the first few nodes named. */
function describeLeases(nodes: readonly string[], leases: readonly NodeLease[]): string {
  const byName = new Map(leases.map((l) => [l.metadata?.name ?? '', l]));
  const shown = nodes.slice(0, 5).map((n) => {
    const l = byName.get(n);
    return l
      ? `${n} (held by ${l.spec?.holderIdentity ?? 'nobody'}, created ${l.metadata?.creationTimestamp}, renewed ${l.spec?.renewTime ?? 'never'})`
      : `${n} (no lease)`;
  });
  return nodes.length > 5 ? `${shown.join(', ')} and ${nodes.length - 5} more` : shown.join(', ');
}

/**
 * The fleet `up` runs: the one given, or the one the cluster was created with.
 * A cluster that exists keeps its own: --nodes and --pools apply on creation.
 */
function fleetToRun(
  name: string,
  given: Pool[] | undefined,
  record: ClusterRecord | undefined,
  fresh: boolean,
  say: Progress,
): Pool[] {
  const pools = given ?? record?.pools;
  if (!pools) throw new Error(`cluster "${name}" has no fleet yet: give --nodes or --pools`);
  if (!fresh && record && given && JSON.stringify(given) !== JSON.stringify(record.pools)) {
    say(`cluster "${name}" keeps the fleet it was created with; --nodes and --pools apply on creation only`);
    return record.pools;
  }
  return pools;
}

const secondsSince = (start: number) => ((Date.now() - start) / 1000).toFixed(1);

/** The add-on's own flags among those given to `cluster up`. */
function ownFlags(
  addon: SimulatedInfrastructure,
  given: Readonly<Record<string, string | undefined>> | undefined,
): Record<string, string | undefined> {
  const own: Record<string, string | undefined> = {};
  for (const flag of Object.keys(addon.upFlags ?? {}))
    if (given?.[flag] !== undefined) own[flag] = given[flag];
  return own;
}

/** A cluster's info before anything of it runs: where its kubeconfig and logs would be. */
function absentInfo(name: string, folders: Pick<ControlPlaneFolders, 'dir' | 'kubeconfigPath'>): ClusterInfo {
  return {
    name,
    state: 'absent',
    kubeconfig: folders.kubeconfigPath(name),
    infrastructure: {},
    logs: join(folders.dir(name), 'logs'),
  };
}
