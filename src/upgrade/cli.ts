// `nodewarden upgrade start|status|pause|resume|list`: set the image a
// NodeVersion rolls out and follow the rollout. The operator replaces the
// nodes; this command only talks to the API server.
import { NodeVersionKind, PendingNodeKind, ScalingGroupKind } from '../api/kinds.ts';
import type { NodeVersion, PendingNode, ScalingGroup } from '../api/upgrade.ts';
import { type CommandIO, INSTALL_CRDS, isUnknownResource, STDIO, UsageError } from '../cli/command.ts';
import { sayOnInterrupt } from '../cli/interrupt.ts';
import { expectOperator } from '../cli/operator-hint.ts';
import { createProgress, createScreen } from '../cli/progress.ts';
import {
  type CommandTable,
  dispatch,
  type Invocation,
  kubeList,
  kubeName,
  type ObjectView,
  outputFormat,
  parseCommandLine,
  withoutManagedFields as plain,
  type VerbContext,
  writeObjects,
} from '../cli/verbs.ts';
import type { KubeClient } from '../runtime/client.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../runtime/errors.ts';
import { follow } from '../runtime/follow.ts';
import type { ResourceType } from '../runtime/resources.ts';
import { checkStartPlan, nameOf, planFrom, type StartPlan, upgradeTable, waitLimit } from './commands.ts';
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
import { nodeVersionOf } from './names.ts';
import { clampMessage, resolveBudgets, surgeCapacity } from './rollout/budgets.ts';
import { boundsOf, strategyOf } from './rollout/observe.ts';

/** The command: its table (commands.ts) with what each verb does. */
export const UPGRADE: CommandTable = upgradeTable({
  start: async (inv, ctx) => {
    const plan = planFrom(inv);
    await checkStartPlan(plan);
    return start(ctx.connect(), plan, ctx.io);
  },
  status: (inv, ctx) => status(inv, ctx),
  pause: (inv, { io, connect }) => setPaused(connect(), nameOf(inv), true, io),
  resume: (inv, { io, connect }) => setPaused(connect(), nameOf(inv), false, io),
  list: (inv, ctx) => list(inv, ctx),
});

export { checkStartPlan, parseTimeout, type StartPlan } from './commands.ts';
export { type CommandIO, UsageError };

/** What `start` would write, from its command line (args begin with "start"); throws UsageError. */
export function planStart(args: string[]): StartPlan {
  const inv = parseCommandLine(UPGRADE, args);
  if ('help' in inv || inv.verb !== 'start') throw new UsageError('expected "start --image IMG ..."');
  return planFrom(inv);
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

const T = NodeVersionKind;
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

/**
 * The warning when the NodeVersion asks a surge beyond what its scaling groups
 * can hold: the operator clamps it (and records a Warning Event); said here too,
 * so no surge is accepted silently. Percentages are of the nodes its status counts.
 */
async function surgeClamp(client: KubeClient, nv: NodeVersion): Promise<string | undefined> {
  const groups = (await client.list<ScalingGroup>(ScalingGroupKind)).items.filter(
    (g) => nodeVersionOf(g) === nv.metadata.name,
  );
  const bounds = boundsOf(groups);
  const counts = nv.status?.counts;
  const nodes = (counts?.upToDate ?? 0) + (counts?.outdated ?? 0);
  const { clamp } = resolveBudgets(strategyOf(nv), nodes, surgeCapacity(bounds));
  return clamp && `nodeversion/${nv.metadata.name}: ${clampMessage(clamp, bounds)}`;
}

/**
 * Creates the NodeVersion or re-targets it to the plan, saying which on stdout;
 * undefined when it refused (said on stderr). The check and the write are one
 * step: the patch carries the resourceVersion we judged, so a rollout that
 * started meanwhile makes it fail and we look again.
 */
async function writeTarget(
  client: KubeClient,
  plan: StartPlan,
  io: CommandIO,
): Promise<NodeVersion | undefined> {
  const { name, spec } = plan;
  let target: NodeVersion | undefined;
  for (let attempt = 0; !target; attempt++) {
    const last = attempt >= 4;
    const existing = await find(client, name);
    if (!existing) {
      try {
        target = (await client.create(T, { metadata: { name }, spec })) as NodeVersion;
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
      return undefined;
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
  return target;
}

async function start(client: KubeClient, plan: StartPlan, io: CommandIO): Promise<number> {
  const { name } = plan;
  const target = await writeTarget(client, plan, io);
  if (!target) return 1;
  // Advice only: the rollout is written already, so a failed look at the groups must not fail the command.
  const clamped = await surgeClamp(client, target).catch(() => undefined);
  if (clamped) io.err.write(`warning: ${clamped}\n`);
  if (target.spec.strategy?.paused)
    io.err.write(
      `note: nodeversion/${name} is paused; no new replacements start until "nodewarden upgrade resume"\n`,
    );
  if (!plan.wait) return 0;

  const progress = createProgress({ stream: io.err });
  const operator = expectOperator(`nodeversion/${name}`, (line) => progress.update(line));
  // In a log every line stays: a degraded message is printed once, not on every line after.
  const memo = rolloutLineMemo(!io.err.isTTY);
  const release = sayOnInterrupt(io, [
    `interrupted: stopped waiting; the rollout of nodeversion/${name} goes on`,
    `follow it: nodewarden upgrade status --name ${name} --watch`,
    `pause it (replacements in flight finish): nodewarden upgrade pause --name ${name}`,
  ]);
  const outcome = await follow<NodeVersion>(client, T, name, plan.timeoutMs, (nv) => {
    operator.seen(nv);
    progress.update(describeRollout(nv, memo));
    return rolloutDone(nv);
  }).finally(() => {
    release();
    operator.stop();
  });
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
  const view: ObjectView<NodeVersion> = {
    table: ([one], wide) => detail(one!, Date.now(), wide),
    name: (obj) => kubeName(T, obj),
    document: ([one]) => plain(one!),
  };
  if (!inv.flag('watch')) {
    writeObjects(io, output, [nv], view);
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
    if (output === 'table' || output === 'wide') screen.show(view.table([obj], output === 'wide'));
    else writeObjects(io, output, [obj], view, true);
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
    all<ScalingGroup>(ScalingGroupKind),
    all<PendingNode>(PendingNodeKind),
  ]);
  // -o name names each object with its own kind.
  const typeOf = new Map<object, ResourceType>([
    ...nvs.map((o) => [o, T] as const),
    ...sgs.map((o) => [o, ScalingGroupKind] as const),
    ...pns.map((o) => [o, PendingNodeKind] as const),
  ]);
  const section = (title: string, n: number, table: () => string) =>
    n ? `${title}\n${table()}` : `${title}\n(none)\n`;
  const now = Date.now();
  writeObjects(io, output, [...nvs, ...sgs, ...pns], {
    table: (_, wide) =>
      [
        section('NodeVersions', nvs.length, () => nodeVersionTable(nvs, now, wide)),
        section('ScalingGroups', sgs.length, () => scalingGroupTable(sgs, wide)),
        section('PendingNodes', pns.length, () => pendingNodeTable(pns, now, wide)),
      ].join('\n'),
    name: (obj) => kubeName(typeOf.get(obj)!, obj),
    document: (items) => kubeList(items),
  });
  return 0;
}
