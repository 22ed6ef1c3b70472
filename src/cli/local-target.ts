// A simulator's console, on the kit: its flags, its serve verb, one-document
// output, and which local cluster it talks to. Which local cluster a simulator's console (nodewarden cloud, nodewarden bmc)
// talks to: --cluster NAME, else $NODEWARDEN_CLUSTER, else the local cluster
// the kubeconfig's current context (or --context) points at — the way every
// other command finds its cluster.
import { KubeConfig } from '../runtime/kubeconfig.ts';
import { type CommandIO, UsageError } from './command.ts';
import { localClusterAt } from './local-state.ts';
import {
  DOCUMENT_OUTPUT,
  type FlagSpec,
  type Invocation,
  outputFormat,
  type VerbSpec,
  writeDocument,
} from './verbs.ts';

export interface ClusterFlags {
  cluster?: string | undefined;
  kubeconfig?: string | undefined;
  context?: string | undefined;
}

export function targetLocalCluster(flags: ClusterFlags): string {
  const named = flags.cluster ?? (process.env.NODEWARDEN_CLUSTER || undefined);
  return named ?? clusterOfKubeconfig(flags.kubeconfig, flags.context);
}

function clusterOfKubeconfig(kubeconfig: string | undefined, context: string | undefined): string {
  const kc = new KubeConfig();
  try {
    if (kubeconfig) kc.loadFromFile(kubeconfig);
    else kc.loadFromDefault();
  } catch (err) {
    throw new Error(
      `cannot read ${kubeconfig ?? process.env.KUBECONFIG ?? 'the kubeconfig'}: ${(err as Error).message}`,
    );
  }
  if (context) {
    if (!kc.getContextObject(context)) throw new UsageError(`no context "${context}" in the kubeconfig`);
    kc.setCurrentContext(context);
  }
  const server = kc.getCurrentCluster()?.server;
  const name = server && URL.canParse(server) ? localClusterAt(server) : undefined;
  if (name) return name;
  throw new Error(
    `the kubeconfig's ${context ? `context "${context}"` : 'current context'} (${server ?? 'no server'}) is no local cluster; ` +
      'give --cluster NAME ("nodewarden cluster list" shows them) or --endpoint URL',
  );
}

/**
 * The flags of a simulator's console (`nodewarden cloud`, `nodewarden bmc`):
 * which local cluster's simulator, or an endpoint outright. `what` names the
 * simulator in help, e.g. "cloud" or "fleet".
 */
export function simulatorConsoleFlags(
  what: string,
): Record<'cluster' | 'name' | 'endpoint' | 'kubeconfig' | 'context', FlagSpec> {
  return {
    cluster: {
      type: 'string',
      value: 'NAME',
      help: "the local cluster (default: the one the kubeconfig's current context names, or $NODEWARDEN_CLUSTER)",
    },
    name: {
      type: 'string',
      value: 'NAME',
      aliasOf: 'cluster',
      help: '',
      deprecated: `write --cluster NAME: the ${what} belongs to that cluster (--name names the object acted on)`,
    },
    endpoint: { type: 'string', value: 'URL', help: `talk to this ${what} instead of the cluster's` },
    kubeconfig: {
      type: 'string',
      value: 'PATH',
      help: 'the kubeconfig whose current context names the cluster (default: $KUBECONFIG, ~/.kube/config)',
    },
    context: { type: 'string', value: 'NAME', help: 'kubeconfig context (default: the current one)' },
  };
}

/** The console's `serve` verb: the simulator's own process in the foreground (`cluster up` starts it detached). */
export function serveVerb(what: string, serve: (dir: string) => Promise<void>): VerbSpec {
  return {
    summary: `run the ${what}'s own process in the foreground (cluster up starts it for you)`,
    flags: ['dir'],
    run: async (inv) => {
      const dir = inv.string('dir');
      if (!dir) throw new UsageError('serve needs --dir (the add-on folder)');
      await serve(dir);
      return 0;
    },
  };
}

/** Prints one document: `text` as a table, or the data as -o json|yaml. */
export function printDocument(io: CommandIO, inv: Invocation, data: unknown, text: () => string): void {
  const format = outputFormat(inv);
  if (format === 'json' || format === 'yaml') writeDocument(io, format, data);
  else io.out.write(text());
}

/** What a simulator's `faults` verb needs: how to read, patch and clear its faults, and say them in a line. */
export interface FaultsConsole<F> {
  read(inv: Invocation): Promise<F>;
  set(inv: Invocation, patch: unknown): Promise<F>;
  clear(inv: Invocation): Promise<F>;
  describe(faults: F): string;
  /** A --set value for the usage error, e.g. '{"die": ["worker-1-abc"]}'. */
  example: string;
  /** What --set does with the keys it names (default "merges"). */
  setMeans?: string;
}

/** The console's `faults` verb: show them; --set JSON patches them; --clear removes them all. */
export function faultsVerb<F>(c: FaultsConsole<F>): VerbSpec {
  return {
    summary: `the injected faults; --set JSON ${c.setMeans ?? 'merges'}, --clear removes them all`,
    flags: ['set', 'clear', 'output', 'json'],
    overrides: { output: DOCUMENT_OUTPUT },
    run: async (inv, { io }) => {
      const set = inv.string('set');
      if (set !== undefined && inv.flag('clear')) throw new UsageError('give --set or --clear, not both');
      // Parsed before the simulator is asked anything: a typo changes nothing.
      const patch = set !== undefined ? parseSet(set, c.example) : undefined;
      const faults = inv.flag('clear')
        ? await c.clear(inv)
        : patch !== undefined
          ? await c.set(inv, patch)
          : await c.read(inv);
      printDocument(io, inv, faults, () => `${c.describe(faults)}\n`);
      return 0;
    },
  };
}

function parseSet(text: string, example: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--set takes a JSON object, e.g. '${example}', not ${text}`);
  }
}
