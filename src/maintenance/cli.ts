// `nodewarden maintenance start|stop|status|list` (also `kubectl nodewarden
// maintenance ...`): create, follow and remove NodeMaintenance objects. The
// operator does the draining; this command only talks to the API server.
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type NodeMaintenance, type NodeMaintenanceSpecType, NodeMaintenances } from '../api/maintenance.ts';
import { age, bar, columns, createProgress, type ProgressStream } from '../cli/progress.ts';
import { KubeClient } from '../runtime/client.ts';
import { ApiError, isForbidden, isNotFound } from '../runtime/errors.ts';
import { Nodes } from '../runtime/resources.ts';

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

/** A mistake in the command line: reported with a pointer to --help, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Where the command writes: stdout for results, stderr for progress and errors. */
export interface CommandIO {
  out: ProgressStream;
  err: ProgressStream;
}

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

// Go-style durations as the CRD's timeout takes them ("90s", "1h30m"): the
// same pattern the API server enforces, so a bad value never reaches it.
const DURATION = new RegExp(
  (NodeMaintenances.spec.properties.timeout as unknown as { pattern: string }).pattern,
);
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds in a duration like "90s", "1.5h" or "1h30m"; throws UsageError when malformed. */
export function parseDuration(text: string, flag: string): number {
  if (!DURATION.test(text))
    throw new UsageError(`${flag} "${text}" is not a duration like 90s, 10m or 1h30m`);
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/([0-9.]+)([smh])/g)) ms += Number(n) * (UNIT_MS[unit ?? ''] ?? 0);
  return ms;
}

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

export async function maintenanceCommand(
  args: string[],
  io: CommandIO = { out: process.stdout, err: process.stderr },
): Promise<number> {
  const say = (line: string) => io.out.write(`${line}\n`);
  const complain = (line: string) => io.err.write(`nodewarden maintenance: ${line}\n`);
  let client: KubeClient | undefined;
  try {
    const p = parse(args);
    if (p.verb === 'help') {
      say(HELP);
      return p.values.help ? 0 : 2;
    }
    const plan = p.verb === 'start' ? planFrom(p) : undefined;
    client = connect(p.values.kubeconfig, p.values.context);
    switch (p.verb) {
      case 'start':
        return await start(client, plan!, io);
      case 'stop':
        return await stop(client, p, io);
      default:
        return await show(client, p, io);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      complain(`${err.message}\nRun "nodewarden maintenance --help" for usage.`);
      return 2;
    }
    // A refusal from the API server (webhook, schema, RBAC, conflict) carries its own words.
    if (err instanceof ApiError) complain(`the API server refused: ${err.message}`);
    else complain(err instanceof Error ? err.message : String(err));
    return 1;
  } finally {
    client?.close();
  }
}

