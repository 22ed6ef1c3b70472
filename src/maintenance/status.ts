// A NodeMaintenance's next status from what one reconcile found and did, as a
// pure function. The reconcile walks its steps (spec, finalizer, node, lease,
// record, cordon, drain) and stops at the first that decides the round; that
// step, with what it observed, is all this needs: the phase (Pending → Running
// → Succeeded, or Failed for good), the Cordoned, Drained and Ready conditions
// at observedGeneration, the drain's pending and blocked pods and progress,
// and lastError. nextLook says when the reconcile should look again.
import type { NodeMaintenance, NodeMaintenanceStatusType } from '../api/maintenance.ts';
import type { BlockedPod, DrainStepResult } from '../drain/index.ts';
import { setCondition } from '../runtime/conditions.ts';
import { parseDuration } from '../runtime/duration.ts';
import { done, type Result, requeueAfter } from '../runtime/reconcile.ts';
import { describeProblems, type SpecProblem } from './spec.ts';

/** What a drain step reported that the status records (a DrainStepResult fits). */
export type DrainObservation = Pick<
  DrainStepResult,
  | 'done'
  | 'pending'
  | 'blocked'
  | 'drainProgress'
  | 'evictionPods'
  | 'policyBlocked'
  | 'errors'
  | 'nextCheckMs'
>;

/** The step a reconcile stopped at, with what it observed there. */
export type MaintenanceStep =
  /** The maintenance failed in an earlier round; nothing more is done. */
  | { step: 'alreadyFailed' }
  | { step: 'invalidSpec'; problems: readonly SpecProblem[] }
  | { step: 'nodeMissing' }
  | { step: 'leaseHeldElsewhere'; holder: string }
  /** Whether the node was schedulable, seen before the first cordon; written before the cordon happens. */
  | { step: 'schedulableRecorded'; nodeWasSchedulable: boolean }
  /** The node is (again) cordoned and tainted; its drain finished in an earlier round. */
  | { step: 'cordoned' }
  /** The node is cordoned and one drain step ran over the pods on it. */
  | { step: 'drainStepped'; podsOnNode: number; drain: DrainObservation };

export interface MaintenanceStatusInput {
  nm: Pick<NodeMaintenance, 'metadata' | 'spec' | 'status'>;
  reached: MaintenanceStep;
  now: Date;
}

type Status = NodeMaintenanceStatusType;
type ConditionUpdate = Parameters<typeof setCondition>[1];

export function nextMaintenanceStatus({ nm, reached, now }: MaintenanceStatusInput): Status {
  const status: Status = structuredClone(nm.status ?? {});
  status.phase ??= 'Pending';
  status.startTime ??= now.toISOString();
  status.observedGeneration = nm.metadata.generation;
  const set = (c: Omit<ConditionUpdate, 'observedGeneration'>) => {
    status.conditions = setCondition(
      status.conditions,
      { ...c, observedGeneration: nm.metadata.generation },
      now,
    );
  };
  const node = nm.spec.nodeName;
  switch (reached.step) {
    case 'alreadyFailed':
      return status;
    case 'invalidSpec':
      return failed(status, set, `invalid spec: ${describeProblems(reached.problems)}`, now, 'InvalidSpec');
    case 'nodeMissing':
      return failed(status, set, `nodes "${node}" not found`, now);
    case 'leaseHeldElsewhere':
      status.lastError = `the lease of node ${node} is held by ${reached.holder}; waiting for it`;
      set({ type: 'Ready', status: 'False', reason: 'LeaseHeldElsewhere', message: status.lastError });
      return status;
    case 'schedulableRecorded':
      status.nodeWasSchedulable = reached.nodeWasSchedulable;
      return status;
    case 'cordoned':
      set(cordonedCondition(node));
      return status;
    case 'drainStepped':
      set(cordonedCondition(node));
      status.phase = 'Running';
      return drained(status, set, nm, reached, now);
  }
}

const cordonedCondition = (node: string) =>
  ({
    type: 'Cordoned',
    status: 'True',
    reason: 'NodeCordoned',
    message: `node ${node} is unschedulable and tainted`,
  }) as const;

type SetCondition = (c: Omit<ConditionUpdate, 'observedGeneration'>) => void;

