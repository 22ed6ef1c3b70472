// Pure text for `nodewarden maintenance`: the --wait progress line, the
// `list` table and the `status NODE` detail of a NodeMaintenance. No I/O.
import type { NodeMaintenance } from '../api/maintenance.ts';
import { age, bar, columns } from '../cli/progress.ts';

/** The phase a maintenance is in; Pending until the operator writes one. */
export const phaseOf = (nm: NodeMaintenance) => nm.status?.phase ?? 'Pending';

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

/**
 * `list`: columns as kubectl get prints them. `wide` (-o wide) adds the drain's
 * pod counts and settings, and the reason uncut.
 */
export function table(items: NodeMaintenance[], now = Date.now(), wide = false): string {
  const rows = items.map((nm) => {
    const s = nm.status ?? {};
    const pct = s.drainProgress;
    const reason = nm.spec.reason || '-';
    const drain = wide
      ? [
          s.evictionPods === undefined ? '-' : `${podsEvicted(s)}/${s.evictionPods}`,
          String(s.pendingPods?.length ?? 0),
          String(s.blockedPods?.length ?? 0),
          nm.spec.timeout && nm.spec.timeout !== '0' ? nm.spec.timeout : 'none',
          (nm.spec.gracePeriodSeconds ?? -1) < 0 ? 'pod' : `${nm.spec.gracePeriodSeconds}s`,
          nm.spec.podSelector || '<all>',
        ]
      : [];
    return [
      ...[nm.metadata.name ?? '', nm.spec.nodeName, phaseOf(nm), pct === undefined ? '-' : `${pct}%`],
      ...drain,
      wide || reason.length <= 48 ? reason : `${reason.slice(0, 47)}…`,
      age(nm.metadata.creationTimestamp, now),
    ];
  });
  const head = ['NAME', 'NODE', 'PHASE', 'PROGRESS'];
  if (wide) head.push('EVICTED', 'PENDING', 'BLOCKED', 'DRAIN-TIMEOUT', 'GRACE-PERIOD', 'POD-SELECTOR');
  return columns([[...head, 'REASON', 'AGE'], ...rows]);
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
