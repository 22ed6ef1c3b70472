// `nodewarden cluster up|down|delete|status|kubeconfig|list`. The clusters
// carry the add-ons handed in (the capabilities' simulators), whose own
// `up` flags join ours.
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { type Pool, parsePools, poolsForNodeCount } from './fleet.ts';
import type { SimulatedInfrastructure } from './infra/index.ts';
import { type ClusterInfo, LocalClusters } from './local-cluster.ts';

const USAGE = `Usage: nodewarden cluster <up|down|delete|status|kubeconfig|list> [flags]

  up          start a cluster (create it, or bring a stopped one back with its data)
  down        stop a cluster's processes, keeping its data
  delete      stop a cluster and remove its data
  status      show whether it runs, its server, version and nodes (--json for scripts)
  kubeconfig  print the path of its admin kubeconfig
  list        list clusters

Flags:
  --name NAME      cluster name (default "nodewarden"); clusters run side by side
  --nodes N        simulated worker nodes, spread over 3 zones (default 3 on create)
  --pools SPEC     pools instead of --nodes: NAME=COUNT[:key=value,...] separated by ";"
                   keys: role=worker|control-plane, zones=a|b|c, type=INSTANCE_TYPE,
                   racks=N, cpu=Q, memory=Q, pods=N, or prefix/label=value
                   e.g. "cp=3:role=control-plane;worker=9:type=nw.standard-8"
  --port PORT      the API server's port on 127.0.0.1 (default: a free one)`;

const USAGE_END = `  --timeout SECS   how long to wait for Ready nodes (default 120)
  --json           machine-readable output (status, list)`;

const OPTIONS = {
  name: { type: 'string', default: process.env.NODEWARDEN_CLUSTER ?? 'nodewarden' },
  nodes: { type: 'string' },
  pools: { type: 'string' },
  port: { type: 'string' },
  timeout: { type: 'string', default: '120' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

const HELP_COLUMN = 19;

/** The help text, with the add-ons' `up` flags between ours. */
export function clusterHelp(infrastructure: readonly SimulatedInfrastructure[]): string {
  const lines = [USAGE];
  for (const addon of infrastructure) {
    for (const [flag, spec] of Object.entries(addon.upFlags ?? {})) {
      const head = `  --${flag} ${spec.placeholder}`;
      const help = typeof spec.help === 'string' ? [spec.help] : [...spec.help];
      help.forEach((line, i) => {
        const left = i > 0 ? '' : head.length < HELP_COLUMN ? head : `${head} `;
        lines.push(`${left.padEnd(HELP_COLUMN)}${line}`);
      });
    }
  }
  lines.push(USAGE_END);
  return lines.join('\n');
}

export async function clusterCommand(
  args: string[],
  infrastructure: readonly SimulatedInfrastructure[],
): Promise<number> {
  const addonFlags: ParseArgsOptionsConfig = {};
  for (const addon of infrastructure) {
    for (const flag of Object.keys(addon.upFlags ?? {})) {
      if (flag in OPTIONS || flag in addonFlags)
        throw new Error(`cluster up flag --${flag} is declared twice`);
      addonFlags[flag] = { type: 'string' };
    }
  }
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...addonFlags, ...OPTIONS },
  });
  const [verb] = positionals;
  if (values.help || !verb) {
    console.log(clusterHelp(infrastructure));
    return values.help ? 0 : 2;
  }
  const name = values.name;
  const open = (quiet?: boolean) => LocalClusters.open({ ...(quiet ? { quiet } : {}), infrastructure });

  switch (verb) {
    case 'up': {
      const pools = poolsFromFlags(values.nodes, values.pools);
      const infraFlags: Record<string, string | undefined> = {};
      for (const flag of Object.keys(addonFlags)) {
        const v = (values as Record<string, unknown>)[flag];
        if (typeof v === 'string') infraFlags[flag] = v;
      }
      const clusters = await open();
      const port = values.port === undefined ? undefined : Number(values.port);
      if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
        throw new Error(`--port must be a port number, not "${values.port}"`);
      }
      // Ctrl-C while starting: stop what was started, leave no processes behind.
      const abort = new AbortController();
      const onSignal = () => {
        console.error('\ninterrupted: stopping the cluster');
        abort.abort();
      };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const info = await clusters.up({
          name,
          pools: pools ?? (clusters.exists(name) ? undefined : poolsForNodeCount(3)),
          port,
          infraFlags,
          timeoutMs: Number(values.timeout) * 1000,
          signal: abort.signal,
          progress: (m) => console.error(`• ${m}`),
        });
        printInfo(info);
        return 0;
      } catch (err) {
        if (abort.signal.aborted) return 130; // up() already stopped or removed what it started
        throw err;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    }
    case 'down': {
      await (await open(true)).down(name);
      console.error(
        `cluster "${name}" stopped; its data is kept ("nodewarden cluster up --name ${name}" resumes it)`,
      );
      return 0;
    }
    case 'delete': {
      await (await open(true)).delete(name);
      console.error(`cluster "${name}" deleted`);
      return 0;
    }
    case 'status': {
      const info = await (await open(true)).status(name);
      if (values.json) console.log(JSON.stringify(info, null, 2));
      else printInfo(info);
      return info.state === 'running' ? 0 : 1;
    }
    case 'kubeconfig': {
      const clusters = await open(true);
      if (!clusters.exists(name)) throw new Error(`no cluster named "${name}"`);
      console.log(clusters.kubeconfigPath(name));
      return 0;
    }
    case 'list': {
      const clusters = await open(true);
      const infos = await Promise.all(clusters.list().map((n) => clusters.status(n)));
      if (values.json) console.log(JSON.stringify(infos, null, 2));
      else for (const i of infos) console.log(`${i.name.padEnd(24)} ${i.state.padEnd(8)} ${i.server ?? ''}`);
      return 0;
    }
    default:
      console.error(`nodewarden cluster: unknown verb "${verb}"\n\n${clusterHelp(infrastructure)}`);
      return 2;
  }
}

function poolsFromFlags(nodes: string | undefined, pools: string | undefined): Pool[] | undefined {
  if (nodes !== undefined && pools !== undefined) throw new Error('give --nodes or --pools, not both');
  if (pools !== undefined) return parsePools(pools);
  if (nodes !== undefined) return poolsForNodeCount(Number(nodes));
  return undefined;
}

function printInfo(info: ClusterInfo): void {
  const rows: [string, string | undefined][] = [
    ['cluster', info.name],
    ['state', info.state],
    ['server', info.server],
    ['version', info.serverVersion],
    ['nodes', info.nodes ? `${info.nodes.ready}/${info.nodes.total} Ready` : undefined],
    ...Object.entries(info.infrastructure).map(([addon, i]): [string, string] => [addon, i.endpoint]),
    ['kubeconfig', info.kubeconfig],
    ['logs', info.logs],
  ];
  for (const [k, v] of rows) if (v !== undefined) console.log(`${k.padEnd(11)} ${v}`);
  if (info.state === 'running') console.log(`\nkubectl --kubeconfig ${info.kubeconfig} get nodes`);
}
