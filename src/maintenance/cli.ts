// `nodewarden maintenance start|stop|status|list` (also `kubectl nodewarden
// maintenance ...`): create, follow and remove NodeMaintenance objects. The
// operator does the draining; this command only talks to the API server.
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { type NodeMaintenance, type NodeMaintenanceSpecType, NodeMaintenances } from '../api/maintenance.ts';
import { type CommandIO, connect, durationFlag, runCommand, STDIO, UsageError } from '../cli/command.ts';
import { createProgress } from '../cli/progress.ts';
import type { KubeClient } from '../runtime/client.ts';
import { ApiError, isForbidden, isNotFound } from '../runtime/errors.ts';
import { follow } from '../runtime/follow.ts';
import { Nodes } from '../runtime/resources.ts';
import { describeMaintenance, detail, phaseOf, table } from './format.ts';

export { describeMaintenance, detail, table } from './format.ts';

const HELP = `Usage: nodewarden maintenance <start|stop|status|list> [flags]

  start NODE --reason TEXT   put NODE into maintenance: cordon, taint and drain it
  stop NODE                  end NODE's maintenance: the operator uncordons it
  status [NODE]              one maintenance in detail, or all of them
  list                       all maintenances, one per line

Flags:
  --kubeconfig PATH          kubeconfig (default: $KUBECONFIG, then ~/.kube/config)
  --context NAME             kubeconfig context (default: the current one)
  -o, --output FORMAT        status, list: table (default), json or yaml
  --name NAME                the NodeMaintenance's name (default: the node's name)
  --wait                     start: follow the drain until it succeeds or fails;
                             stop: wait until the object is gone and the node is back
  --wait-timeout DURATION    give up waiting after e.g. 90s, 10m (exit 2; default 0: no limit)
start only:
  --reason TEXT              why the node goes into maintenance (required)
  --timeout DURATION         bound on the whole drain, e.g. 10m, 1h30m; 0 = none (default 0)
  --grace-period N           seconds each evicted pod gets; -1 = the pod's own (default -1)
  --pod-selector SELECTOR    drain only pods matching this label selector
  --no-delete-emptydir-data  do not evict pods with emptyDir volumes (they block the drain)
  --no-evict-unmanaged       do not evict pods no controller manages (they block the drain)
  --no-ignore-daemonsets     DaemonSet pods block the drain instead of being left in place

Exit status: 0 done; 1 failed or refused by the API server; 2 usage error or --wait-timeout.`;

const OPTIONS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  output: { type: 'string', short: 'o' },
  name: { type: 'string' },
  wait: { type: 'boolean' },
  'wait-timeout': { type: 'string' },
  reason: { type: 'string' },
  timeout: { type: 'string' },
  'grace-period': { type: 'string' },
  'pod-selector': { type: 'string' },
  'no-delete-emptydir-data': { type: 'boolean' },
  'no-evict-unmanaged': { type: 'boolean' },
  'no-ignore-daemonsets': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;
type Flag = keyof typeof OPTIONS;
type Values = { [K in Flag]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean };

const COMMON: Flag[] = ['kubeconfig', 'context', 'help'];
const START_ONLY: Flag[] = [
  ...['reason', 'timeout', 'grace-period', 'pod-selector'],
  ...['no-delete-emptydir-data', 'no-evict-unmanaged', 'no-ignore-daemonsets'],
] as Flag[];
// Which flags each verb takes, so a misplaced flag is an error rather than silently ignored.
const VERBS: Record<string, { flags: Flag[]; nodes: [min: number, max: number] }> = {
  start: { flags: [...COMMON, ...START_ONLY, 'name', 'wait', 'wait-timeout'], nodes: [1, 1] },
  stop: { flags: [...COMMON, 'name', 'wait', 'wait-timeout'], nodes: [1, 1] },
  status: { flags: [...COMMON, 'output'], nodes: [0, 1] },
  list: { flags: [...COMMON, 'output'], nodes: [0, 0] },
};

export { type CommandIO, UsageError };

interface Parsed {
  verb: string;
  node: string | undefined;
  values: Values;
  /** --wait-timeout in ms; undefined: no limit. */
  waitMs: number | undefined;
}

