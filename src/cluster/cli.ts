// `nodewarden cluster up|down|delete|status|kubeconfig|list`, on the verb table
// every command shares (src/cli/verbs.ts). The clusters carry the add-ons
// handed in (the capabilities' simulators), whose own `up` flags join ours.
import { type CommandIO, STDIO, UsageError, waitFlag } from '../cli/command.ts';
import { columns } from '../cli/progress.ts';
import {
  type CommandTable,
  dispatch,
  type FlagSpec,
  helpOf,
  type Invocation,
  type ObjectView,
  OUTPUT_FLAGS,
  outputFormat,
  type VerbSpec,
  writeObjects,
} from '../cli/verbs.ts';
import { type Pool, parsePools, poolsForNodeCount, realPool } from './fleet.ts';
import type { SimulatedInfrastructure } from './infra/index.ts';
import { type ClusterInfo, LocalClusters } from './local-cluster.ts';

const FLAGS: Record<string, FlagSpec> = {
  name: {
    type: 'string',
    value: 'NAME',
    help: 'cluster name (default "nodewarden", or $NODEWARDEN_CLUSTER); clusters run side by side',
  },
  nodes: {
    type: 'string',
    value: 'N',
    help: 'simulated worker nodes, spread over 3 zones (default 3 on create)',
  },
  pools: {
    type: 'string',
    value: 'SPEC',
    help: [
      'pools instead of --nodes: NAME=COUNT[:key=value,...] separated by ";"',
      'keys: role=worker|control-plane, zones=a|b|c, type=INSTANCE_TYPE,',
      'racks=N, cpu=Q, memory=Q, pods=N, or prefix/label=value',
      'e.g. "cp=3:role=control-plane;worker=9:type=nw.standard-8"',
    ].join('\n'),
  },
  'real-nodes': {
    type: 'string',
    value: 'N',
    help: [
      'real nodes besides the simulated ones: kubelet, containerd and kube-proxy in network',
      'namespaces of the cluster\'s own (as a pool: "NAME=N:real" in --pools); needs root',
    ].join('\n'),
  },
  port: { type: 'string', value: 'PORT', help: "the API server's port on 127.0.0.1 (default: a free one)" },
  timeout: {
    type: 'string',
    value: 'DURATION',
    help: 'how long to wait for Ready nodes, e.g. 90s, 5m (default 2m)',
  },
  ...OUTPUT_FLAGS,
};

const UP_FLAGS = ['nodes', 'pools', 'real-nodes', 'port'] as const;

/** The command's table, with the add-ons' `up` flags after ours; throws when one is declared twice. */
export function clusterTable(infrastructure: readonly SimulatedInfrastructure[]): CommandTable {
  const { flags, addonFlags } = withAddonUpFlags(infrastructure);
  const clusters: Clusters = {
    open: (quiet) => LocalClusters.open({ ...(quiet ? { quiet } : {}), infrastructure }),
    nameOf: (inv) => inv.string('name') ?? process.env.NODEWARDEN_CLUSTER ?? 'nodewarden',
  };
  return {
    name: 'cluster',
    flags,
    common: ['name'],
    verbs: {
      up: upVerb(clusters, addonFlags),
      down: downVerb(clusters),
      delete: deleteVerb(clusters),
      status: statusVerb(clusters),
      'load-image': loadImageVerb(clusters),
      kubeconfig: kubeconfigVerb(clusters),
      list: listVerb(clusters),
    },
  };
}

/** Our flags and the add-ons' `up` flags, whose names are also returned apart. */
function withAddonUpFlags(infrastructure: readonly SimulatedInfrastructure[]): {
  flags: Record<string, FlagSpec>;
  addonFlags: string[];
} {
  const flags: Record<string, FlagSpec> = { ...FLAGS };
  const addonFlags: string[] = [];
  for (const addon of infrastructure) {
    for (const [flag, spec] of Object.entries(addon.upFlags ?? {})) {
      if (flag in flags || flag === 'help') throw new Error(`cluster up flag --${flag} is declared twice`);
      flags[flag] = {
        type: 'string',
        value: spec.placeholder,
        help: typeof spec.help === 'string' ? spec.help : spec.help.join('\n'),
      };
      addonFlags.push(flag);
    }
  }
  return { flags, addonFlags };
}

/** What every verb needs: the clusters (with the add-ons), and which one the invocation names. */
interface Clusters {
  open(quiet?: boolean): Promise<LocalClusters>;
  nameOf(inv: Invocation): string;
}

