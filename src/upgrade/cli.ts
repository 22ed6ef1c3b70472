// `nodewarden upgrade start|status|pause|resume|list`: set the image a
// NodeVersion rolls out and follow the rollout. The operator replaces the
// nodes; this command only talks to the API server.
import {
  type NodeVersion,
  NodeVersions,
  type PendingNode,
  PendingNodes,
  type ScalingGroup,
  ScalingGroups,
  SURGE_PERCENT,
  UNAVAILABLE_PERCENT,
} from '../api/upgrade.ts';
import {
  type CommandIO,
  durationFlag,
  INSTALL_CRDS,
  isUnknownResource,
  STDIO,
  UsageError,
  waitFlag,
} from '../cli/command.ts';
import { sayOnInterrupt } from '../cli/interrupt.ts';
import { createProgress, createScreen } from '../cli/progress.ts';
import {
  type CommandTable,
  dispatch,
  type Invocation,
  OUTPUT_FLAGS,
  outputFormat,
  parseCommandLine,
  withoutManagedFields as plain,
  type VerbContext,
  writeDocument,
} from '../cli/verbs.ts';
import type { KubeClient } from '../runtime/client.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../runtime/errors.ts';
import { follow } from '../runtime/follow.ts';
import { nodeVersionOf } from './controllers/scalinggroup.ts';
import {
  describeFinished,
  describeRollout,
  detail,
  nodeVersionTable,
  pendingNodeTable,
  rolloutDone,
  rolloutInProgress,
  rolloutLineMemo,
  scalingGroupTable,
  totalsOf,
} from './format.ts';
import { Upgrade } from './names.ts';
import { bothZero, clampMessage, resolveBudgets, surgeCapacity } from './rollout/budgets.ts';
import { boundsOf, strategyOf } from './rollout/observe.ts';

const timeoutWith = (flag: string) => ({
  type: 'string' as const,
  value: 'DURATION',
  help: `with ${flag}: stop waiting after N seconds or a duration like 10m, 2h\n(exit 2; default: no limit)`,
});

/**
 * The command as a table. --timeout is how long the command waits (start
 * --wait, status --watch), as in kubectl and `nodewarden maintenance stop`;
 * --wait-timeout is the same flag under the name maintenance start uses. The
 * bound on draining one node is --drain-timeout, as in maintenance.
 */