const T = NodeMaintenances.type;
const seconds = (ms: number | undefined) => `${(ms ?? 0) / 1000}s`;
const phaseOf = (nm: NodeMaintenance) => nm.status?.phase ?? 'Pending';

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
  const outcome = await follow(client, plan.name, plan.waitTimeoutMs, (nm) => {
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
  const outcome = await follow(client, name, p.waitMs, () => false);
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

type Outcome = { kind: 'done' | 'gone' | 'timeout'; last: NodeMaintenance | undefined };

/**
 * Follows one object until `visit` says stop, it is deleted, or `limitMs`
 * passes. Watches (changes arrive at once, one request); if watching fails
 * (no watch permission, a proxy that cuts streams) it polls every 500 ms.
 */
async function follow(
  client: KubeClient,
  name: string,
  limitMs: number | undefined,
  visit: (nm: NodeMaintenance) => boolean,
): Promise<Outcome> {
  const signal = limitMs === undefined ? undefined : AbortSignal.timeout(limitMs);
  let last: NodeMaintenance | undefined;
  let rv: string | undefined;
  const see = (nm: NodeMaintenance | undefined): Outcome | undefined => {
    if (!nm) return { kind: 'gone', last };
    last = nm;
    rv = nm.metadata.resourceVersion ?? rv;
    return visit(nm) ? { kind: 'done', last } : undefined;
  };
  const read = () =>
    client.get<NodeMaintenance>(T, name, undefined, signal).then(see, (err: unknown) => {
      if (isNotFound(err)) return see(undefined);
      throw err;
    });
  try {
    let out = await read();
    try {
      const fieldSelector = `metadata.name=${name}`;
      while (!out) {
        const opened = Date.now();
        const opts = { fieldSelector, resourceVersion: rv, timeoutSeconds: 60, signal };
        for await (const ev of client.watch<NodeMaintenance>(T, opts)) {
          if (ev.type === 'BOOKMARK') rv = ev.object.metadata?.resourceVersion ?? rv;
          else if (ev.type === 'ERROR') {
            // 410 Gone: our resourceVersion is too old, so read afresh and watch from there.
            if ((ev.object as { code?: number }).code !== 410) throw new Error('watch failed');
            out = await read();
            break;
          } else if (ev.object.metadata?.name === name) {
            // (the field selector already picks the object; the check guards against servers that ignore it)
            out = see(ev.type === 'DELETED' ? undefined : ev.object);
          }
          if (out) break;
        }
        if (signal?.aborted) throw signal.reason;
        // A stream that ends at once (a proxy, a broken server) must not become a hot loop.
        if (!out && Date.now() - opened < 1000) await sleep(500, undefined, { signal });
      }
    } catch (err) {
      if (signal?.aborted) throw err; // otherwise fall back to polling
    }
    while (!out) {
      await sleep(500, undefined, { signal });
      out = await read();
    }
    return out;
  } catch (err) {
    if (signal?.aborted) return { kind: 'timeout', last };
    throw err;
  }
}

function connect(kubeconfig: string | undefined, context: string | undefined): KubeClient {
  const kc = new KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();
  if (context) {
    if (!kc.getContextObject(context)) throw new UsageError(`no context "${context}" in the kubeconfig`);
    kc.setCurrentContext(context);
  }
  return KubeClient.fromKubeConfig(kc, { userAgent: 'nodewarden-cli' });
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
const podsEvicted = (s: NonNullable<NodeMaintenance['status']>) =>
  Math.max(0, (s.evictionPods ?? 0) - (s.pendingPods?.length ?? 0));

/** What holds the drain up: one phrase per PDB, then pods refused without a named PDB. */
function blockers(blocked: NonNullable<NodeMaintenance['status']>['blockedPods'] = []): string[] {
  const byPdb = new Map<string, number>();
  for (const b of blocked)
    if (b.pdb) byPdb.set(`${b.namespace}/${b.pdb}`, (byPdb.get(`${b.namespace}/${b.pdb}`) ?? 0) + 1);
  const out = [...byPdb].map(([pdb, n]) => `waiting on PDB ${pdb} for ${plural(n, 'pod')}`);
  const other = blocked.filter((b) => !b.pdb);
  if (other[0])
    out.push(
      `${plural(other.length, 'pod')} blocked (${other[0].namespace}/${other[0].name}: ${other[0].message})`,
    );
  return out;
}

/** One line on where a maintenance stands, as the --wait progress line shows it. */
export function describeMaintenance(nm: NodeMaintenance): string {
  const s = nm.status ?? {};
  const phase = phaseOf(nm);
  const pct = s.drainProgress ?? (phase === 'Succeeded' ? 100 : 0);
  const parts = [`[${bar(pct, 20)}] ${String(pct).padStart(3)}% ${phase}`];
  if (!nm.status?.phase) parts.push('waiting for the operator to pick it up');
  if (phase === 'Succeeded') {
    const evicted = s.evictionPods ? `, ${plural(s.evictionPods, 'pod')} evicted` : '';
    parts.push(`node ${nm.spec.nodeName} drained${evicted}`);
  } else {
    if (s.pendingPods?.length) parts.push(`${plural(s.pendingPods.length, 'pod')} left`);
    parts.push(...blockers(s.blockedPods));
  }
  if (s.lastError) parts.push(`${phase === 'Failed' ? 'error' : 'last error'}: ${s.lastError}`);
  return parts.join(', ');
}

/** `list`: columns as kubectl get prints them. */
export function table(items: NodeMaintenance[], now = Date.now()): string {
  const rows = items.map((nm) => {
    const pct = nm.status?.drainProgress;
    const reason = nm.spec.reason || '-';
    return [
      ...[nm.metadata.name ?? '', nm.spec.nodeName, phaseOf(nm), pct === undefined ? '-' : `${pct}%`],
      reason.length > 48 ? `${reason.slice(0, 47)}…` : reason,
      age(nm.metadata.creationTimestamp, now),
    ];
  });
  return columns([['NAME', 'NODE', 'PHASE', 'PROGRESS', 'REASON', 'AGE'], ...rows]);
}

/** `status NODE`: everything the object says, in words. */
export function detail(nm: NodeMaintenance, now = Date.now()): string {
  const s = nm.status ?? {};
  const spec = nm.spec;
  const when = (t: string | undefined) => (t ? `${t} (${age(t, now)} ago)` : undefined);
  const pending = s.pendingPods ?? [];
  const names = pending.slice(0, 5).map((p) => `${p.namespace}/${p.name}`);
  const drain = [
    spec.timeout && spec.timeout !== '0' ? `timeout ${spec.timeout}` : 'no timeout',
    (spec.gracePeriodSeconds ?? -1) < 0
      ? "each pod's own grace period"
      : `grace period ${spec.gracePeriodSeconds}s`,
    ...(spec.podSelector ? [`only pods matching ${spec.podSelector}`] : []),
    `emptyDir pods ${spec.deleteEmptyDirData === false ? 'block' : 'evicted'}`,
    `unmanaged pods ${spec.evictUnmanagedPods === false ? 'block' : 'evicted'}`,
    `DaemonSet pods ${spec.ignoreDaemonSets === false ? 'block' : 'ignored'}`,
  ];
  const rows: [string, string | string[] | undefined][] = [
    ['Name', nm.metadata.name],
    ['Node', spec.nodeName],
    ['Reason', spec.reason],
    [
      'Phase',
      phaseOf(nm) +
        (nm.metadata.deletionTimestamp ? ' (deleting: the operator is uncordoning the node)' : ''),
    ],
    ['Progress', `[${bar(s.drainProgress ?? 0, 20)}] ${s.drainProgress ?? 0}%`],
    [
      'Pods',
      `${s.totalPods ?? 0} total, ${s.evictionPods ?? 0} to evict, ${podsEvicted(s)} evicted, ${pending.length} pending`,
    ],
    [
      'Pending',
      pending.length
        ? names.join(', ') + (pending.length > 5 ? ` (+${pending.length - 5} more)` : '')
        : undefined,
    ],
    [
      'Blocked',
      s.blockedPods?.map(
        (b) => `${b.namespace}/${b.name}${b.pdb ? ` by PDB ${b.namespace}/${b.pdb}` : ''}: ${b.message}`,
      ),
    ],
    [
      'Conditions',
      s.conditions?.map((c) => `${c.type}=${c.status} (${c.reason})${c.message ? `: ${c.message}` : ''}`),
    ],
    ['Last error', s.lastError],
    ['Drain', drain.join(', ')],
    ['Started', when(s.startTime)],
    ['Completed', when(s.completionTime)],
    ['Age', age(nm.metadata.creationTimestamp, now)],
  ];
  const lines: string[] = [];
  for (const [k, v] of rows) {
    const [first, ...more] = typeof v === 'string' ? [v] : (v ?? []);
    if (first !== undefined) lines.push(`${k}:`.padEnd(13) + first, ...more.map((m) => ' '.repeat(13) + m));
  }
  return `${lines.join('\n')}\n`;
}