function upVerb(clusters: Clusters, addonFlags: readonly string[]): VerbSpec {
  return {
    summary: 'start a cluster (create it, or bring a stopped one back with its data)',
    flags: [...UP_FLAGS, ...addonFlags, 'timeout'],
    run: async (inv, { io, warn }) => {
      const name = clusters.nameOf(inv);
      const timeoutMs = readyTimeout(inv.string('timeout'), warn);
      const pools = poolsFromFlags(inv.string('nodes'), inv.string('pools'), inv.string('real-nodes'));
      const port = portFlag(inv.string('port'));
      const infraFlags: Record<string, string | undefined> = {};
      for (const flag of addonFlags) infraFlags[flag] = inv.string(flag);
      const local = await clusters.open();
      const now = await local.status(name);
      if (now.state === 'running') {
        io.err.write(
          `cluster "${name}" is already running ("nodewarden cluster down --name ${name}" stops it)\n`,
        );
        printInfo(io, now);
        return 0;
      }
      return up(io, local, {
        name,
        pools: withRealNodes(
          pools ?? (local.exists(name) ? undefined : poolsForNodeCount(3)),
          inv.string('real-nodes'),
        ),
        port,
        infraFlags,
        timeoutMs,
      });
    },
  };
}

function downVerb(clusters: Clusters): VerbSpec {
  return {
    summary: "stop a cluster's processes, keeping its data",
    flags: [],
    run: async (inv, { io }) => {
      const name = clusters.nameOf(inv);
      if (LocalClusters.absent(name)) throw new Error(noCluster(name));
      await (await clusters.open(true)).down(name);
      io.err.write(
        `cluster "${name}" stopped; its data is kept ("nodewarden cluster up --name ${name}" resumes it)\n`,
      );
      return 0;
    },
  };
}

function deleteVerb(clusters: Clusters): VerbSpec {
  return {
    summary: 'stop a cluster and remove its data',
    flags: [],
    run: async (inv, { io }) => {
      const name = clusters.nameOf(inv);
      if (LocalClusters.absent(name) || !(await (await clusters.open(true)).delete(name)))
        throw new Error(noCluster(name));
      io.err.write(`cluster "${name}" deleted\n`);
      return 0;
    },
  };
}

function statusVerb(clusters: Clusters): VerbSpec {
  return {
    summary: 'show whether it runs, its server, version and nodes (exit 1 when it does not run)',
    flags: ['output', 'json'],
    run: async (inv, { io }) => {
      const name = clusters.nameOf(inv);
      const info = LocalClusters.absent(name) ?? (await (await clusters.open(true)).status(name));
      writeObjects(io, outputFormat(inv), [info], {
        // The detail is every field already: wide is the same.
        table: ([one]) => infoText(one!),
        name: (i) => i.name,
        document: ([one]) => one,
      });
      return info.state === 'running' ? 0 : 1;
    },
  };
}

function kubeconfigVerb(clusters: Clusters): VerbSpec {
  return {
    summary: 'print the path of its admin kubeconfig',
    flags: [],
    run: async (inv, { io }) => {
      const name = clusters.nameOf(inv);
      if (LocalClusters.absent(name)) throw new Error(noCluster(name));
      const local = await clusters.open(true);
      if (!local.exists(name)) throw new Error(noCluster(name));
      io.out.write(`${local.kubeconfigPath(name)}\n`);
      return 0;
    },
  };
}

function listVerb(clusters: Clusters): VerbSpec {
  return {
    summary: 'list clusters',
    flags: ['output', 'json'],
    run: async (inv, { io }) => {
      // None there: say so without opening, which builds the control plane on a cold cache.
      const local = LocalClusters.names().length > 0 ? await clusters.open(true) : undefined;
      const infos = local ? await Promise.all(local.list().map((n) => local.status(n))) : [];
      writeObjects(io, outputFormat(inv), infos, CLUSTER_LIST);
      return 0;
    },
  };
}

/** The help text, with the add-ons' `up` flags after ours. */
export function clusterHelp(infrastructure: readonly SimulatedInfrastructure[], verb?: string): string {
  return helpOf(clusterTable(infrastructure), verb);
}

export async function clusterCommand(
  args: string[],
  infrastructure: readonly SimulatedInfrastructure[],
  io: CommandIO = STDIO,
): Promise<number> {
  return dispatch(clusterTable(infrastructure), args, io);
}