export const UPGRADE: CommandTable = {
  name: 'upgrade',
  common: ['kubeconfig', 'context'],
  flags: {
    kubeconfig: {
      type: 'string',
      value: 'PATH',
      help: 'kubeconfig (default: $KUBECONFIG, then ~/.kube/config)',
    },
    context: { type: 'string', value: 'NAME', help: 'kubeconfig context (default: the current one)' },
    name: {
      type: 'string',
      value: 'NAME',
      help: `the NodeVersion (default "${Upgrade.defaultNodeVersion}")`,
    },
    image: { type: 'string', value: 'IMG', help: 'the cloud image new nodes boot from (required)' },
    'image-version': { type: 'string', value: 'V', help: 'a human-readable version of the image' },
    'kubernetes-version': {
      type: 'string',
      value: 'V',
      help: 'the Kubernetes version the nodes should run, e.g. v1.37.1',
    },
    'max-surge': {
      type: 'string',
      value: 'N|P%',
      help: 'extra nodes created at once: a count, or a percentage of the nodes rounded up (default 1)',
    },
    'max-unavailable': {
      type: 'string',
      value: 'N|P%',
      help: 'nodes draining at once: a count, or a percentage rounded down;\n0 = surge only (default 1)',
    },
    'drain-timeout': {
      type: 'string',
      value: 'DURATION',
      help: 'bound on draining one node, e.g. 30m; 0 = none (default 30m)',
    },
    'node-ready-timeout': {
      type: 'string',
      value: 'DURATION',
      help: 'how long a new node has to become Ready (default 15m)',
    },
    'control-plane-first': {
      type: 'boolean',
      help: 'replace every control-plane node before any worker (the default)',
    },
    'no-control-plane-first': {
      type: 'boolean',
      help: 'replace control-plane nodes along with the workers\n(also written --control-plane-first=false)',
    },
    force: { type: 'boolean', help: 're-target a rollout that is still in progress' },
    wait: { type: 'boolean', help: 'follow the rollout until every node is up to date' },
    watch: { type: 'boolean', help: 'redraw whenever the NodeVersion changes (Ctrl-C to stop)' },
    timeout: {
      type: 'string',
      value: 'DURATION',
      help: 'stop waiting after N seconds or a duration like 10m, 2h (exit 2; default: no limit)',
    },
    'wait-timeout': { type: 'string', value: 'DURATION', aliasOf: 'timeout', help: 'the same as --timeout' },
    ...OUTPUT_FLAGS,
  },
  verbs: {
    start: {
      synopsis: '--image IMG',
      summary: 'roll the nodes out to IMG: creates the NodeVersion, or re-targets it',
      flags: [
        ...['name', 'image', 'image-version', 'kubernetes-version', 'max-surge', 'max-unavailable'],
        ...['drain-timeout', 'node-ready-timeout', 'control-plane-first', 'no-control-plane-first'],
        ...['force', 'wait', 'timeout', 'wait-timeout'],
      ],
      overrides: { timeout: timeoutWith('--wait') },
      async run(inv, ctx) {
        const plan = planFrom(inv);
        return start(ctx.connect(), plan, ctx.io);
      },
    },
    status: {
      summary: 'the rollout per scaling group, its conditions and timings',
      flags: ['name', 'watch', 'timeout', 'wait-timeout', 'output', 'json'],
      overrides: {
        timeout: timeoutWith('--watch'),
        output: {
          ...OUTPUT_FLAGS.output,
          help: 'table (default), json or yaml; with --watch, one object per change',
        },
      },
      run: (inv, ctx) => status(inv, ctx),
    },
    pause: {
      summary: 'start no new replacements (those in flight finish)',
      flags: ['name'],
      run: (inv, { io, connect }) => setPaused(connect(), nameOf(inv), true, io),
    },
    resume: {
      summary: 'go on after a pause',
      flags: ['name'],
      run: (inv, { io, connect }) => setPaused(connect(), nameOf(inv), false, io),
    },
    list: {
      summary: 'NodeVersions, ScalingGroups and PendingNodes',
      flags: ['output', 'json'],
      overrides: {
        output: { ...OUTPUT_FLAGS.output, help: 'table (default), or every object as one json or yaml List' },
      },
      run: (inv, ctx) => list(inv, ctx),
    },
  },
  footer:
    'Exit status: 0 done; 1 failed, refused, or not found; 2 usage error or --timeout reached while waiting.',
};

export { type CommandIO, UsageError };

function nameOf(inv: Invocation): string {
  const name = inv.string('name');
  if (name !== undefined && !name) throw new UsageError('--name must not be empty');
  return name ?? Upgrade.defaultNodeVersion;
}

/** The wait bound in ms (undefined: no limit), only where something waits: start --wait, status --watch. */
function waitLimit(inv: Invocation): number | undefined {
  const limit = inv.string('timeout');
  if (limit === undefined) return undefined;
  const flag = inv.spelled('timeout');
  if (inv.verb === 'start' && !inv.flag('wait')) throw new UsageError(`${flag} only applies with --wait`);
  if (inv.verb === 'status' && !inv.flag('watch')) throw new UsageError(`${flag} only applies with --watch`);
  // 0 means no limit.
  return waitFlag(limit, flag) || undefined;
}

/** Milliseconds in --timeout: whole seconds ("600"), or a duration ("10m", "1h30m"). */
export function parseTimeout(text: string): number {
  return waitFlag(text, '--timeout');
}

/** The flag's text, once checked as the CRD's duration pattern would check it. */
function duration(text: string, flag: string): string {
  durationFlag(text, flag);
  return text;
}

/** A budget flag as the CRD takes it: a count from `least`, or a percentage matching `percent`. */
function budget(least: number, percent: string, percentWords: string) {
  return (text: string, flag: string): number | string => {
    if (new RegExp(percent).test(text)) return text;
    const n = Number(text);
    if (/^\d+$/.test(text) && n >= least && Number.isSafeInteger(n)) return n;
    throw new UsageError(
      `${flag} must be a whole number of nodes, ${least} or more, or a percentage ${percentWords} like "25%", not "${text}"`,
    );
  };
}

type Strategy = NonNullable<NodeVersion['spec']['strategy']>;