function parse(argv: string[]): Parsed {
  // parseArgs takes "-1" for a flag; "--grace-period -1" is natural, so glue the value on.
  const args: string[] = [];
  for (const a of argv) {
    if (/^-\d/.test(a) && args.at(-1) === '--grace-period') args.push(`${args.pop()}=${a}`);
    else args.push(a);
  }
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const [verb = '', ...nodes] = parsed.positionals;
  const { values } = parsed;
  if (values.help || !verb) return { verb: 'help', node: undefined, values, waitMs: undefined };
  const rules = VERBS[verb];
  if (!rules) throw new UsageError(`unknown verb "${verb}"`);
  const stray = (Object.keys(values) as Flag[]).filter((f) => !rules.flags.includes(f));
  if (stray.length) throw new UsageError(`${stray.map((f) => `--${f}`).join(', ')}: not a flag of ${verb}`);
  const [min, max] = rules.nodes;
  if (nodes.length < min) throw new UsageError(`${verb} needs a NODE`);
  if (nodes.length > max) throw new UsageError(`${verb} takes ${max ? 'one NODE' : 'no NODE'}`);
  if (values.output && !['table', 'json', 'yaml'].includes(values.output))
    throw new UsageError(`--output must be table, json or yaml, not "${values.output}"`);
  const limit = values['wait-timeout'];
  // 0 means no limit, as for the drain's own --timeout.
  const waitMs = limit === undefined ? undefined : parseDuration(limit, '--wait-timeout') || undefined;
  return { verb, node: nodes[0], values, waitMs };
}

/** Milliseconds in a duration flag like "90s", "1.5h" or "1h30m"; throws UsageError when malformed. */
export const parseDuration = durationFlag;

export interface StartPlan {
  name: string;
  spec: NodeMaintenanceSpecType;
  wait: boolean;
  /** undefined: wait without limit. */
  waitTimeoutMs: number | undefined;
}

/** The object `start` would create, from its command line (args begin with "start"); throws UsageError. */
export function planStart(args: string[]): StartPlan {
  return planFrom(parse(args));
}

function planFrom({ verb, node, values: v, waitMs }: Parsed): StartPlan {
  if (verb !== 'start' || !node) throw new UsageError('expected "start NODE ..."');
  if (!v.reason?.trim())
    throw new UsageError('start needs --reason TEXT: why the node goes into maintenance');
  const spec: NodeMaintenanceSpecType = {
    nodeName: node,
    reason: v.reason,
    // Booleans are always written: the object records what was asked even if defaults change.
    deleteEmptyDirData: !v['no-delete-emptydir-data'],
    evictUnmanagedPods: !v['no-evict-unmanaged'],
    ignoreDaemonSets: !v['no-ignore-daemonsets'],
  };
  if (v.timeout !== undefined) {
    parseDuration(v.timeout, '--timeout'); // throws on a value the server would refuse
    spec.timeout = v.timeout;
  }
  if (v['grace-period'] !== undefined) {
    const n = Number(v['grace-period']);
    if (!/^-?\d+$/.test(v['grace-period']) || n < -1 || n > 86400)
      throw new UsageError(`--grace-period must be a whole number of seconds from -1 to 86400`);
    spec.gracePeriodSeconds = n;
  }
  if (v['pod-selector'] !== undefined) spec.podSelector = v['pod-selector'];
  const name = v.name ?? node;
  // Anything else the schema forbids (lengths, bounds) is caught here, before the server.
  const checked = NodeMaintenances.validate(NodeMaintenances.make({ name }, spec));
  if (!checked.ok) throw new UsageError(checked.errors.join('; '));
  return { name, spec, wait: v.wait ?? false, waitTimeoutMs: waitMs };
}

export async function maintenanceCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return runCommand('maintenance', io, async (use) => {
    const p = parse(args);
    if (p.verb === 'help') {
      io.out.write(`${HELP}\n`);
      return p.values.help ? 0 : 2;
    }
    const plan = p.verb === 'start' ? planFrom(p) : undefined;
    const client = use(connect(p.values.kubeconfig, p.values.context));
    switch (p.verb) {
      case 'start':
        return await start(client, plan!, io);
      case 'stop':
        return await stop(client, p, io);
      default:
        return await show(client, p, io);
    }
  });
}

const T = NodeMaintenances.type;
const seconds = (ms: number | undefined) => `${(ms ?? 0) / 1000}s`;

