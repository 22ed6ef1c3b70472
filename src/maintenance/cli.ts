// `nodewarden maintenance start|stop|status|list` (also `kubectl nodewarden
// maintenance ...`): create, follow and remove NodeMaintenance objects. The
// operator does the draining; this command only talks to the API server.

import { NodeMaintenanceKind } from '../api/kinds.ts';
import type { NodeMaintenance, NodeMaintenanceSpecType } from '../api/maintenance.ts';
import {
  type CommandIO,
  durationFlag,
  explainMissingCrd,
  needsCrd,
  STDIO,
  UsageError,
  waitFlag,
} from '../cli/command.ts';
import { sayOnInterrupt } from '../cli/interrupt.ts';
import { expectOperator } from '../cli/operator-hint.ts';
import { createProgress } from '../cli/progress.ts';
import {
  CONNECTION_FLAGS,
  type CommandTable,
  dispatch,
  type Invocation,
  kubeList,
  kubeName,
  OUTPUT_FLAGS,
  outputFormat,
  parseCommandLine,
  type VerbContext,
  withoutManagedFields,
  writeObjects,
} from '../cli/verbs.ts';
import type { KubeClient } from '../runtime/client.ts';
import { ApiError, isForbidden, isNotFound } from '../runtime/errors.ts';
import { follow } from '../runtime/follow.ts';
import { Nodes } from '../runtime/resources.ts';
import { describeMaintenance, detail, phaseOf, table } from './format.ts';

export { describeMaintenance, detail, table } from './format.ts';
export { type CommandIO, UsageError };

/** Milliseconds in a duration flag like "90s", "1.5h" or "1h30m"; throws UsageError when malformed. */
export const parseDuration = durationFlag;

const CONNECTION = ['kubeconfig', 'context'] as const;

/**
 * The command as a table. --timeout (or --wait-timeout) is how long the command
 * waits, as in `nodewarden upgrade` and kubectl; the drain's own bound is
 * --drain-timeout. On start, --timeout once set the drain bound: a --timeout
 * without --wait, which is how such a command line reads, is refused naming
 * --drain-timeout rather than silently meaning something else.
 */
export const MAINTENANCE: CommandTable = {
  name: 'maintenance',
  common: [...CONNECTION],
  flags: {
    ...CONNECTION_FLAGS,
    ...OUTPUT_FLAGS,
    name: { type: 'string', value: 'NAME', help: "the NodeMaintenance's name (default: the node's name)" },
    reason: { type: 'string', value: 'TEXT', help: 'why the node goes into maintenance (required)' },
    'drain-timeout': {
      type: 'string',
      value: 'DURATION',
      help: 'bound on the whole drain, e.g. 10m, 1h30m; 0 = none (default 0)',
    },
    'grace-period': {
      type: 'string',
      value: 'N',
      help: "seconds each evicted pod gets; -1 = the pod's own (default -1)",
    },
    'pod-selector': {
      type: 'string',
      value: 'SELECTOR',
      help: 'drain only pods matching this label selector',
    },
    'no-delete-emptydir-data': {
      type: 'boolean',
      help: 'do not evict pods with emptyDir volumes (they block the drain)',
    },
    'no-evict-unmanaged': {
      type: 'boolean',
      help: 'do not evict pods no controller manages (they block the drain)',
    },
    'no-ignore-daemonsets': {
      type: 'boolean',
      help: 'DaemonSet pods block the drain instead of being left in place',
    },
    wait: { type: 'boolean', help: 'wait for the operator to finish' },
    timeout: {
      type: 'string',
      value: 'DURATION',
      help: 'with --wait: stop waiting after e.g. 90s, 10m (exit 2; default: no limit)',
    },
    'wait-timeout': { type: 'string', value: 'DURATION', aliasOf: 'timeout', help: 'the same as --timeout' },
  },
  verbs: {
    start: {
      synopsis: 'NODE --reason TEXT',
      summary: 'put NODE into maintenance: cordon, taint and drain it',
      args: { name: 'NODE', min: 1, max: 1 },
      flags: [
        ...['reason', 'drain-timeout', 'grace-period', 'pod-selector'],
        ...['no-delete-emptydir-data', 'no-evict-unmanaged', 'no-ignore-daemonsets'],
        ...['name', 'wait', 'wait-timeout', 'timeout'],
      ],
      overrides: { wait: { type: 'boolean', help: 'follow the drain until it succeeds or fails' } },
      async run(inv, ctx) {
        const plan = planFrom(inv);
        await checkAgainstSchema(plan);
        return start(ctx.connect(), plan, ctx.io);
      },
    },
    stop: {
      synopsis: 'NODE',
      summary: "end NODE's maintenance: the operator uncordons it",
      args: { name: 'NODE', min: 1, max: 1 },
      flags: ['name', 'wait', 'timeout', 'wait-timeout'],
      overrides: { wait: { type: 'boolean', help: 'wait until the object is gone and the node is back' } },
      run: (inv, ctx) => stop(inv, waitLimit(inv), ctx),
    },
    status: {
      synopsis: '[NODE]',
      summary: 'one maintenance in detail, or all of them',
      args: { name: 'NODE', min: 0, max: 1 },
      flags: ['output', 'json'],
      run: (inv, ctx) => show(inv, ctx),
    },
    list: {
      summary: 'all maintenances, one per line',
      flags: ['output', 'json'],
      run: (inv, ctx) => show(inv, ctx),
    },
  },
  footer:
    'Exit status: 0 done; 1 failed or refused by the API server; 2 usage error, or stopped waiting at --timeout (--wait-timeout).',
};