export interface StartPlan {
  name: string;
  /** The spec fields the command line sets; everything else on an existing NodeVersion is kept. */
  spec: { image: string; imageVersion?: string; kubernetesVersion?: string; strategy?: Strategy };
  force: boolean;
  wait: boolean;
  /** undefined: wait without limit. */
  timeoutMs: number | undefined;
}

/** What `start` would write, from its command line (args begin with "start"); throws UsageError. */
export function planStart(args: string[]): StartPlan {
  const inv = parseCommandLine(UPGRADE, args);
  if ('help' in inv || inv.verb !== 'start') throw new UsageError('expected "start --image IMG ..."');
  return planFrom(inv);
}

function planFrom(inv: Invocation): StartPlan {
  const v = (flag: string) => inv.string(flag);
  const name = nameOf(inv);
  if (!v('image')?.trim()) throw new UsageError('start needs --image IMG: the image new nodes boot from');
  if (inv.flag('control-plane-first') && inv.flag('no-control-plane-first'))
    throw new UsageError('--control-plane-first and --no-control-plane-first contradict each other');
  const strategy: Strategy = {};
  // Each strategy flag given is checked as the CRD would check it.
  const given = <T>(flag: string, read: (text: string, spelled: string) => T): T | undefined => {
    const text = v(flag);
    return text === undefined ? undefined : read(text, inv.spelled(flag));
  };
  if (bothZero({ maxSurge: zeroText(v('max-surge')), maxUnavailable: zeroText(v('max-unavailable')) }))
    throw new UsageError(
      '--max-surge and --max-unavailable cannot both be 0: no node could ever be replaced ' +
        '(--max-unavailable 0 with a surge of 1 or more is a surge-only rollout)',
    );
  const maxSurge = given('max-surge', budget(1, SURGE_PERCENT, 'above 0%'));
  const maxUnavailable = given('max-unavailable', budget(0, UNAVAILABLE_PERCENT, 'up to 100%'));
  const drainTimeout = given('drain-timeout', duration);
  const nodeReadyTimeout = given('node-ready-timeout', duration);
  if (maxSurge !== undefined) strategy.maxSurge = maxSurge;
  if (maxUnavailable !== undefined) strategy.maxUnavailable = maxUnavailable;
  if (drainTimeout !== undefined) strategy.drainTimeout = drainTimeout;
  if (nodeReadyTimeout !== undefined) strategy.nodeReadyTimeout = nodeReadyTimeout;
  if (inv.flag('control-plane-first')) strategy.controlPlaneFirst = true;
  if (inv.flag('no-control-plane-first')) strategy.controlPlaneFirst = false;
  const kv = v('kubernetes-version');
  if (kv !== undefined && !/^v\d+\.\d+\.\d+$/.test(kv))
    throw new UsageError(`--kubernetes-version "${kv}" is not a release like v1.37.1`);
  const spec: StartPlan['spec'] = { image: v('image')! };
  const imageVersion = v('image-version');
  if (imageVersion !== undefined) spec.imageVersion = imageVersion;
  if (kv !== undefined) spec.kubernetesVersion = kv;
  if (Object.keys(strategy).length) spec.strategy = strategy;
  // Anything else the schema forbids (lengths, bounds) is caught here, before the server.
  const checked = NodeVersions.validate(NodeVersions.make({ name }, spec));
  if (!checked.ok) throw new UsageError(checked.errors.join('; '));
  return { name, spec, force: inv.flag('force'), wait: inv.flag('wait'), timeoutMs: waitLimit(inv) };
}

/**
 * Why `start` must not re-target `nv` to the plan's image or Kubernetes
 * version without --force, in one line; undefined when it may. As the anchor's
 * CLI: a rollout in progress is finished first, so nodes are not replaced twice.
 */
export function retargetRefusal(nv: NodeVersion, plan: StartPlan): string | undefined {
  const changes: string[] = [];
  if (plan.spec.image !== nv.spec.image) changes.push(`to ${plan.spec.image}`);
  const kv = plan.spec.kubernetesVersion;
  if (kv !== undefined && kv !== nv.spec.kubernetesVersion) changes.push(`to Kubernetes ${kv}`);
  if (!changes.length || !rolloutInProgress(nv)) return undefined;
  const t = totalsOf(nv.status);
  return (
    `nodeversion/${nv.metadata.name} is still rolling out ${nv.spec.image} (${t.upToDate}/${t.total} nodes up to date); ` +
    `refusing to switch ${changes.join(' and ')} mid-rollout: wait for it to finish, or pass --force`
  );
}

