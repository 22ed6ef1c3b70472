// Everything in a NodeMaintenance spec that the controller interprets, checked
// before anything is changed: the webhook refuses such a spec at admission, and
// the controller, should one slip past (no webhook, an older CRD), fails the
// maintenance without ever touching the node. One function for both, so they
// never disagree. Pure.
import { Maintenance, type NodeMaintenanceSpecType } from '../api/maintenance.ts';
import { labelKeyProblem, labelValueProblem, parsePodSelector } from '../drain/selector.ts';
import { parseDuration } from '../runtime/duration.ts';

export interface SpecProblem {
  /** The field at fault, as a user would write it: "spec.taints[1].key". */
  field: string;
  /** What is wrong and what to write instead. */
  message: string;
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
const OURS = [Maintenance.drainTaint, Maintenance.unschedulableTaint];

/** Every problem of the spec, in field order; empty when the controller can act on it. */
export function validateMaintenanceSpec(spec: Partial<NodeMaintenanceSpecType> | undefined): SpecProblem[] {
  const problems: SpecProblem[] = [];
  const say = (field: string, message: string) => problems.push({ field: `spec.${field}`, message });
  const s = (spec ?? {}) as Record<string, unknown>;

  const nodeName = s.nodeName;
  if (typeof nodeName !== 'string' || nodeName === '') say('nodeName', 'is required: the name of a Node');
  else if (nodeName.length > 253 || !NODE_NAME.test(nodeName))
    say('nodeName', `"${nodeName}" is not a node name (a lowercase DNS subdomain of at most 253 characters)`);

  if (s.reason !== undefined && (typeof s.reason !== 'string' || s.reason.length > 1024))
    say('reason', 'must be a string of at most 1024 characters');

  if (s.timeout !== undefined) {
    const bad = `must be a duration such as "90s", "10m" or "1h30m", or "0" for no bound`;
    if (typeof s.timeout !== 'string') say('timeout', bad);
    else {
      try {
        parseDuration(s.timeout);
      } catch {
        say('timeout', `"${s.timeout}" ${bad}`);
      }
    }
  }

  const grace = s.gracePeriodSeconds;
  if (
    grace !== undefined &&
    (!Number.isInteger(grace) || (grace as number) < -1 || (grace as number) > 86400)
  )
    say(
      'gracePeriodSeconds',
      `${JSON.stringify(grace)} must be a whole number from -1 (the pod's own) to 86400`,
    );

  if (s.podSelector !== undefined) {
    if (typeof s.podSelector !== 'string') say('podSelector', 'must be a label selector string');
    else if (s.podSelector.length > 1024) say('podSelector', 'must be at most 1024 characters');
    else {
      const parsed = parsePodSelector(s.podSelector);
      if (!parsed.ok) say('podSelector', parsed.message);
    }
  }

  for (const flag of ['deleteEmptyDirData', 'evictUnmanagedPods', 'ignoreDaemonSets'] as const)
    if (s[flag] !== undefined && typeof s[flag] !== 'boolean') say(flag, 'must be true or false');

  validateTaints(s.taints, say);
  return problems;
}

function validateTaints(taints: unknown, say: (field: string, message: string) => void): void {
  if (taints === undefined) return;
  if (!Array.isArray(taints)) {
    say('taints', 'must be a list of {key, value, effect}');
    return;
  }
  if (taints.length > 16) say('taints', `has ${taints.length} entries; at most 16 are allowed`);
  // The API server refuses a node with two taints of one key and effect, so the cordon patch would fail.
  const ours = new Set(OURS.map((t) => `${t.key}:${t.effect}`));
  const seen = new Set<string>();
  for (const [i, t] of (
    taints as ({ key?: unknown; value?: unknown; effect?: unknown } | null)[]
  ).entries()) {
    const at = `taints[${i}]`;
    const key = t?.key;
    if (typeof key !== 'string') {
      say(`${at}.key`, 'is required');
      continue;
    }
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) say(`${at}.key`, keyProblem);
    if (t?.value !== undefined) {
      const valueProblem = typeof t.value === 'string' ? labelValueProblem(t.value) : 'must be a string';
      if (valueProblem) say(`${at}.value`, valueProblem);
    }
    if (typeof t?.effect !== 'string' || !EFFECTS.includes(t.effect)) {
      say(`${at}.effect`, `${JSON.stringify(t?.effect)} must be one of ${EFFECTS.join(', ')}`);
      continue;
    }
    const id = `${key}:${t.effect}`;
    if (ours.has(id)) say(at, `${id} is a taint the maintenance puts on the node itself; leave it out`);
    else if (seen.has(id)) say(at, `${id} is given twice; a node holds one taint per key and effect`);
    seen.add(id);
  }
}

/** "spec.podSelector: …; spec.timeout: …" — the problems as one line for a refusal or a condition. */
export function describeProblems(problems: readonly SpecProblem[]): string {
  return problems.map((p) => `${p.field}: ${p.message}`).join('; ');
}