/** The wait bound in ms (undefined: no limit); refused without --wait, where nothing waits. */
function waitLimit(inv: Invocation): number | undefined {
  const limit = inv.string('timeout');
  if (limit === undefined) return undefined;
  const flag = inv.spelled('timeout');
  // start --timeout once bounded the drain: say where that went.
  if (!inv.flag('wait'))
    throw new UsageError(
      `${flag} only applies with --wait (how long the command waits)` +
        (inv.verb === 'start' ? `; for the drain's own bound write --drain-timeout ${limit}` : ''),
    );
  // 0 means no limit, as for the drain's own bound.
  return waitFlag(limit, inv.spelled('timeout')) || undefined;
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
  const inv = parseCommandLine(MAINTENANCE, args);
  if ('help' in inv || inv.verb !== 'start') throw new UsageError('expected "start NODE ..."');
  return planFrom(inv);
}

function planFrom(inv: Invocation): StartPlan {
  const node = inv.args[0]!;
  const reason = inv.string('reason');
  if (!reason?.trim()) throw new UsageError('start needs --reason TEXT: why the node goes into maintenance');
  const spec: NodeMaintenanceSpecType = {
    nodeName: node,
    reason,
    // Booleans are always written: the object records what was asked even if defaults change.
    deleteEmptyDirData: !inv.flag('no-delete-emptydir-data'),
    evictUnmanagedPods: !inv.flag('no-evict-unmanaged'),
    ignoreDaemonSets: !inv.flag('no-ignore-daemonsets'),
  };
  const drain = inv.string('drain-timeout');
  if (drain !== undefined) {
    durationFlag(drain, inv.spelled('drain-timeout')); // throws on a value the server would refuse
    spec.timeout = drain;
  }
  const grace = inv.string('grace-period');
  if (grace !== undefined) {
    const n = Number(grace);
    if (!/^-?\d+$/.test(grace) || n < -1 || n > 86400)
      throw new UsageError(`--grace-period must be a whole number of seconds from -1 to 86400`);
    spec.gracePeriodSeconds = n;
  }
  const selector = inv.string('pod-selector');
  if (selector !== undefined) spec.podSelector = selector;
  const name = inv.string('name') ?? node;
  return { name, spec, wait: inv.flag('wait'), waitTimeoutMs: waitLimit(inv) };
}

/**
 * Anything else the schema forbids (lengths, bounds), caught before the server.
 * The definition is loaded here, not at the top: its TypeBox schemas are most of
 * a `status`'s start-up, and only start needs them.
 */
async function checkAgainstSchema(plan: StartPlan): Promise<void> {
  const { NodeMaintenances } = await import('../api/maintenance.ts');
  const checked = NodeMaintenances.validate(NodeMaintenances.make({ name: plan.name }, plan.spec));
  if (!checked.ok) throw new UsageError(checked.errors.join('; '));
}

export async function maintenanceCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(MAINTENANCE, args, io);
}

