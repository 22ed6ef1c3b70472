// A local cluster's real nodes as a whole: the cluster's network and relays,
// then every node (node.ts); `down` kills everything in the cluster's cgroup;
// `delete` also removes the cgroups, namespaces and folders, leaving nothing.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { killAll, makeCgroup, removeCgroup, removeEmptyParents } from './cgroups.ts';
import { clusterCa, hasCredentials, nodeCredentials } from './credentials.ts';
import { CLUSTER_GATEWAY, POD_CIDR, type RealNodesLayout } from './layout.ts';
import { ensureClusterNetwork, removeNetwork } from './network.ts';
import { importImage, type NodeBinaries, removeNodeFiles, startNode, writeNodeFiles } from './node.ts';
import { launch, waitFor } from './processes.ts';

/** What starting real nodes takes beyond their layout. */
export interface RealNodesStart {
  /** The cluster's folder, where kwokctl keeps its pki. */
  clusterDir: string;
  apiPort: number;
  bins: NodeBinaries;
  /** How to run `nodewarden cluster relay` (argv before the relay's own flags). */
  relay: readonly string[];
  /** More ports of the host's loopback to publish at the cluster's gateway (the add-ons'). */
  publish?: readonly number[];
}

/**
 * The relays' command lines: each port of the host's loopback is published at the same port
 * of the cluster's gateway through a unix socket (a file, so it crosses namespaces); the
 * cluster side also serves the API server's egress proxy, dialling only nodes and pods.
 */
export function relayCommands(
  layout: RealNodesLayout,
  ports: readonly number[],
  relay: readonly string[],
): { 'relay-host': string[]; 'relay-cluster': string[] } {
  const unique = [...new Set(ports)];
  const socket = (port: number) => `unix:${layout.hostPortSocket(port)}`;
  return {
    'relay-host': [...relay, ...unique.flatMap((p) => ['--forward', `${socket(p)}=tcp:127.0.0.1:${p}`])],
    'relay-cluster': [
      ...['ip', 'netns', 'exec', layout.netns, ...relay],
      ...unique.flatMap((p) => ['--forward', `tcp:${CLUSTER_GATEWAY}:${p}=${socket(p)}`]),
      ...['--connect-proxy', `unix:${layout.egressSocket}`],
      ...['--allow', '172.30.0.0/24', '--allow', POD_CIDR],
    ],
  };
}

export class RealNodes {
  readonly layout: RealNodesLayout;

  constructor(layout: RealNodesLayout) {
    this.layout = layout;
  }

  /** Starts the network, relays and every node's processes that do not run. */
  async up(start: RealNodesStart): Promise<void> {
    const { layout } = this;
    const { apiPort, bins } = start;
    mkdirSync(layout.dir, { recursive: true });
    await ensureClusterNetwork(layout);
    await this.startRelays([apiPort, ...(start.publish ?? [])], start.relay);
    const ca = clusterCa(start.clusterDir);
    const portChanged = this.apiPortChanged(apiPort);
    await Promise.all(
      layout.nodes.map(async (node) => {
        if (!hasCredentials(node) || portChanged)
          writeNodeFiles(layout, node, bins, nodeCredentials(ca, node, apiPort));
        await startNode(layout, node, bins);
      }),
    );
    writeFileSync(join(layout.dir, 'api-port'), `${apiPort}\n`);
  }

  private apiPortChanged(apiPort: number): boolean {
    const file = join(this.layout.dir, 'api-port');
    return existsSync(file) && Number(readFileSync(file, 'utf8')) !== apiPort;
  }

  /**
   * Two relays, one process each (relayCommands): on the host, a socket per published port →
   * that port on loopback; in the cluster's namespace, the bridge address → the sockets, and
   * the egress proxy the API server dials kubelets and pods through.
   */
  private async startRelays(ports: readonly number[], relay: readonly string[]): Promise<void> {
    const { layout } = this;
    const logs = join(layout.dir, 'logs');
    const pids = join(layout.dir, 'pids');
    makeCgroup(layout.relayCgroup);
    // Stale ones (from a killed run) go first: one listener per socket.
    await killAll(layout.relayCgroup);
    const base = { cgroup: layout.relayCgroup, logs, pids };
    // The starter waits for a "listening" line: an earlier run's must not answer for these.
    rmSync(logs, { recursive: true, force: true });
    const commands = relayCommands(layout, ports, relay);
    for (const [name, command] of Object.entries(commands)) launch({ ...base, name, command });
    for (const name of Object.keys(commands)) {
      const log = join(logs, `${name}.log`);
      await waitFor(name, () => existsSync(log) && readFileSync(log, 'utf8').includes('relay listening'), {
        timeoutMs: 15_000,
        log,
      });
    }
  }

  /** Kills every process of the real nodes and relays; their files stay for the next `up`. */
  async down(): Promise<void> {
    await killAll(this.layout.cgroup);
  }

  /** Leaves nothing: no process, cgroup, namespace (with its veths and routes) or file. */
  async delete(): Promise<void> {
    await this.down();
    removeCgroup(this.layout.cgroup);
    removeEmptyParents(this.layout.cgroup);
    await removeNetwork(this.layout);
    for (const node of this.layout.nodes) removeNodeFiles(node);
    rmSync(this.layout.dir, { recursive: true, force: true });
  }

  /** Imports an OCI or Docker image archive into every node's containerd, as `kind load` does. */
  async loadImage(ctr: string, archive: string): Promise<void> {
    await Promise.all(this.layout.nodes.map((node) => importImage(node, ctr, archive)));
  }
}
