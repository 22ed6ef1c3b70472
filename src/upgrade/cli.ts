// `nodewarden upgrade start|status|pause|resume|list`: set the image a
// NodeVersion rolls out and follow the rollout. The operator replaces the
// nodes; this command only talks to the API server.
import { parseArgs } from 'node:util';
import {
  type NodeVersion,
  NodeVersions,
  type PendingNode,
  PendingNodes,
  type ScalingGroup,
  ScalingGroups,
} from '../api/upgrade.ts';
import { type CommandIO, connect, durationFlag, runCommand, STDIO, UsageError } from '../cli/command.ts';
import { createProgress, createScreen } from '../cli/progress.ts';
import type { KubeClient } from '../runtime/client.ts';
import { parseDuration } from '../runtime/duration.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../runtime/errors.ts';
import { follow } from '../runtime/follow.ts';
import {
  describeFinished,
  describeRollout,
  detail,
  nodeVersionTable,
  pendingNodeTable,
  rolloutDone,
  rolloutInProgress,
  scalingGroupTable,
  totalsOf,
} from './format.ts';
import { Upgrade } from './names.ts';

const HELP = `Usage: nodewarden upgrade <start|status|pause|resume|list> [flags]

  start --image IMG        roll the nodes out to IMG: creates the NodeVersion, or re-targets it
  status                   the rollout per scaling group, its conditions and timings
  pause                    start no new replacements (those in flight finish)
  resume                   go on after a pause
  list                     NodeVersions, ScalingGroups and PendingNodes

Flags:
  --name NAME              the NodeVersion (default "${Upgrade.defaultNodeVersion}")
  --kubeconfig PATH        kubeconfig (default: $KUBECONFIG, then ~/.kube/config)
  --context NAME           kubeconfig context (default: the current one)
start only (strategy flags left out keep their current values):
  --image IMG              the cloud image new nodes boot from (required)
  --image-version V        a human-readable version of the image
  --kubernetes-version V   the Kubernetes version the nodes should run, e.g. v1.37.1
  --max-surge N            extra nodes created at once (default 1)
  --max-unavailable N      nodes draining at once (default 1)
  --drain-timeout D        bound on draining one node, e.g. 30m; 0 = none (default 30m)
  --node-ready-timeout D   how long a new node has to become Ready (default 15m)
  --no-control-plane-first, --control-plane-first=false
                           replace control-plane nodes along with the workers
  --force                  re-target a rollout that is still in progress
  --wait                   follow the rollout until every node is up to date
  --timeout SECS           with --wait: give up after SECS seconds or a duration like 2h (default: no limit)
status only:
  --watch                  redraw whenever the NodeVersion changes (Ctrl-C to stop)
  --timeout SECS           with --watch: stop watching after SECS seconds
  --json                   the NodeVersion as JSON (with --watch: one object per line)
list only:
  --json                   every object as one JSON List

Exit status: 0 done; 1 failed, refused, or not found; 2 usage error or --timeout reached while waiting.`;

const OPTIONS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  name: { type: 'string' },
  image: { type: 'string' },
  'image-version': { type: 'string' },
  'kubernetes-version': { type: 'string' },
  'max-surge': { type: 'string' },
  'max-unavailable': { type: 'string' },
  'drain-timeout': { type: 'string' },
  'node-ready-timeout': { type: 'string' },
  'control-plane-first': { type: 'boolean' },
  'no-control-plane-first': { type: 'boolean' },
  force: { type: 'boolean' },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
  watch: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;
type Flag = keyof typeof OPTIONS;
type Values = { [K in Flag]?: (typeof OPTIONS)[K]['type'] extends 'string' ? string : boolean };

const COMMON: Flag[] = ['kubeconfig', 'context', 'help'];
const START_ONLY: Flag[] = [
  ...['image', 'image-version', 'kubernetes-version', 'max-surge', 'max-unavailable'],
  ...['drain-timeout', 'node-ready-timeout', 'control-plane-first', 'no-control-plane-first'],
  ...['force', 'wait', 'timeout'],
] as Flag[];
// Which flags each verb takes, so a misplaced flag is an error rather than silently ignored.
const VERBS: Record<string, Flag[]> = {
  start: [...COMMON, 'name', ...START_ONLY],
  status: [...COMMON, 'name', 'watch', 'json', 'timeout'],
  pause: [...COMMON, 'name'],
  resume: [...COMMON, 'name'],
  list: [...COMMON, 'json'],
};