export async function upgradeCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(UPGRADE, args, io);
}

const T = NodeVersions.type;
const seconds = (ms: number | undefined) => `${(ms ?? 0) / 1000}s`;

async function find(client: KubeClient, name: string): Promise<NodeVersion | undefined> {
  try {
    return await client.get<NodeVersion>(T, name);
  } catch (err) {
    if (isNotFound(err)) {
      // A 404 for the object and a 404 for the whole resource read the same; tell them apart.
      if (isUnknownResource(err)) throw noCrds();
      return undefined;
    }
    throw err;
  }
}

const noCrds = () =>
  new Error(`the upgrade.nodewarden.dev CRDs are not installed in this cluster; ${INSTALL_CRDS}`);

async function mustFind(client: KubeClient, name: string): Promise<NodeVersion> {
  const nv = await find(client, name);
  if (!nv)
    throw new Error(`no NodeVersion named "${name}" (nodewarden upgrade start --image IMG creates it)`);
  return nv;
}

/** "0" and "0%" as the budgets they spell, for the both-0 check; anything else is not 0. */
const zeroText = (text: string | undefined): number | string | undefined =>
  text === '0' ? 0 : text === '0%' ? text : undefined;

/**
 * The warning when the NodeVersion asks a surge beyond what its scaling groups
 * can hold: the operator clamps it (and records a Warning Event); said here too,
 * so no surge is accepted silently. Percentages are of the nodes its status counts.
 */
async function surgeClamp(client: KubeClient, nv: NodeVersion): Promise<string | undefined> {
  const groups = (await client.list<ScalingGroup>(ScalingGroups.type)).items.filter(
    (g) => nodeVersionOf(g) === nv.metadata.name,
  );
  const bounds = boundsOf(groups);
  const counts = nv.status?.counts;
  const nodes = (counts?.upToDate ?? 0) + (counts?.outdated ?? 0);
  const { clamp } = resolveBudgets(strategyOf(nv), nodes, surgeCapacity(bounds));
  return clamp && `nodeversion/${nv.metadata.name}: ${clampMessage(clamp, bounds)}`;
}

async function start(client: KubeClient, plan: StartPlan, io: CommandIO): Promise<number> {
  const { name, spec } = plan;
  let target: NodeVersion | undefined;
  // The check and the write are one step: the patch carries the resourceVersion
  // we judged, so a rollout that started meanwhile makes it fail and we look again.
  for (let attempt = 0; !target; attempt++) {
    const last = attempt >= 4;
    const existing = await find(client, name);
    if (!existing) {
      try {
        target = await client.create<NodeVersion>(T, NodeVersions.make({ name }, spec));
      } catch (err) {
        if (isAlreadyExists(err) && !last) continue;
        throw err;
      }
      io.out.write(`nodeversion/${name} created: rolling out ${spec.image}\n`);
      break;
    }
    const refusal = retargetRefusal(existing, plan);
    if (refusal && !plan.force) {
      io.err.write(`nodewarden upgrade: ${refusal}\n`);
      return 1;
    }
    const patch = { metadata: { resourceVersion: existing.metadata.resourceVersion }, spec };
    try {
      target = await client.patch<NodeVersion>(T, name, undefined, patch, { type: 'merge' });
    } catch (err) {
      if ((isConflict(err) || isNotFound(err)) && !last) continue;
      throw err;
    }
    if (refusal)
      io.err.write(
        `re-targeting the rollout in progress (--force): nodes already on ${existing.spec.image} will be replaced again\n`,
      );
    const from = existing.spec.image === spec.image ? '' : ` (was ${existing.spec.image})`;
    io.out.write(
      target.metadata.generation === existing.metadata.generation
        ? `nodeversion/${name} unchanged: ${spec.image}\n`
        : `nodeversion/${name} configured: rolling out ${spec.image}${from}\n`,
    );
  }
  // Advice only: the rollout is written already, so a failed look at the groups must not fail the command.
  const clamped = await surgeClamp(client, target).catch(() => undefined);
  if (clamped) io.err.write(`warning: ${clamped}\n`);
  if (target.spec.strategy?.paused)
    io.err.write(
      `note: nodeversion/${name} is paused; no new replacements start until "nodewarden upgrade resume"\n`,
    );
  if (!plan.wait) return 0;

  const progress = createProgress({ stream: io.err });
  // In a log every line stays: a degraded message is printed once, not on every line after.
  const memo = rolloutLineMemo(!io.err.isTTY);
  const release = sayOnInterrupt(io, [
    `interrupted: stopped waiting; the rollout of nodeversion/${name} goes on`,
    `follow it: nodewarden upgrade status --name ${name} --watch`,
    `pause it (replacements in flight finish): nodewarden upgrade pause --name ${name}`,
  ]);
  const outcome = await follow<NodeVersion>(client, T, name, plan.timeoutMs, (nv) => {
    progress.update(describeRollout(nv, memo));
    return rolloutDone(nv);
  }).finally(release);
  if (outcome.kind === 'gone') {
    progress.done(`nodeversion/${name} was deleted while waiting`);
    return 1;
  }
  if (outcome.kind === 'timeout') {
    const text = outcome.last ? describeRollout(outcome.last) : 'no status yet';
    progress.done(
      `${text}\nthe rollout is not finished after ${seconds(plan.timeoutMs)}; it goes on without us`,
    );
    return 2;
  }
  progress.done(describeFinished(outcome.last!));
  return 0;
}

