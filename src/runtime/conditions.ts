// metav1.Condition helpers on plain JSON status objects. They never mutate
// their input: status often comes straight from an informer cache.

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  /** CamelCase, machine-readable cause of the last transition, e.g. "DrainTimedOut". */
  reason: string;
  message: string;
  /** RFC 3339, seconds precision, as metav1.Time serialises it. */
  lastTransitionTime: string;
  observedGeneration?: number;
}

export type ConditionUpdate = Omit<Condition, 'lastTransitionTime'>;

// Stricter than the API server's reason pattern, so every reason we write is valid.
const REASON = /^[A-Z][A-Za-z0-9]*$/;
const STATUSES: readonly string[] = ['True', 'False', 'Unknown'];

function validate(next: ConditionUpdate): void {
  // Bad input here is a bug in the controller, not a runtime condition to handle.
  if (!next.type) throw new Error('condition type must not be empty');
  if (!STATUSES.includes(next.status)) {
    throw new Error(`condition ${next.type}: status must be True, False or Unknown, got "${next.status}"`);
  }
  if (!REASON.test(next.reason)) {
    throw new Error(`condition ${next.type}: reason must be non-empty CamelCase, got "${next.reason}"`);
  }
}

function timestamp(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * Returns a new array with `next` set. lastTransitionTime moves to `now` only
 * when the status changes (or the condition is new); reason, message and
 * observedGeneration always take the new values.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionUpdate,
  now: Date = new Date(),
): Condition[] {
  validate(next);
  const list = conditions ?? [];
  const i = list.findIndex((c) => c.type === next.type);
  const prev = list[i];
  const updated: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime:
      prev !== undefined && prev.status === next.status ? prev.lastTransitionTime : timestamp(now),
  };
  if (next.observedGeneration !== undefined) updated.observedGeneration = next.observedGeneration;
  if (prev === undefined) return [...list, updated];
  return list.map((c, j) => (j === i ? updated : c));
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/** Whether an object with a Ready condition (a Node, a Pod) reports it True. */
export function isReady(obj: {
  status?: { conditions?: readonly { type: string; status: string }[] };
}): boolean {
  return obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Returns a new array without the condition of that type. */
export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}