export { type CommandIO, UsageError };

interface Parsed {
  verb: string;
  values: Values;
  name: string;
  /** --timeout in ms; undefined: no limit. */
  timeoutMs: number | undefined;
}

// Flags written `--flag=false` the way Go CLIs take them; parseArgs only knows `--no-flag`.
function normalize(argv: string[]): string[] {
  const args: string[] = [];
  for (const a of argv) {
    const cpf = /^--control-plane-first=(.*)$/.exec(a);
    if (cpf) {
      if (cpf[1] === 'true') args.push('--control-plane-first');
      else if (cpf[1] === 'false') args.push('--no-control-plane-first');
      else throw new UsageError(`--control-plane-first takes true or false, not "${cpf[1]}"`);
    } else if (/^-\d/.test(a) && args.at(-1)?.startsWith('--')) {
      // parseArgs takes "-1" for a flag; glue it on so the value check reports it.
      args.push(`${args.pop()}=${a}`);
    } else args.push(a);
  }
  return args;
}

function parse(argv: string[]): Parsed {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: normalize(argv), options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError((err as Error).message);
  }
  const [verb = '', ...extra] = parsed.positionals;
  const { values } = parsed;
  const name = values.name ?? Upgrade.defaultNodeVersion;
  if (values.help || !verb) return { verb: 'help', values, name, timeoutMs: undefined };
  const flags = VERBS[verb];
  if (!flags) throw new UsageError(`unknown verb "${verb}"`);
  if (extra.length) throw new UsageError(`${verb} takes no arguments, got "${extra.join(' ')}"`);
  const stray = (Object.keys(values) as Flag[]).filter((f) => !flags.includes(f));
  if (stray.length) throw new UsageError(`${stray.map((f) => `--${f}`).join(', ')}: not a flag of ${verb}`);
  if (values.name !== undefined && !values.name) throw new UsageError('--name must not be empty');
  let timeoutMs: number | undefined;
  if (values.timeout !== undefined) {
    if (verb === 'start' && !values.wait) throw new UsageError('--timeout only applies with --wait');
    if (verb === 'status' && !values.watch) throw new UsageError('--timeout only applies with --watch');
    // 0 means no limit.
    timeoutMs = parseTimeout(values.timeout) || undefined;
  }
  return { verb, values, name, timeoutMs };
}

/** Milliseconds in --timeout: whole seconds ("600"), or a duration ("10m", "1h30m"). */
export function parseTimeout(text: string): number {
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  try {
    return parseDuration(text);
  } catch {
    throw new UsageError(`--timeout "${text}" is not a number of seconds or a duration like 90s, 10m or 2h`);
  }
}

/** The flag's text, once checked as the CRD's duration pattern would check it. */
function duration(text: string, flag: string): string {
  durationFlag(text, flag);
  return text;
}

function count(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || !Number.isSafeInteger(n))
    throw new UsageError(`${flag} must be a whole number of nodes, 1 or more, not "${text}"`);
  return n;
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
  return planFrom(parse(args));
}

