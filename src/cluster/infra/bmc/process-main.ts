// The BMC fleet's own process (entry.ts, which the add-on starts, or
// `nodewarden bmc serve --dir DIR`): restores the fleet from its snapshot,
// makes its certificate the first time, serves Redfish and the console on
// loopback, and saves its state on every change and on SIGTERM. It writes
// nothing to the cluster: the add-on does, from the CLI.
import { rootLogger } from '../../../runtime/log.ts';
import {
  type Daemon,
  type DaemonFiles,
  daemonFiles,
  publishEndpointFile,
  readDaemonConfig,
  runningEndpoint,
} from '../kit/daemon.ts';
import { readSnapshot, SnapshotWriter, writeSnapshot } from '../kit/snapshot.ts';
import { BMC_SIMULATOR } from './protocol.ts';
import { BmcServer } from './server.ts';
import { type BmcSnapshot, BmcState } from './state.ts';
import { ensureCertificate, type FleetCertificate } from './tls.ts';

/** What the add-on tells the fleet's process, in config.json of its folder. */
export interface BmcConfig {
  cluster: string;
  /** The last run's port, tried first so the machines' BMC addresses stay put across restarts. */
  preferredPort?: number;
}

export function bmcDaemon(dir: string): Daemon {
  return { dir, name: BMC_SIMULATOR, title: 'the simulated BMC fleet' };
}

export function bmcFiles(dir: string): DaemonFiles {
  return daemonFiles(dir, BMC_SIMULATOR);
}

/** The fleet's endpoint if its process runs. */
export function runningBmcEndpoint(dir: string): string | undefined {
  return runningEndpoint(bmcDaemon(dir));
}

/** Runs the fleet until SIGTERM or SIGINT; resolves once it serves. */
export async function serveBmcFleet(dir: string): Promise<void> {
  const files = bmcFiles(dir);
  const config = readDaemonConfig<BmcConfig>(dir);
  const log = rootLogger.child({ component: 'simulated-bmc', cluster: config.cluster });
  const certificate = ensureCertificate(dir, config.cluster);
  const saved = readSnapshot<BmcSnapshot>(files.state);
  const state = saved ? BmcState.restore(saved) : new BmcState();
  writeSnapshot(files.state, state.snapshot());
  const writer = new SnapshotWriter(state, files.state, {
    onError: (err) => log.error({ err }, 'cannot save the BMC fleet state'),
  });
  writer.start();
  log.info({ restored: saved !== undefined, machines: state.records().length }, 'loaded the BMC fleet');

  let server: BmcServer | undefined;
  const stop = async (signal: string) => {
    log.info({ signal }, 'stopping');
    writer.flush();
    try {
      await server?.close();
    } finally {
      writer.stop();
      process.exit(0);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  server = await startServer(certificate, state, config);
  publishEndpointFile(dir, server.url);
  log.info({ endpoint: server.url }, 'serving');
}

async function startServer(
  certificate: FleetCertificate,
  state: BmcState,
  config: BmcConfig,
): Promise<BmcServer> {
  const make = (port?: number) =>
    new BmcServer({ certificate, state, fleetId: config.cluster, ...(port ? { port } : {}) });
  if (config.preferredPort) {
    const server = make(config.preferredPort);
    try {
      await server.start();
      return server;
    } catch {
      // taken by now: any free port will do (the add-on then rewrites the hosts' addresses)
    }
  }
  const server = make();
  await server.start();
  return server;
}
