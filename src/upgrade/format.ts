// Pure text and state for `nodewarden upgrade`: what a NodeVersion's status
// says about its rollout, the --wait progress line, the `status` display and
// the `list` tables. No I/O.
import type { NodeVersion, PendingNode, ScalingGroup } from '../api/upgrade.ts';
import { age, bar, columns } from '../cli/progress.ts';

type Status = NonNullable<NodeVersion['status']>;
type Condition = NonNullable<Status['conditions']>[number];
type Group = NonNullable<Status['groups']>[number];

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

export function conditionOf(nv: NodeVersion, type: 'Outdated' | 'Progressing' | 'Degraded' | 'DrainBlocked') {
  return nv.status?.conditions?.find((c) => c.type === type);
}
const isTrue = (c: Condition | undefined) => c?.status === 'True';

/** The generation the operator has not caught up with yet, or undefined when its status is current. */
export function unobservedGeneration(nv: NodeVersion): number | undefined {
  const generation = nv.metadata.generation ?? 0;
  const seen = nv.status?.observedGeneration;
  if (!nv.status || seen === undefined || seen < generation) return generation;
  return undefined;
}

/**
 * Whether a rollout is under way, by the anchor CLI's rule: the operator says
 * it is progressing, or it says nodes are outdated with respect to the current
 * spec (an Outdated condition from an older generation may be about to clear).
 */
export function rolloutInProgress(nv: NodeVersion): boolean {
  if (isTrue(conditionOf(nv, 'Progressing'))) return true;
  const current = nv.status?.observedGeneration === (nv.metadata.generation ?? 0);
  return current && isTrue(conditionOf(nv, 'Outdated'));
}

/** Whether the rollout of the current spec is complete: nothing outdated, nothing in flight. */
export function rolloutDone(nv: NodeVersion): boolean {
  if (unobservedGeneration(nv) !== undefined) return false;
  const outdated = conditionOf(nv, 'Outdated');
  // A condition stamped with an older generation describes the previous spec.
  const stale = (c: Condition | undefined) =>
    c?.observedGeneration !== undefined && c.observedGeneration < (nv.metadata.generation ?? 0);
  if (outdated?.status !== 'False' || stale(outdated)) return false;
  const progressing = conditionOf(nv, 'Progressing');
  return !isTrue(progressing) && !stale(progressing);
}

export interface Totals {
  total: number;
  upToDate: number;
  outdated: number;
  /** New nodes joining or taking over (heirs and mints). */
  replacing: number;
  /** Donors being drained. */
  draining: number;
}

/**
 * Node counts of the whole rollout: totals from status.counts, else summed over
 * the groups. Replacing and draining are always the groups' sums, so the summary
 * and the per-group columns are one count: a donor is only paired until its drain
 * runs (counts.donors counts it from the pairing on, and said "3 draining" beside
 * a DRAINING column of 1).
 */
export function totalsOf(status: Status | undefined): Totals {
  const t: Totals = { total: 0, upToDate: 0, outdated: 0, replacing: 0, draining: 0 };
  for (const g of status?.groups ?? []) {
    t.total += g.total;
    t.upToDate += g.upToDate;
    t.outdated += g.outdated;
    t.replacing += g.replacing;
    t.draining += g.draining;
  }
  const c = status?.counts;
  if (!c) return t;
  const grouped = (status?.groups?.length ?? 0) > 0;
  return {
    total: c.total ?? 0,
    upToDate: c.upToDate ?? 0,
    outdated: c.outdated ?? 0,
    replacing: grouped ? t.replacing : (c.heirs ?? 0) + (c.mints ?? 0),
    draining: grouped ? t.draining : (c.donors ?? 0),
  };
}

const percent = (done: number, total: number) => (total > 0 ? (100 * done) / total : 0);
const fraction = (done: number, total: number, width: number) =>
  `[${bar(percent(done, total), width)}] ${done}/${total}`;

/** One word for the rollout (with qualifiers), as the `list` table shows it. */
export function stateOf(nv: NodeVersion): string {
  if (unobservedGeneration(nv) !== undefined) return 'Waiting';
  const words = [
    rolloutDone(nv)
      ? 'UpToDate'
      : isTrue(conditionOf(nv, 'Progressing'))
        ? 'Progressing'
        : isTrue(conditionOf(nv, 'Outdated'))
          ? 'Outdated'
          : 'Unknown',
  ];
  if (nv.spec.strategy?.paused) words.push('Paused');
  if (isTrue(conditionOf(nv, 'DrainBlocked'))) words.push('DrainBlocked');
  if (isTrue(conditionOf(nv, 'Degraded'))) words.push('Degraded');
  return words.join(',');
}

