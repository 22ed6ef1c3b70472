// `nodewarden cluster up|down|delete|status|kubeconfig|list`.
import { parseArgs } from 'node:util';
import { type Pool, parsePools, poolsForNodeCount } from './fleet.ts';
import { parseBootDelay } from './infra/cloud/cli.ts';
import { type ClusterInfo, LocalClusters } from './local-cluster.ts';

const HELP = `Usage: nodewarden cluster <up|down|delete|status|kubeconfig|list> [flags]

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
  --port PORT      the API server's port on 127.0.0.1 (default: a free one)
  --boot-delay D   how long a machine the simulated cloud launches takes to boot,
                   e.g. 5s, 500ms (default 5s; kept across down/up; see nodewarden cloud)
  --timeout SECS   how long to wait for Ready nodes (default 120)
  --json           machine-readable output (status, list)`;

export async function clusterCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      name: { type: 'string', default: process.env.NODEWARDEN_CLUSTER ?? 'nodewarden' },
      nodes: { type: 'string' },
      pools: { type: 'string' },
      port: { type: 'string' },
      'boot-delay': { type: 'string' },
      timeout: { type: 'string', default: '120' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [verb] = positionals;
  if (values.help || !verb) {
    console.log(HELP);
    return values.help ? 0 : 2;
  }
  const name = values.name;

  switch (verb) {
    case 'up': {
      const pools = poolsFromFlags(values.nodes, values.pools);
      const delay = values['boot-delay'];
      const bootDelayMs = delay === undefined ? undefined : parseBootDelay(delay);
      const clusters = await LocalClusters.open();
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
          bootDelayMs,
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
      await (await LocalClusters.open({ quiet: true })).down(name);
      console.error(
        `cluster "${name}" stopped; its data is kept ("nodewarden cluster up --name ${name}" resumes it)`,
      );
      return 0;
    }
    case 'delete': {
      await (await LocalClusters.open({ quiet: true })).delete(name);
      console.error(`cluster "${name}" deleted`);
      return 0;
    }
    case 'status': {
      const info = await (await LocalClusters.open({ quiet: true })).status(name);
      if (values.json) console.log(JSON.stringify(info, null, 2));
      else printInfo(info);
      return info.state === 'running' ? 0 : 1;
    }
    case 'kubeconfig': {
      const clusters = await LocalClusters.open({ quiet: true });
      if (!clusters.exists(name)) throw new Error(`no cluster named "${name}"`);
      console.log(clusters.kubeconfigPath(name));
      return 0;
    }
    case 'list': {
      const clusters = await LocalClusters.open({ quiet: true });
      const infos = await Promise.all(clusters.list().map((n) => clusters.status(n)));
      if (values.json) console.log(JSON.stringify(infos, null, 2));
      else for (const i of infos) console.log(`${i.name.padEnd(24)} ${i.state.padEnd(8)} ${i.server ?? ''}`);
      return 0;
    }
    default:
      console.error(`nodewarden cluster: unknown verb "${verb}"\n\n${HELP}`);
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
    ['cloud', info.cloud?.endpoint],
    ['kubeconfig', info.kubeconfig],
    ['logs', info.logs],
  ];
  for (const [k, v] of rows) if (v !== undefined) console.log(`${k.padEnd(11)} ${v}`);
  if (info.state === 'running') console.log(`\nkubectl --kubeconfig ${info.kubeconfig} get nodes`);
}