/** `up` with Ctrl-C stopping what was started, leaving no processes behind. */
async function up(
  io: CommandIO,
  clusters: LocalClusters,
  opts: Omit<Parameters<LocalClusters['up']>[0], 'signal' | 'progress'>,
): Promise<number> {
  const abort = new AbortController();
  const onSignal = () => {
    io.err.write('\ninterrupted: stopping the cluster\n');
    abort.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const info = await clusters.up({
      ...opts,
      signal: abort.signal,
      progress: (m) => io.err.write(`• ${m}\n`),
    });
    printInfo(io, info);
    return 0;
  } catch (err) {
    if (abort.signal.aborted) return 130; // up() already stopped or removed what it started
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

const noCluster = (name: string) => `no cluster named "${name}" ("nodewarden cluster list" shows them)`;

function portFlag(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!(Number.isInteger(port) && port > 0 && port < 65536))
    throw new UsageError(`--port must be a port number, not "${text}"`);
  return port;
}

/**
 * --timeout of up in ms: a duration like every command's (default 2m). A bare
 * number, once the flag's only form, is still read as seconds, with a warning.
 */
export function readyTimeout(text: string | undefined, warn: (line: string) => void): number {
  if (text === undefined) return 120_000;
  if (/^\d+$/.test(text) && text !== '0')
    warn(`--timeout ${text}: a bare number of seconds is deprecated; write a duration: --timeout ${text}s`);
  return waitFlag(text, '--timeout');
}

/** `list`: a row per cluster; wide adds its version, nodes, kubeconfig and add-on endpoints. */
const CLUSTER_LIST: ObjectView<ClusterInfo> = {
  table: (infos, wide) => {
    const head = ['NAME', 'STATE', 'SERVER'];
    if (wide) head.push('VERSION', 'NODES', 'KUBECONFIG', 'ENDPOINTS');
    const rows = infos.map((i) => [
      i.name,
      i.state,
      i.server ?? '-',
      ...(wide
        ? [
            i.serverVersion ?? '-',
            i.nodes ? `${i.nodes.ready}/${i.nodes.total}` : '-',
            i.kubeconfig,
            Object.entries(i.infrastructure)
              .map(([addon, { endpoint }]) => `${addon}=${endpoint}`)
              .join(',') || '-',
          ]
        : []),
    ]);
    return columns([head, ...rows]);
  },
  name: (i) => i.name,
  document: (infos) => infos,
  none: 'no clusters; "nodewarden cluster up" creates one',
};

function poolsFromFlags(
  nodes: string | undefined,
  pools: string | undefined,
  realNodes: string | undefined,
): Pool[] | undefined {
  if (nodes !== undefined && pools !== undefined) throw new UsageError('give --nodes or --pools, not both');
  if (realNodes !== undefined && !/^\d+$/.test(realNodes))
    throw new UsageError(`--real-nodes must be a number of nodes, not "${realNodes}"`);
  if (pools !== undefined) return parsePools(pools);
  if (nodes !== undefined) {
    if (!/^\d+$/.test(nodes)) throw new UsageError(`--nodes must be a number of nodes, not "${nodes}"`);
    return poolsForNodeCount(Number(nodes));
  }
  return undefined;
}

/** The pools with `--real-nodes N` added as a pool named "real"; creation only, as --pools. */
function withRealNodes(pools: Pool[] | undefined, realNodes: string | undefined): Pool[] | undefined {
  if (realNodes === undefined || realNodes === '0') return pools;
  if (!pools) throw new UsageError('--real-nodes applies when a cluster is created');
  if (pools.some((p) => p.name === 'real'))
    throw new UsageError('--real-nodes adds a pool "real"; --pools has one already');
  return [...pools, realPool(Number(realNodes))];
}

function loadImageVerb(clusters: Clusters): VerbSpec {
  return {
    synopsis: 'ARCHIVE',
    summary: 'import an image archive (OCI or Docker) into every real node, as `kind load` does',
    args: { name: 'ARCHIVE', min: 1, max: 1 },
    flags: [],
    run: async (inv, { io }) => {
      const [archive] = inv.args;
      if (!archive) throw new UsageError('give the image archive, e.g. dist/image/nodewarden.tar');
      const name = clusters.nameOf(inv);
      const nodes = await (await clusters.open(true)).loadImage(name, archive);
      io.err.write(`${archive} imported into ${nodes} real nodes of cluster "${name}"\n`);
      return 0;
    },
  };
}

function printInfo(io: CommandIO, info: ClusterInfo): void {
  io.out.write(infoText(info));
}

function nodesText(n: NonNullable<ClusterInfo['nodes']>): string {
  return `${n.ready}/${n.total} Ready${n.real > 0 ? `, ${n.real} of them real (kubelet and containerd)` : ''}`;
}

function infoText(info: ClusterInfo): string {
  let text = '';
  const rows: [string, string | undefined][] = [
    ['cluster', info.name],
    ['state', info.state],
    ['server', info.server],
    ['version', info.serverVersion],
    ['nodes', info.nodes ? nodesText(info.nodes) : undefined],
    ...Object.entries(info.infrastructure).map(([addon, i]): [string, string] => [
      addon,
      i.summary ? `${i.endpoint} (${i.summary})` : i.endpoint,
    ]),
    ['kubeconfig', info.kubeconfig],
    ['logs', info.logs],
  ];
  for (const [k, v] of rows) if (v !== undefined) text += `${k.padEnd(11)} ${v}\n`;
  if (info.state === 'running') text += `\nkubectl --kubeconfig ${info.kubeconfig} get nodes\n`;
  return text;
}