const waiting = (generation: number) => `waiting for the operator to observe generation ${generation}`;

/**
 * What a sequence of --wait lines remembers: the fullest bar drawn for this
 * generation, and the degraded message already printed.
 */
export interface RolloutLineMemo {
  generation?: number;
  percent: number;
  /** Leave out a degraded message already printed (a log, where every line stays on screen). */
  once: boolean;
  degraded?: string;
}

/** Memory for `describeRollout` across the lines of one --wait; `once` where lines scroll rather than redraw. */
export function rolloutLineMemo(once: boolean): RolloutLineMemo {
  return { percent: 0, once };
}

/**
 * One line on where a rollout stands, as the --wait progress line shows it. The
 * fraction is of the nodes the rollout replaces (up to date plus outdated): new
 * nodes joining do not grow it, so the bar does not shrink as a surge arrives;
 * with a memo, it never goes backwards within a generation at all.
 */
export function describeRollout(nv: NodeVersion, memo?: RolloutLineMemo): string {
  const t = totalsOf(nv.status);
  const of = t.upToDate + t.outdated;
  let p = percent(t.upToDate, of);
  if (memo) {
    const generation = nv.status?.observedGeneration;
    if (memo.generation !== generation) Object.assign(memo, { generation, percent: 0, degraded: undefined });
    p = memo.percent = Math.max(memo.percent, p);
  }
  const parts = [`[${bar(p, 20)}] ${t.upToDate}/${of} up to date`];
  if (t.replacing) parts.push(`${t.replacing} replacing`);
  if (t.draining) parts.push(`${t.draining} draining`);
  const pending = unobservedGeneration(nv);
  if (pending !== undefined) parts.push(waiting(pending));
  else {
    const progressing = conditionOf(nv, 'Progressing');
    if (isTrue(progressing)) parts.push(`progressing (${progressing?.reason})`);
    else if (rolloutDone(nv)) parts.push('done');
  }
  if (nv.spec.strategy?.paused) parts.push('paused');
  const blocked = conditionOf(nv, 'DrainBlocked');
  if (isTrue(blocked)) parts.push(`drain blocked: ${blocked?.message}`);
  const degraded = conditionOf(nv, 'Degraded');
  const said = isTrue(degraded) ? degraded?.message || degraded?.reason : undefined;
  if (said !== undefined) {
    if (memo?.once && memo.degraded === said) parts.push(`degraded (${degraded?.reason}, as above)`);
    else parts.push(`degraded: ${said}`);
  }
  if (memo) memo.degraded = said;
  // The Degraded message is the last error while degraded: say it once.
  const lastError = nv.status?.lastError;
  if (lastError && !said?.includes(lastError)) parts.push(`last error: ${lastError}`);
  return parts.join(', ');
}

/** The line --wait ends on when the rollout is complete. */
export function describeFinished(nv: NodeVersion, now = Date.now()): string {
  const t = totalsOf(nv.status);
  const s = nv.status ?? {};
  const replaced = s.replaced ? `, ${plural(s.replaced, 'node')} replaced` : '';
  const took = s.startTime ? ` in ${elapsed(s, now)}` : '';
  return `nodeversion/${nv.metadata.name}: ${t.upToDate}/${t.total} nodes up to date on ${nv.spec.image}${replaced}${took}`;
}

// The current rollout runs from startTime to finishTime; a finishTime older
// than startTime belongs to the previous rollout, so this one is still running.
function elapsed(s: Status, now: number): string {
  const start = Date.parse(s.startTime ?? '');
  const finish = Date.parse(s.finishTime ?? '');
  return age(s.startTime, !Number.isNaN(finish) && finish >= start ? finish : now);
}

/**
 * The per-group table: progress bar and fraction, replacements in flight,
 * drains, launch image; `wide` adds the outdated nodes and whether the group
 * launches the target image yet.
 */