function planFrom({ verb, values: v, name, timeoutMs }: Parsed): StartPlan {
  if (verb !== 'start') throw new UsageError('expected "start --image IMG ..."');
  if (!v.image?.trim()) throw new UsageError('start needs --image IMG: the image new nodes boot from');
  if (v['control-plane-first'] && v['no-control-plane-first'])
    throw new UsageError('--control-plane-first and --no-control-plane-first contradict each other');
  const strategy: Strategy = {};
  if (v['max-surge'] !== undefined) strategy.maxSurge = count(v['max-surge'], '--max-surge');
  if (v['max-unavailable'] !== undefined)
    strategy.maxUnavailable = count(v['max-unavailable'], '--max-unavailable');
  if (v['drain-timeout'] !== undefined)
    strategy.drainTimeout = duration(v['drain-timeout'], '--drain-timeout');
  if (v['node-ready-timeout'] !== undefined)
    strategy.nodeReadyTimeout = duration(v['node-ready-timeout'], '--node-ready-timeout');
  if (v['control-plane-first']) strategy.controlPlaneFirst = true;
  if (v['no-control-plane-first']) strategy.controlPlaneFirst = false;
  const kv = v['kubernetes-version'];
  if (kv !== undefined && !/^v\d+\.\d+\.\d+$/.test(kv))
    throw new UsageError(`--kubernetes-version "${kv}" is not a release like v1.37.1`);
  const spec: StartPlan['spec'] = { image: v.image };
  if (v['image-version'] !== undefined) spec.imageVersion = v['image-version'];
  if (kv !== undefined) spec.kubernetesVersion = kv;
  if (Object.keys(strategy).length) spec.strategy = strategy;
  // Anything else the schema forbids (lengths, bounds) is caught here, before the server.
  const checked = NodeVersions.validate(NodeVersions.make({ name }, spec));
  if (!checked.ok) throw new UsageError(checked.errors.join('; '));
  return { name, spec, force: v.force ?? false, wait: v.wait ?? false, timeoutMs };
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
  return runCommand('upgrade', io, async (use) => {
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
      case 'status':
        return await status(client, p, io);
      case 'pause':
      case 'resume':
        return await setPaused(client, p.name, p.verb === 'pause', io);
      default:
        return await list(client, p, io);
    }
  });
}

const T = NodeVersions.type;
const seconds = (ms: number | undefined) => `${(ms ?? 0) / 1000}s`;

async function find(client: KubeClient, name: string): Promise<NodeVersion | undefined> {
  try {
    return await client.get<NodeVersion>(T, name);
  } catch (err) {
    if (isNotFound(err)) {
      // A 404 for the object and a 404 for the whole resource read the same; tell them apart.
      if (/the server could not find the requested resource/i.test((err as Error).message)) throw noCrds();
      return undefined;
    }
    throw err;
  }
}

const noCrds = () =>
  new Error('the upgrade.nodewarden.dev CRDs are not installed in this cluster (make install)');

async function mustFind(client: KubeClient, name: string): Promise<NodeVersion> {
  const nv = await find(client, name);
  if (!nv)
    throw new Error(`no NodeVersion named "${name}" (nodewarden upgrade start --image IMG creates it)`);
  return nv;
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
  if (target.spec.strategy?.paused)
    io.err.write(
      `note: nodeversion/${name} is paused; no new replacements start until "nodewarden upgrade resume"\n`,
    );
  if (!plan.wait) return 0;

  const progress = createProgress({ stream: io.err });
  const outcome = await follow<NodeVersion>(client, T, name, plan.timeoutMs, (nv) => {
    progress.update(describeRollout(nv));
    return rolloutDone(nv);
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

async function status(client: KubeClient, p: Parsed, io: CommandIO): Promise<number> {
  const json = p.values.json ?? false;
  const nv = await mustFind(client, p.name);
  if (!p.values.watch) {
    io.out.write(json ? `${JSON.stringify(plain(nv), null, 2)}\n` : detail(nv));
    return 0;
  }
  const screen = createScreen(io.out);
  const outcome = await follow<NodeVersion>(client, T, p.name, p.timeoutMs, (obj) => {
    if (json) io.out.write(`${JSON.stringify(plain(obj))}\n`);
    else screen.show(detail(obj));
    return false;
  });
  if (outcome.kind === 'gone') {
    io.err.write(`nodewarden upgrade: nodeversion/${p.name} was deleted\n`);
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

async function list(client: KubeClient, p: Parsed, io: CommandIO): Promise<number> {
  const all = <O>(type: typeof T) =>
    client.list<O>(type).then(
      (l) => l.items,
      (err: unknown) => {
        throw isNotFound(err) ? noCrds() : err;
      },
    );
  const [nvs, sgs, pns] = await Promise.all([
    all<NodeVersion>(T),
    all<ScalingGroup>(ScalingGroups.type),
    all<PendingNode>(PendingNodes.type),
  ]);
  if (p.values.json) {
    const items = [...nvs, ...sgs, ...pns].map(plain);
    io.out.write(`${JSON.stringify({ apiVersion: 'v1', kind: 'List', items }, null, 2)}\n`);
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

/** The object without managedFields: noise for anyone reading the output. */
function plain<O extends { metadata: { managedFields?: unknown } }>(o: O): O {
  const { managedFields: _, ...metadata } = o.metadata;
  return { ...o, metadata };
}
