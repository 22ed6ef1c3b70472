// The command line of `nodewarden upgrade`: its verb table (the flags, and what
// each verb takes) and how a command line is read into what to do. What each
// verb then does against the API server is in cli.ts.
import type { NodeVersion } from '../api/upgrade.ts';
import { SURGE_PERCENT, UNAVAILABLE_PERCENT } from '../api/upgrade-values.ts';
import { durationFlag, UsageError, waitFlag } from '../cli/command.ts';
import {
  CONNECTION_FLAGS,
  type CommandTable,
  type Invocation,
  OUTPUT_FLAGS,
  type VerbSpec,
} from '../cli/verbs.ts';
import { Upgrade } from './names.ts';
import { bothZero } from './rollout/budgets.ts';

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
const DECLARED = {
  name: 'upgrade',
  common: ['kubeconfig', 'context'],
  flags: {
    ...CONNECTION_FLAGS,
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
    },
    status: {
      summary: 'the rollout per scaling group, its conditions and timings',
      flags: ['name', 'watch', 'timeout', 'wait-timeout', 'output', 'json'],
      overrides: {
        timeout: timeoutWith('--watch'),
        output: {
          ...OUTPUT_FLAGS.output,
          help: `${OUTPUT_FLAGS.output.help};\nwith --watch, once per change`,
        },
      },
    },
    pause: {
      summary: 'start no new replacements (those in flight finish)',
      flags: ['name'],
    },
    resume: {
      summary: 'go on after a pause',
      flags: ['name'],
    },
    list: {
      summary: 'NodeVersions, ScalingGroups and PendingNodes',
      flags: ['output', 'json'],
      overrides: {
        output: {
          ...OUTPUT_FLAGS.output,
          help: `${OUTPUT_FLAGS.output.help};\njson and yaml print every object as one List`,
        },
      },
    },
  },
  footer:
    'Exit status: 0 done; 1 failed, refused, or not found; 2 usage error or --timeout reached while waiting.',
} satisfies Omit<CommandTable, 'verbs'> & { verbs: Record<string, Omit<VerbSpec, 'run'>> };

/** What each verb does, given by cli.ts: the table only says what it takes. */
export type UpgradeVerbs = Record<keyof typeof DECLARED.verbs, VerbSpec['run']>;

/** The command's table, with each verb's work. */
export function upgradeTable(run: UpgradeVerbs): CommandTable {
  const verbs: Record<string, VerbSpec> = {};
  for (const [name, spec] of Object.entries(DECLARED.verbs))
    verbs[name] = { ...spec, run: run[name as keyof UpgradeVerbs] };
  return { ...DECLARED, verbs };
}

/** The NodeVersion the command acts on: --name, else the default one. */
export function nameOf(inv: Invocation): string {
  const name = inv.string('name');
  if (name !== undefined && !name) throw new UsageError('--name must not be empty');
  return name ?? Upgrade.defaultNodeVersion;
}

/** The wait bound in ms (undefined: no limit), only where something waits: start --wait, status --watch. */
export function waitLimit(inv: Invocation): number | undefined {
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

export function planFrom(inv: Invocation): StartPlan {
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
  return { name, spec, force: inv.flag('force'), wait: inv.flag('wait'), timeoutMs: waitLimit(inv) };
}

/** "0" and "0%" as the budgets they spell, for the both-0 check; anything else is not 0. */
const zeroText = (text: string | undefined): number | string | undefined =>
  text === '0' ? 0 : text === '0%' ? text : undefined;

/**
 * Anything else the schema forbids (lengths, bounds), caught before the server.
 * The definition is loaded here, not at the top: its TypeBox schemas are most of
 * a `status`'s start-up, and only start needs them.
 */
export async function checkStartPlan(plan: StartPlan): Promise<void> {
  const { NodeVersions } = await import('../api/upgrade.ts');
  const checked = NodeVersions.validate(NodeVersions.make({ name: plan.name }, plan.spec));
  if (!checked.ok) throw new UsageError(checked.errors.join('; '));
}