export function groupTable(nv: NodeVersion, wide = false): string {
  const groups = [...(nv.status?.groups ?? [])].sort(
    (a, b) => roleOrder(a) - roleOrder(b) || a.groupId.localeCompare(b.groupId),
  );
  const stale = (g: Group) => g.imageReference !== undefined && g.imageReference !== nv.spec.image;
  const rows = groups.map((g) => [
    g.groupId,
    g.role,
    fraction(g.upToDate, g.total, 10),
    ...(wide ? [String(g.outdated)] : []),
    String(g.replacing),
    String(g.draining),
    `${g.imageReference ?? '-'}${stale(g) ? ' *' : ''}`,
    ...(wide ? [g.imageReference === undefined ? 'unknown' : stale(g) ? 'no' : 'yes'] : []),
  ]);
  const head = wide
    ? ['GROUP', 'ROLE', 'UP-TO-DATE', 'OUTDATED', 'REPLACING', 'DRAINING', 'IMAGE', 'LAUNCHES-TARGET']
    : ['GROUP', 'ROLE', 'UP-TO-DATE', 'REPLACING', 'DRAINING', 'IMAGE'];
  const text = columns([head, ...rows]);
  return groups.some(stale) ? `${text}* the group does not launch ${nv.spec.image} yet\n` : text;
}
// Control-plane groups first: that is the order they are upgraded in by default.
const roleOrder = (g: Group) => (g.role === 'ControlPlane' ? 0 : 1);

function strategyText(nv: NodeVersion): string {
  const s = nv.spec.strategy ?? {};
  const parts = [
    `max surge ${s.maxSurge ?? 1}`,
    `max unavailable ${s.maxUnavailable ?? 1}`,
    s.controlPlaneFirst === false ? 'control plane with the workers' : 'control plane first',
    `drain timeout ${s.drainTimeout === '0' ? 'none' : (s.drainTimeout ?? '30m')}`,
    `node ready timeout ${s.nodeReadyTimeout ?? '15m'}`,
  ];
  if (s.paused) parts.push('PAUSED (replacements in flight finish; no new ones start)');
  return parts.join(', ');
}

function totalsText(s: Status | undefined): string {
  const t = totalsOf(s);
  const c = s?.counts ?? {};
  const extra: [number | undefined, string][] = [
    [t.outdated, 'outdated'],
    [t.draining, 'draining'],
    [Math.max(0, (c.donors ?? 0) - t.draining), 'paired, not draining'],
    [c.heirs, 'taking over'],
    [c.mints, 'joined, not yet paired'],
    [c.pending, 'pending'],
    [c.awaitingAnnotation, 'awaiting annotation'],
    [c.obsolete, 'obsolete'],
    [c.invalid, 'invalid'],
  ];
  const parts = [`${t.upToDate}/${t.total} up to date`];
  for (const [n, what] of extra) if (n) parts.push(`${n} ${what}`);
  return `${parts.join(', ')}; ${s?.replaced ?? 0} replaced`;
}

/** `status`: everything the NodeVersion says about the rollout, in words; `wide`: the wide group table. */
export function detail(nv: NodeVersion, now = Date.now(), wide = false): string {
  const s = nv.status;
  const when = (t: string | undefined) => (t ? `${t} (${age(t, now)} ago)` : undefined);
  const pending = unobservedGeneration(nv);
  const seen = s?.observedGeneration;
  const state =
    pending === undefined
      ? stateOf(nv)
      : `${waiting(pending)}${seen !== undefined && s ? ` (the status below is of generation ${seen})` : ''}`;
  const finished = s?.finishTime && Date.parse(s.finishTime) >= Date.parse(s.startTime ?? '');
  const rows: [string, string | string[] | undefined][] = [
    ['Name', nv.metadata.name],
    ['Image', nv.spec.image + (nv.spec.imageVersion ? ` (version ${nv.spec.imageVersion})` : '')],
    ['Kubernetes', nv.spec.kubernetesVersion],
    ['Strategy', strategyText(nv)],
    ['State', state],
    ['Nodes', s ? totalsText(s) : undefined],
    [
      'Conditions',
      s?.conditions?.map((c) => `${c.type}=${c.status} (${c.reason})${c.message ? `: ${c.message}` : ''}`),
    ],
    ['Last error', s?.lastError],
    ['Started', when(s?.startTime)],
    ['Finished', finished ? when(s?.finishTime) : undefined],
    ['Elapsed', s?.startTime ? elapsed(s, now) : undefined],
  ];
  const lines: string[] = [];
  for (const [k, v] of rows) {
    const [first, ...more] = typeof v === 'string' ? [v] : (v ?? []);
    if (first !== undefined) lines.push(`${k}:`.padEnd(13) + first, ...more.map((m) => ' '.repeat(13) + m));
  }
  // The groups go between the state and the totals: they are what people look at.
  if (s?.groups?.length) {
    const at = lines.findIndex((l) => l.startsWith('Nodes:'));
    const table = groupTable(nv, wide)
      .trimEnd()
      .split('\n')
      .map((l) => `  ${l}`);
    lines.splice(at < 0 ? lines.length : at, 0, 'Groups:', ...table);
  }
  return `${lines.join('\n')}\n`;
}