async function status(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const name = nameOf(inv);
  const timeoutMs = waitLimit(inv);
  const output = outputFormat(inv);
  const client = connect();
  const nv = await mustFind(client, name);
  if (!inv.flag('watch')) {
    if (output === 'table') io.out.write(detail(nv));
    else writeDocument(io, output, plain(nv));
    return 0;
  }
  const screen = createScreen(io.out);
  // A re-read after a cut or expired watch (or a poll) returns the object we
  // already printed: print only a new resourceVersion with new content.
  let shown: { rv: string | undefined; content: string } | undefined;
  const outcome = await follow<NodeVersion>(client, T, name, timeoutMs, (obj) => {
    const rv = obj.metadata.resourceVersion;
    const { resourceVersion: _, ...meta } = plain(obj).metadata;
    const content = JSON.stringify({ ...obj, metadata: meta });
    if (shown && (shown.rv === rv || shown.content === content)) return false;
    shown = { rv, content };
    if (output === 'table') screen.show(detail(obj));
    else writeDocument(io, output, plain(obj), true);
    return false;
  });
  if (outcome.kind === 'gone') {
    io.err.write(`nodewarden upgrade: nodeversion/${name} was deleted\n`);
    return 1;
  }
  return 0;
}

async function setPaused(client: KubeClient, name: string, paused: boolean, io: CommandIO): Promise<number> {
  const nv = await mustFind(client, name);
  const verb = paused ? 'paused' : 'resumed';
  if ((nv.spec.strategy?.paused ?? false) === paused) {
    io.out.write(`nodeversion/${name} is already ${paused ? 'paused' : 'running'}\n`);
    return 0;
  }
  const patch = { spec: { strategy: { paused } } };
  await client.patch<NodeVersion>(T, name, undefined, patch, { type: 'merge' });
  const note = paused ? ': replacements in flight finish, no new ones start' : '';
  io.out.write(`nodeversion/${name} ${verb}${note}\n`);
  return 0;
}

async function list(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const output = outputFormat(inv);
  const client = connect();
  const all = <O>(type: typeof T) =>
    client.list<O>(type).then(
      (l) => l.items,
      (err: unknown) => {
        throw isUnknownResource(err) ? noCrds() : err;
      },
    );
  const [nvs, sgs, pns] = await Promise.all([
    all<NodeVersion>(T),
    all<ScalingGroup>(ScalingGroups.type),
    all<PendingNode>(PendingNodes.type),
  ]);
  if (output !== 'table') {
    const items = [...nvs, ...sgs, ...pns].map(plain);
    writeDocument(io, output, { apiVersion: 'v1', kind: 'List', items });
    return 0;
  }
  const section = (title: string, n: number, table: () => string) =>
    n ? `${title}\n${table()}` : `${title}\n(none)\n`;
  io.out.write(
    [
      section('NodeVersions', nvs.length, () => nodeVersionTable(nvs)),
      section('ScalingGroups', sgs.length, () => scalingGroupTable(sgs)),
      section('PendingNodes', pns.length, () => pendingNodeTable(pns)),
    ].join('\n'),
  );
  return 0;
}
