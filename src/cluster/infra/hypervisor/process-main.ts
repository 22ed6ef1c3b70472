// The simulated hypervisor's own process (entry.ts, which the add-on starts,
// or `nodewarden hypervisor serve --dir DIR`): restores its state, watches the
// management cluster's VM pods and namespaces, runs the workload clusters'
// control planes under its folder, serves its console on loopback, and saves
// its state on every change. On SIGTERM the control planes stop with it; the
// next start brings them back and catches up on what changed meanwhile.
import { VM_CLUSTER_LABEL } from '../../../api/vm-image.ts';
import { KubeClient } from '../../../runtime/client.ts';
import { Informer } from '../../../runtime/informer.ts';
import { KubeConfig } from '../../../runtime/kubeconfig.ts';
import { rootLogger } from '../../../runtime/log.ts';
import { type K8sObject, Namespaces, Nodes, Pods } from '../../../runtime/resources.ts';
import { ControlPlanes } from '../../control-plane.ts';
import { REAL_NODE_LABEL } from '../../real-nodes/layout.ts';
import {
  type Daemon,
  type DaemonFiles,
  daemonFiles,
  publishEndpointFile,
  readDaemonConfig,
  runningEndpoint,
} from '../kit/daemon.ts';
import { readSnapshot, SnapshotWriter, writeSnapshot } from '../kit/snapshot.ts';
import { ConsoleServer } from './console-api.ts';
import { HYPERVISOR_SIMULATOR } from './protocol.ts';
import { HypervisorReconciler } from './reconciler.ts';
import { type HypervisorSnapshot, HypervisorState } from './state.ts';
import type { PodLike } from './vm-pods.ts';
import { WorkloadClusters, workloadsDir } from './workloads.ts';

/** What the add-on tells the hypervisor's process, in config.json of its folder. */
export interface HypervisorConfig {
  cluster: string;
  kubeconfig: string;
  /** The version a VM pod without a kubernetes-version annotation reports. */
  kubernetesVersion: string;
  /** Given on this `cluster up`: overrides the saved setting. */
  bootDelayMs?: number;
  /** The last run's port, tried first so the endpoint stays put across restarts. */
  preferredPort?: number;
}

export function hypervisorDaemon(dir: string): Daemon {
  return { dir, name: HYPERVISOR_SIMULATOR, title: 'the simulated hypervisor' };
}

export function hypervisorFiles(dir: string): DaemonFiles {
  return daemonFiles(dir, HYPERVISOR_SIMULATOR);
}

/** The console's endpoint if the process runs. */
export function runningHypervisorEndpoint(dir: string): string | undefined {
  return runningEndpoint(hypervisorDaemon(dir));
}

/** The saved state, with this start's boot delay when one was given. */
export function loadHypervisorState(config: HypervisorConfig, statePath: string): HypervisorState {
  const saved = readSnapshot<HypervisorSnapshot>(statePath);
  const delay = config.bootDelayMs !== undefined ? { bootDelayMs: config.bootDelayMs } : {};
  const state = saved ? HypervisorState.restore(saved) : new HypervisorState(delay);
  if (saved && config.bootDelayMs !== undefined) state.setSettings(delay);
  return state;
}

/** Runs the hypervisor until SIGTERM or SIGINT; resolves once it serves. */
export async function serveHypervisor(dir: string): Promise<void> {
  const files = hypervisorFiles(dir);
  const config = readDaemonConfig<HypervisorConfig>(dir);
  const log = rootLogger.child({ component: 'simulated-hypervisor', cluster: config.cluster });
  const kc = new KubeConfig();
  kc.loadFromFile(config.kubeconfig);
  const client = KubeClient.fromKubeConfig(kc, { userAgent: 'nodewarden-simulated-hypervisor' });

  const state = loadHypervisorState(config, files.state);
  writeSnapshot(files.state, state.snapshot());
  const writer = new SnapshotWriter(state, files.state, {
    onError: (err) => log.error({ err }, 'cannot save the hypervisor state'),
  });
  writer.start();
  log.info(
    { clusters: state.clusterList().length, vms: state.vmList().length, ...state.getSettings() },
    'loaded the hypervisor state',
  );

  const planes = await ControlPlanes.open({ quiet: true, workdir: workloadsDir(dir) });
  const workloads = new WorkloadClusters(planes, client);
  const onError = (err: unknown) => log.warn({ err }, 'watch of the management cluster failed; retrying');
  const pods = new Informer<PodLike>(client, Pods, { labelSelector: VM_CLUSTER_LABEL, onError });
  const namespaces = new Informer<K8sObject>(client, Namespaces, { onError });
  const realNodes = new Informer<K8sObject>(client, Nodes, {
    labelSelector: `${REAL_NODE_LABEL}=true`,
    onError,
  });
  const reconciler = new HypervisorReconciler({
    state,
    workloads,
    pods,
    namespaces,
    realNodes,
    defaults: { kubernetesVersion: config.kubernetesVersion },
    log,
  });
  for (const informer of [pods, namespaces, realNodes] as Informer<K8sObject>[]) {
    informer.onAdd(() => reconciler.kick());
    informer.onUpdate(() => reconciler.kick());
    informer.onDelete(() => reconciler.kick());
    informer.start();
  }

  const server = new ConsoleServer(state, () => reconciler.kick());
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: the workload control planes stop too');
    writer.flush();
    try {
      await server.close();
      await Promise.all([pods.stop(), namespaces.stop(), realNodes.stop()]);
      await reconciler.stop();
      const running = state
        .clusterList()
        .filter((c) => c.state === 'Running' || c.state === 'Starting')
        .map((c) => c.cluster);
      await workloads.stopAll(running);
      state.controlPlanesStopped();
    } catch (err) {
      log.error({ err }, 'stopping');
    } finally {
      writer.stop();
      client.close();
      process.exit(0);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  try {
    await server.start(config.preferredPort ?? 0);
  } catch {
    await server.start(0); // the last port is taken by now: any free one will do
  }
  await Promise.all([pods.waitForSync(), namespaces.waitForSync(), realNodes.waitForSync()]);
  reconciler.kick();
  // The endpoint file appears whole, once the console answers: the add-on waits for it.
  publishEndpointFile(dir, server.url);
  log.info({ endpoint: server.url }, 'serving');
}