/** `list`: the NodeVersions; `wide` adds the nodes in flight, the groups and the strategy. */
export function nodeVersionTable(items: NodeVersion[], now = Date.now(), wide = false): string {
  const rows = items.map((nv) => {
    const t = totalsOf(nv.status);
    const s = nv.spec.strategy ?? {};
    return [
      nv.metadata.name ?? '',
      nv.spec.image,
      nv.spec.imageVersion || '-',
      nv.spec.kubernetesVersion || '-',
      nv.status ? `${t.upToDate}/${t.total}` : '-',
      ...(wide
        ? [
            String(t.replacing),
            String(t.draining),
            String(nv.status?.groups?.length ?? 0),
            String(s.maxSurge ?? 1),
            String(s.maxUnavailable ?? 1),
            s.drainTimeout === '0' ? 'none' : (s.drainTimeout ?? '30m'),
          ]
        : []),
      stateOf(nv),
      age(nv.metadata.creationTimestamp, now),
    ];
  });
  const head = ['NAME', 'IMAGE', 'VERSION', 'KUBERNETES', 'UP-TO-DATE'];
  if (wide) head.push('REPLACING', 'DRAINING', 'GROUPS', 'MAX-SURGE', 'MAX-UNAVAILABLE', 'DRAIN-TIMEOUT');
  return columns([[...head, 'STATE', 'AGE'], ...rows]);
}

/** `list`: the ScalingGroups; `wide` adds their NodeVersion and their own rollout budgets. */
export function scalingGroupTable(items: ScalingGroup[], wide = false): string {
  const n = (v: number | string | undefined) => (v === undefined ? '-' : String(v));
  const rows = items.map((sg) => [
    sg.metadata.name ?? '',
    sg.spec.groupId,
    sg.spec.role ?? '-',
    n(sg.spec.min),
    n(sg.spec.max),
    sg.spec.autoscaling ? 'yes' : 'no',
    ...(wide
      ? [
          sg.spec.nodeVersion ?? '-',
          n(sg.spec.rollout?.maxSurge),
          n(sg.spec.rollout?.maxUnavailable),
          n(sg.spec.rollout?.maxSize),
        ]
      : []),
    sg.status?.imageReference ?? '-',
  ]);
  const head = ['NAME', 'GROUP', 'ROLE', 'MIN', 'MAX', 'AUTOSCALING'];
  if (wide) head.push('NODEVERSION', 'MAX-SURGE', 'MAX-UNAVAILABLE', 'MAX-SIZE');
  return columns([[...head, 'IMAGE'], ...rows]);
}

/** `list`: the PendingNodes, with how far their deadline is; `wide` adds the group and the provider ID. */
export function pendingNodeTable(items: PendingNode[], now = Date.now(), wide = false): string {
  const deadline = (d: string | undefined) => {
    if (!d) return '-';
    const t = Date.parse(d);
    if (Number.isNaN(t)) return d;
    return t > now ? `in ${age(new Date(now).toISOString(), t)}` : `${age(d, now)} ago`;
  };
  const rows = items.map((pn) => [
    pn.metadata.name ?? '',
    pn.spec.nodeName,
    pn.spec.goal,
    pn.status?.cspState ?? '-',
    pn.status?.reachedGoal ? 'yes' : 'no',
    deadline(pn.spec.deadline),
    ...(wide ? [pn.spec.groupID, pn.spec.providerID] : []),
  ]);
  const head = ['NAME', 'NODE', 'GOAL', 'CSPSTATE', 'REACHED', 'DEADLINE'];
  return columns([wide ? [...head, 'GROUP', 'PROVIDER-ID'] : head, ...rows]);
}
