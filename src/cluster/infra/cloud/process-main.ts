// The simulated cloud's own process (entry.ts, which the add-on starts, or
// `nodewarden cloud serve --dir DIR`): restores the cloud from its snapshot, or builds it from
// the cluster's fleet the first time; serves its API on loopback; mirrors its
// instances into the cluster as Nodes; saves its state on every change and on
// SIGTERM.
import type { V1Node } from '@kubernetes/client-node';
import { KubeClient } from '../../../runtime/client.ts';
import { KubeConfig } from '../../../runtime/kubeconfig.ts';
import { rootLogger } from '../../../runtime/log.ts';
import { Nodes } from '../../../runtime/resources.ts';
import type { Pool } from '../../fleet.ts';
import {
  type Daemon,
  type DaemonFiles,
  daemonFiles,
  publishEndpointFile,
  readDaemonConfig,
  runningEndpoint,
} from '../kit/daemon.ts';
import { seedFromName } from '../kit/random.ts';
import { readSnapshot, SnapshotWriter, writeSnapshot } from '../kit/snapshot.ts';
import { adoptFleetNodes, groupSpecsForPools } from './fleet-groups.ts';
import { CloudServer } from './http-api.ts';
import { NodeSync } from './node-sync.ts';
import { type CloudSnapshot, CloudState } from './state.ts';

/** What `cluster up` tells the cloud's process, in config.json of its folder. */
export interface CloudConfig {
  cluster: string;
  kubeconfig: string;
  /** The fleet, turned into groups the first time the cloud starts. */
  pools: Pool[];
  kubernetesVersion: string;
  /** Given on this `cluster up`: overrides the saved setting. Otherwise the saved one (or 5 s) holds. */
  bootDelayMs?: number;
  /** The last run's port, tried first so the endpoint stays put across restarts when it can. */
  preferredPort?: number;
}

/** The cloud's process, known by the add-on's folder. */
export function cloudDaemon(dir: string): Daemon {
  return { dir, name: 'cloud', title: 'the simulated cloud' };
}

/** The files in the add-on's folder. */
export function cloudFiles(dir: string): DaemonFiles {
  return daemonFiles(dir, 'cloud');
}

/** The endpoint of the cluster's cloud if its process runs. */
export function runningCloudEndpoint(dir: string): string | undefined {
  return runningEndpoint(cloudDaemon(dir));
}

/** The cloud's saved state, if any. */
export function readCloudSnapshot(path: string): CloudSnapshot | undefined {
  return readSnapshot<CloudSnapshot>(path);
}

/** Builds the cloud's state for a cluster: the saved one, else one group per pool with the fleet adopted. */
export async function loadCloudState(
  config: CloudConfig,
  statePath: string,
  listNodes: () => Promise<V1Node[]>,
  now: number,
): Promise<{ state: CloudState; restored: boolean; adopted: number }> {
  const saved = readCloudSnapshot(statePath);
  if (saved) {
    const state = CloudState.restore(saved);
    if (config.bootDelayMs !== undefined) state.setSettings({ bootDelayMs: config.bootDelayMs });
    return { state, restored: true, adopted: 0 };
  }
  const state = new CloudState({
    cluster: config.cluster,
    ...(config.bootDelayMs !== undefined ? { bootDelayMs: config.bootDelayMs } : {}),
    // Names differ per cluster, so two clusters' clouds never hand out the same node names.
    seed: seedFromName(config.cluster),
  });
  const specs = groupSpecsForPools(config.pools, {
    cluster: config.cluster,
    kubernetesVersion: config.kubernetesVersion,
  });
  for (const spec of specs) state.addGroup(spec);
  const adopted = specs.length > 0 ? adoptFleetNodes(state, await listNodes(), now) : 0;
  return { state, restored: false, adopted };
}

/** Runs the cloud until SIGTERM or SIGINT; resolves once it serves. */
export async function serveCloud(dir: string): Promise<void> {
  const files = cloudFiles(dir);
  const config = readDaemonConfig<CloudConfig>(dir);
  const log = rootLogger.child({ component: 'simulated-cloud', cluster: config.cluster });
  const kc = new KubeConfig();
  kc.loadFromFile(config.kubeconfig);
  const client = KubeClient.fromKubeConfig(kc, { userAgent: 'nodewarden-simulated-cloud' });

  const { state, restored, adopted } = await loadCloudState(
    config,
    files.state,
    async () => (await client.listAll<V1Node>(Nodes)).items,
    Date.now(),
  );
  // The first state is written at once: the fleet adopted must not depend on a debounce.
  writeSnapshot(files.state, state.snapshot());
  const writer = new SnapshotWriter(state, files.state, {
    onError: (err) => log.error({ err }, 'cannot save the cloud state'),
  });
  writer.start();
  log.info(
    { restored, adopted, groups: state.listGroups().length, bootDelayMs: state.bootDelayMs },
    restored ? 'restored the cloud from its snapshot' : 'created the cloud from the fleet',
  );

  const sync = new NodeSync(client, {
    onError: (err, i) => log.error({ err, node: i.nodeName }, 'cannot mirror an instance into the cluster'),
  });
  // Boots that came due while the cloud was stopped finish now; reconcile then
  // creates their Nodes (the events fired before NodeSync listened).
  state.tick(Date.now());
  try {
    const fixed = await sync.reconcile(state);
    if (fixed.created + fixed.deleted > 0) log.info(fixed, 'brought Nodes in line with the instances');
  } catch (err) {
    log.error({ err }, 'cannot reconcile Nodes with instances');
  }

  let server: CloudServer | undefined;
  const stop = async (signal: string) => {
    log.info({ signal }, 'stopping');
    writer.flush(); // first: closing waits on the API server, and a SIGKILL may come before it is done
    try {
      await server?.close();
    } finally {
      writer.stop();
      client.close();
      process.exit(0);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  server = await startServer(state, sync, config.preferredPort);

  // The endpoint file appears whole, and only once the API answers: the add-on waits for it.
  publishEndpointFile(dir, server.url);
  log.info({ endpoint: server.url }, 'serving');
}

async function startServer(
  state: CloudState,
  sync: NodeSync,
  port: number | undefined,
): Promise<CloudServer> {
  if (port) {
    const server = new CloudServer({ state, nodeSync: sync, port });
    try {
      await server.start();
      return server;
    } catch {
      // taken by now: any free port will do
    }
  }
  const server = new CloudServer({ state, nodeSync: sync });
  await server.start();
  return server;
}