async function start(client: KubeClient, plan: StartPlan, io: CommandIO): Promise<number> {
  // A typo in NODE would otherwise sit in Pending forever: check the node first.
  try {
    await client.get(Nodes, plan.spec.nodeName);
  } catch (err) {
    if (isNotFound(err)) throw new Error(`node "${plan.spec.nodeName}" not found; nothing created`);
    // Not allowed to read nodes: let the API server and the operator judge.
    if (!isForbidden(err)) throw err;
  }
  try {
    await client.create<NodeMaintenance>(T, NodeMaintenances.make({ name: plan.name }, plan.spec));
  } catch (err) {
    if (err instanceof ApiError) throw new ApiError(err.statusCode, `${err.message}; nothing created`);
    throw err;
  }
  io.out.write(`nodemaintenance/${plan.name} created for node ${plan.spec.nodeName}\n`);
  if (!plan.wait) return 0;

  const progress = createProgress({ stream: io.err });
  const outcome = await follow<NodeMaintenance>(client, T, plan.name, plan.waitTimeoutMs, (nm) => {
    progress.update(describeMaintenance(nm));
    return phaseOf(nm) === 'Succeeded' || phaseOf(nm) === 'Failed';
  });
  if (outcome.kind === 'gone') {
    progress.done(`nodemaintenance/${plan.name} was deleted while waiting`);
    return 1;
  }
  const text = outcome.last ? describeMaintenance(outcome.last) : 'no status yet';
  if (outcome.kind === 'timeout') {
    progress.done(`${text} (stopped waiting after ${seconds(plan.waitTimeoutMs)}; the drain goes on)`);
    return 2;
  }
  progress.done(text);
  return phaseOf(outcome.last!) === 'Succeeded' ? 0 : 1;
}

async function stop(client: KubeClient, p: Parsed, io: CommandIO): Promise<number> {
  const node = p.node!;
  const nm = await findOne(client, node, p.values.name);
  const name = nm.metadata.name!;
  await client.delete(T, name, undefined, { preconditions: { uid: nm.metadata.uid } });
  io.out.write(`nodemaintenance/${name} deleted\n`);
  if (!p.values.wait) return 0;
  const progress = createProgress({ stream: io.err });
  progress.update(`waiting for the operator to uncordon ${node} and release nodemaintenance/${name}`);
  const outcome = await follow(client, T, name, p.waitMs, () => false);
  if (outcome.kind === 'timeout') {
    progress.done(
      `nodemaintenance/${name} is still there after ${seconds(p.waitMs)} (finalizer not removed)`,
    );
    return 2;
  }
  const cordoned = await client
    .get<{ spec?: { unschedulable?: boolean } }>(Nodes, node)
    .then((n) => n.spec?.unschedulable === true)
    .catch(() => undefined);
  progress.done(
    cordoned
      ? `maintenance ended, but node ${node} is still cordoned (it was before, or someone else cordoned it)`
      : `maintenance ended: node ${node} is schedulable again`,
  );
  return 0;
}

async function show(client: KubeClient, p: Parsed, io: CommandIO): Promise<number> {
  const all = (await client.list<NodeMaintenance>(T)).items;
  const items = p.node ? [await findOne(client, p.node, undefined, all)] : all;
  const output = p.values.output ?? 'table';
  const plain = items.map(({ metadata: { managedFields: _, ...metadata }, ...o }) => ({ ...o, metadata }));
  const doc = p.node ? plain[0] : { apiVersion: 'v1', kind: 'List', items: plain };
  if (output === 'json') io.out.write(`${JSON.stringify(doc, null, 2)}\n`);
  else if (output === 'yaml') io.out.write(stringify(doc));
  else if (!items.length) io.err.write('No maintenances.\n');
  else if (p.verb === 'list') io.out.write(table(items));
  else io.out.write(`${items.map((nm) => detail(nm)).join('\n')}`);
  return 0;
}

/** The maintenance of a node: by --name, else the one whose spec.nodeName is the node (or, failing that, so named). */
async function findOne(client: KubeClient, node: string, name?: string, all?: NodeMaintenance[]) {
  if (name) {
    const nm = await client.get<NodeMaintenance>(T, name).catch((err: unknown) => {
      throw isNotFound(err) ? new Error(`no NodeMaintenance named "${name}"`) : err;
    });
    if (nm.spec.nodeName !== node) throw new Error(`nodemaintenance/${name} is for node ${nm.spec.nodeName}`);
    return nm;
  }
  const items = all ?? (await client.list<NodeMaintenance>(T)).items;
  let found = items.filter((nm) => nm.spec.nodeName === node);
  if (!found.length) found = items.filter((nm) => nm.metadata.name === node);
  if (found.length > 1)
    throw new UsageError(
      `several maintenances for ${node} (${found.map((n) => n.metadata.name).join(', ')}): pick one with --name`,
    );
  if (!found[0]) throw new Error(`node ${node} has no NodeMaintenance (nodewarden maintenance list)`);
  return found[0];
}