/** Failed for good: the reason in lastError and the Ready condition, the first failure's time kept. */
function failed(
  status: Status,
  set: SetCondition,
  message: string,
  now: Date,
  reason: 'MaintenanceFailed' | 'InvalidSpec' = 'MaintenanceFailed',
): Status {
  status.phase = 'Failed';
  status.lastError = message;
  status.completionTime ??= now.toISOString();
  set({ type: 'Ready', status: 'False', reason, message });
  return status;
}

/** After a drain step: Succeeded when the node is empty, Failed past spec.timeout, else still draining. */
function drained(
  status: Status,
  set: SetCondition,
  nm: MaintenanceStatusInput['nm'],
  reached: Extract<MaintenanceStep, { step: 'drainStepped' }>,
  now: Date,
): Status {
  const { drain } = reached;
  status.totalPods ??= reached.podsOnNode;
  status.evictionPods ??= drain.evictionPods;
  status.pendingPods = drain.pending;
  status.blockedPods = drain.blocked;
  status.drainProgress = drain.drainProgress;
  const problems = [
    ...drain.policyBlocked,
    ...drain.errors.map((e) => `${e.namespace}/${e.name}: ${e.message}`),
  ];
  status.lastError = problems.length ? problems.join('; ') : undefined;

  if (drain.done) {
    status.phase = 'Succeeded';
    status.drainProgress = 100;
    status.pendingPods = [];
    status.blockedPods = [];
    status.completionTime = now.toISOString();
    status.lastError = undefined;
    set({
      type: 'Drained',
      status: 'True',
      reason: 'Drained',
      message: `${status.evictionPods ?? 0} pods evicted`,
    });
    set({
      type: 'Ready',
      status: 'True',
      reason: 'MaintenanceReady',
      message: `node ${nm.spec.nodeName} is drained and ready for maintenance`,
    });
    return status;
  }
  const timeoutMs = parseDuration(nm.spec.timeout ?? '0');
  if (timeoutMs > 0 && now.getTime() - Date.parse(status.startTime!) > timeoutMs) {
    const left = `${drain.pending.length} pods left${blockedSummary(drain.blocked)}`;
    const message = `drain did not finish within ${nm.spec.timeout}: ${left}${status.lastError ? `; ${status.lastError}` : ''}`;
    return failed(status, set, message, now);
  }
  const waiting = `${drain.pending.length} pods left${drain.blocked.length ? `, ${drain.blocked.length} blocked by disruption budgets` : ''}`;
  const reason = drain.blocked.length ? 'EvictionBlocked' : 'Draining';
  set({ type: 'Drained', status: 'False', reason, message: waiting });
  set({ type: 'Ready', status: 'False', reason: 'Draining', message: waiting });
  return status;
}

/** ", blocked by disruption budgets: ns/a (PDB web), …" — what a timed-out drain was waiting on. */
function blockedSummary(blocked: readonly BlockedPod[]): string {
  if (blocked.length === 0) return '';
  const shown = blocked.slice(0, 5).map((b) => `${b.namespace}/${b.name}${b.pdb ? ` (PDB ${b.pdb})` : ''}`);
  const more = blocked.length > 5 ? ` and ${blocked.length - 5} more` : '';
  return `, blocked by disruption budgets: ${shown.join(', ')}${more}`;
}

/** How often a maintenance waiting for a node lease someone else holds looks again. */
const LEASE_ELSEWHERE_MS = 10_000;

/**
 * When to reconcile again after a round that reached `reached` and ends with `status`:
 * never once Failed; soon after recording schedulability (the cordon is next); at lease
 * renewal while holding a drained node; while draining, when the drain step asks (250 ms–5 s).
 */
export function nextLook(reached: MaintenanceStep, status: Status, leaseRenewMs: number): Result {
  if (status.phase === 'Failed') return done();
  if (reached.step === 'leaseHeldElsewhere') return requeueAfter(LEASE_ELSEWHERE_MS);
  if (reached.step === 'schedulableRecorded') return requeueAfter(1); // persisted first; the cordon comes next round
  if (reached.step === 'drainStepped' && status.phase === 'Running')
    return requeueAfter(Math.min(5000, Math.max(250, reached.drain.nextCheckMs)));
  return requeueAfter(leaseRenewMs); // holding a drained node: look again in time to renew its lease
}