const T = NodeMaintenanceKind;
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
    await client.create(T, { metadata: { name: plan.name }, spec: plan.spec });
  } catch (e) {
    const err = explainMissingCrd(e, T);
    if (err instanceof ApiError) throw new ApiError(err.statusCode, `${err.message}; nothing created`);
    throw err;
  }
  io.out.write(`nodemaintenance/${plan.name} created for node ${plan.spec.nodeName}\n`);
  if (!plan.wait) return 0;

  const progress = createProgress({ stream: io.err });
  const operator = expectOperator(`nodemaintenance/${plan.name}`, (line) => progress.update(line));
  const node = plan.spec.nodeName;
  const release = sayOnInterrupt(io, [
    `interrupted: stopped waiting; the drain of ${node} goes on (nodemaintenance/${plan.name} stays)`,
    `follow it: nodewarden maintenance status ${node}`,
    `end it (uncordon the node): nodewarden maintenance stop ${node}`,
  ]);
  const outcome = await follow<NodeMaintenance>(client, T, plan.name, plan.waitTimeoutMs, (nm) => {
    operator.seen(nm);
    progress.update(describeMaintenance(nm));
    return phaseOf(nm) === 'Succeeded' || phaseOf(nm) === 'Failed';
  }).finally(release);
  operator.stop();
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

async function stop(inv: Invocation, waitMs: number | undefined, { io, connect }: VerbContext) {
  const node = inv.args[0]!;
  const client = connect();
  const nm = await findOne(client, node, inv.string('name'));
  const name = nm.metadata.name!;
  await client.delete(T, name, undefined, { preconditions: { uid: nm.metadata.uid } });
  io.out.write(`nodemaintenance/${name} deleted\n`);
  if (!inv.flag('wait')) return 0;
  const progress = createProgress({ stream: io.err });
  progress.update(`waiting for the operator to uncordon ${node} and release nodemaintenance/${name}`);
  const release = sayOnInterrupt(io, [
    `interrupted: stopped waiting; nodemaintenance/${name} is deleted, and the operator goes on uncordoning ${node}`,
    `follow it: nodewarden maintenance status ${node}`,
  ]);
  const outcome = await follow(client, T, name, waitMs, () => false).finally(release);
  if (outcome.kind === 'timeout') {
    progress.done(`nodemaintenance/${name} is still there after ${seconds(waitMs)} (finalizer not removed)`);
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

async function show(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const output = outputFormat(inv);
  const client = connect();
  const node = inv.args[0];
  const all = (await needsCrd(T, client.list<NodeMaintenance>(T))).items;
  const items = node ? [await findOne(client, node, undefined, all)] : all;
  writeObjects(io, output, items, {
    // status shows the detail, every field already (so -o wide is the same); list the rows.
    table: (shown, wide) =>
      inv.verb === 'list' ? table([...shown], Date.now(), wide) : shown.map((nm) => detail(nm)).join('\n'),
    name: (nm) => kubeName(T, nm),
    document: (shown) => (node ? withoutManagedFields(shown[0]!) : kubeList(shown)),
    none: 'No maintenances.',
  });
  return 0;
}

/** The maintenance of a node: by --name, else the one whose spec.nodeName is the node (or, failing that, so named). */
async function findOne(client: KubeClient, node: string, name?: string, all?: NodeMaintenance[]) {
  if (name) {
    const nm = await client.get<NodeMaintenance>(T, name).catch((e: unknown) => {
      const err = explainMissingCrd(e, T);
      throw err === e && isNotFound(err) ? new Error(`no NodeMaintenance named "${name}"`) : err;
    });
    if (nm.spec.nodeName !== node) throw new Error(`nodemaintenance/${name} is for node ${nm.spec.nodeName}`);
    return nm;
  }
  const items = all ?? (await needsCrd(T, client.list<NodeMaintenance>(T))).items;
  let found = items.filter((nm) => nm.spec.nodeName === node);
  if (!found.length) found = items.filter((nm) => nm.metadata.name === node);
  if (found.length > 1)
    throw new UsageError(
      `several maintenances for ${node} (${found.map((n) => n.metadata.name).join(', ')}): pick one with --name`,
    );
  if (!found[0]) throw new Error(`node ${node} has no NodeMaintenance (nodewarden maintenance list)`);
  return found[0];
}
