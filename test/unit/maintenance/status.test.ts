import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeMaintenance, NodeMaintenanceStatusType } from '../../../src/api/maintenance.ts';
import {
  type DrainObservation,
  type MaintenanceStep,
  nextLook,
  nextMaintenanceStatus,
} from '../../../src/maintenance/status.ts';
import type { Condition } from '../../../src/runtime/conditions.ts';

const T0 = new Date('2026-11-24T01:00:00.000Z');
const later = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const RENEW_MS = 900_000;
const GEN = 3;

type Status = NodeMaintenanceStatusType;

const nm = (status?: Status, spec: Partial<NodeMaintenance['spec']> = {}): NodeMaintenance =>
  ({
    apiVersion: 'maintenance.nodewarden.dev/v1alpha1',
    kind: 'NodeMaintenance',
    metadata: { name: 'm', generation: GEN },
    spec: { nodeName: 'n1', ...spec },
    ...(status ? { status } : {}),
  }) as NodeMaintenance;

const pod = (name: string) => ({ namespace: 'ns', name });
const drain = (over: Partial<DrainObservation> = {}): DrainObservation => ({
  done: false,
  pending: [pod('a'), pod('b')],
  blocked: [],
  drainProgress: 50,
  evictionPods: 4,
  policyBlocked: [],
  errors: [],
  nextCheckMs: 1000,
  ...over,
});
const stepped = (over: Partial<DrainObservation> = {}, podsOnNode = 6): MaintenanceStep => ({
  step: 'drainStepped',
  podsOnNode,
  drain: drain(over),
});

const next = (status: Status | undefined, reached: MaintenanceStep, now = T0, spec = {}) =>
  nextMaintenanceStatus({ nm: nm(status, spec), reached, now });
const cond = (s: Status, type: string) => s.conditions?.find((c) => c.type === type);
const brief = (c: Condition | undefined) => c && { status: c.status, reason: c.reason, message: c.message };

const running: Status = {
  phase: 'Running',
  startTime: T0.toISOString(),
  nodeWasSchedulable: true,
};

describe('the status every round starts from', () => {
  it('is Pending with a start time on a new maintenance, at the current generation', () => {
    const s = next(undefined, { step: 'nodeMissing' }, later(5));
    assert.equal(s.startTime, later(5).toISOString());
    assert.equal(s.observedGeneration, GEN);
    const fresh = next(undefined, { step: 'schedulableRecorded', nodeWasSchedulable: true });
    assert.equal(fresh.phase, 'Pending');
  });

  it('keeps the start time of an earlier round', () => {
    assert.equal(next(running, stepped(), later(60)).startTime, T0.toISOString());
  });

  it('never changes the status it was given', () => {
    const before = structuredClone(running);
    const given = structuredClone(running);
    next(given, stepped({ done: true }));
    assert.deepEqual(given, before);
  });

  it('stamps every condition it sets with the generation it acted on', () => {
    const s = next(running, stepped());
    assert.ok(s.conditions?.length);
    for (const c of s.conditions ?? []) assert.equal(c.observedGeneration, GEN);
  });
});

describe('a maintenance that cannot begin', () => {
  const cases: [string, Status | undefined, MaintenanceStep, string, string][] = [
    [
      'an invalid spec',
      undefined,
      { step: 'invalidSpec', problems: [{ field: 'spec.timeout', message: 'is not a duration' }] },
      'InvalidSpec',
      'invalid spec: spec.timeout: is not a duration',
    ],
    [
      'a node that does not exist',
      undefined,
      { step: 'nodeMissing' },
      'MaintenanceFailed',
      'nodes "n1" not found',
    ],
  ];
  for (const [name, before, reached, reason, message] of cases) {
    it(`fails for good on ${name}, saying why in lastError and Ready`, () => {
      const s = next(before, reached, later(2));
      assert.equal(s.phase, 'Failed');
      assert.equal(s.lastError, message);
      assert.equal(s.completionTime, later(2).toISOString());
      assert.deepEqual(brief(cond(s, 'Ready')), { status: 'False', reason, message });
      assert.deepEqual(nextLook(reached, s, RENEW_MS), {});
    });
  }

  it('keeps the completion time of a drain that finished before the spec turned invalid', () => {
    const done = { ...running, phase: 'Succeeded' as const, completionTime: T0.toISOString() };
    const s = next(
      done,
      { step: 'invalidSpec', problems: [{ field: 'spec.timeout', message: 'bad' }] },
      later(9),
    );
    assert.equal(s.phase, 'Failed');
    assert.equal(s.completionTime, T0.toISOString());
  });

  it('stays Failed once failed, changing nothing but the generation it saw', () => {
    const failed = next(undefined, { step: 'nodeMissing' });
    const s = next({ ...failed, observedGeneration: 1 }, { step: 'alreadyFailed' }, later(30));
    assert.deepEqual(s, { ...failed, observedGeneration: GEN });
    assert.deepEqual(nextLook({ step: 'alreadyFailed' }, s, RENEW_MS), {});
  });
});

describe("waiting for someone else's node lease", () => {
  it('says who holds it, keeps the phase, and looks again in 10 s', () => {
    const reached: MaintenanceStep = { step: 'leaseHeldElsewhere', holder: 'medik8s-nhc' };
    const s = next(running, reached);
    const msg = 'the lease of node n1 is held by medik8s-nhc; waiting for it';
    assert.equal(s.phase, 'Running');
    assert.equal(s.lastError, msg);
    assert.deepEqual(brief(cond(s, 'Ready')), {
      status: 'False',
      reason: 'LeaseHeldElsewhere',
      message: msg,
    });
    assert.deepEqual(nextLook(reached, s, RENEW_MS), { requeueAfterMs: 10_000 });
  });

  it('keeps a drained maintenance Succeeded while it waits', () => {
    const reached: MaintenanceStep = { step: 'leaseHeldElsewhere', holder: 'x' };
    const s = next({ ...running, phase: 'Succeeded' }, reached);
    assert.equal(s.phase, 'Succeeded');
    assert.deepEqual(nextLook(reached, s, RENEW_MS), { requeueAfterMs: 10_000 });
  });
});

describe('recording whether the node was schedulable, before the cordon', () => {
  for (const schedulable of [true, false]) {
    it(`records ${schedulable} and nothing else, and comes back at once for the cordon`, () => {
      const reached: MaintenanceStep = { step: 'schedulableRecorded', nodeWasSchedulable: schedulable };
      const s = next(undefined, reached);
      assert.equal(s.nodeWasSchedulable, schedulable);
      assert.equal(s.conditions, undefined);
      assert.equal(s.phase, 'Pending');
      assert.deepEqual(nextLook(reached, s, RENEW_MS), { requeueAfterMs: 1 });
    });
  }
});

describe('holding a drained node', () => {
  it('stays Succeeded and Cordoned, and looks again when the lease wants renewing', () => {
    const s = next({ ...running, phase: 'Succeeded' }, { step: 'cordoned' });
    assert.equal(s.phase, 'Succeeded');
    assert.deepEqual(brief(cond(s, 'Cordoned')), {
      status: 'True',
      reason: 'NodeCordoned',
      message: 'node n1 is unschedulable and tainted',
    });
    assert.deepEqual(nextLook({ step: 'cordoned' }, s, RENEW_MS), { requeueAfterMs: RENEW_MS });
  });
});

describe('draining', () => {
  it('is Running and Cordoned, with the pods left and the progress', () => {
    const s = next(running, stepped());
    assert.equal(s.phase, 'Running');
    assert.equal(cond(s, 'Cordoned')?.status, 'True');
    assert.equal(s.totalPods, 6);
    assert.equal(s.evictionPods, 4);
    assert.deepEqual(s.pendingPods, [pod('a'), pod('b')]);
    assert.deepEqual(s.blockedPods, []);
    assert.equal(s.drainProgress, 50);
    assert.equal(s.lastError, undefined);
    assert.deepEqual(brief(cond(s, 'Drained')), {
      status: 'False',
      reason: 'Draining',
      message: '2 pods left',
    });
    assert.deepEqual(brief(cond(s, 'Ready')), {
      status: 'False',
      reason: 'Draining',
      message: '2 pods left',
    });
  });

  it('keeps the pod counts recorded when the drain began', () => {
    const s = next({ ...running, totalPods: 9, evictionPods: 7 }, stepped({ evictionPods: 2 }, 3));
    assert.equal(s.totalPods, 9);
    assert.equal(s.evictionPods, 7);
  });

  it('says when disruption budgets block pods', () => {
    const blocked = [{ ...pod('b'), message: 'would violate', pdb: 'web' }];
    const s = next(running, stepped({ blocked }));
    const message = '2 pods left, 1 blocked by disruption budgets';
    assert.deepEqual(s.blockedPods, blocked);
    assert.deepEqual(brief(cond(s, 'Drained')), { status: 'False', reason: 'EvictionBlocked', message });
    assert.deepEqual(brief(cond(s, 'Ready')), { status: 'False', reason: 'Draining', message });
  });

  it('puts what stops the drain — policy, then failed evictions — in lastError', () => {
    const s = next(
      running,
      stepped({
        policyBlocked: ['cannot delete DaemonSet-managed Pods (use ignoreDaemonSets): ns/d'],
        errors: [{ ...pod('a'), message: 'boom' }],
      }),
    );
    assert.equal(
      s.lastError,
      'cannot delete DaemonSet-managed Pods (use ignoreDaemonSets): ns/d; ns/a: boom',
    );
  });

  it('clears an earlier lastError once nothing stops the drain', () => {
    assert.equal(next({ ...running, lastError: 'old' }, stepped()).lastError, undefined);
  });

  const looks: [number, number][] = [
    [1, 250],
    [1000, 1000],
    [60_000, 5000],
  ];
  for (const [asked, want] of looks) {
    it(`looks again after ${want} ms when the drain step asks for ${asked} ms`, () => {
      const reached = stepped({ nextCheckMs: asked });
      assert.deepEqual(nextLook(reached, next(running, reached), RENEW_MS), { requeueAfterMs: want });
    });
  }
});

describe('a finished drain', () => {
  it('is Succeeded, Drained and Ready, with nothing left and the time it finished', () => {
    const reached = stepped({ done: true, pending: [], drainProgress: 100, nextCheckMs: 0 });
    const s = next({ ...running, lastError: 'old', pendingPods: [pod('a')] }, reached, later(40));
    assert.equal(s.phase, 'Succeeded');
    assert.equal(s.drainProgress, 100);
    assert.deepEqual(s.pendingPods, []);
    assert.deepEqual(s.blockedPods, []);
    assert.equal(s.completionTime, later(40).toISOString());
    assert.equal(s.lastError, undefined);
    assert.deepEqual(brief(cond(s, 'Drained')), {
      status: 'True',
      reason: 'Drained',
      message: '4 pods evicted',
    });
    assert.deepEqual(brief(cond(s, 'Ready')), {
      status: 'True',
      reason: 'MaintenanceReady',
      message: 'node n1 is drained and ready for maintenance',
    });
    assert.deepEqual(nextLook(reached, s, RENEW_MS), { requeueAfterMs: RENEW_MS });
  });

  it('counts the evictions recorded when the drain began', () => {
    const s = next({ ...running, evictionPods: 11 }, stepped({ done: true, pending: [] }));
    assert.equal(cond(s, 'Drained')?.message, '11 pods evicted');
  });
});

describe('a drain past spec.timeout', () => {
  const blocked = Array.from({ length: 7 }, (_, i) => ({
    ...pod(`p${i}`),
    message: 'no',
    ...(i === 0 ? { pdb: 'web' } : {}),
  }));

  it('fails, naming the pods it waited on (five at most) and what stopped it', () => {
    const reached = stepped({ blocked, errors: [{ ...pod('a'), message: 'boom' }] });
    const s = next(running, reached, later(61), { timeout: '1m' });
    const message =
      'drain did not finish within 1m: 2 pods left, blocked by disruption budgets: ' +
      'ns/p0 (PDB web), ns/p1, ns/p2, ns/p3, ns/p4 and 2 more; ns/a: boom';
    assert.equal(s.phase, 'Failed');
    assert.equal(s.lastError, message);
    assert.equal(s.completionTime, later(61).toISOString());
    assert.deepEqual(brief(cond(s, 'Ready')), { status: 'False', reason: 'MaintenanceFailed', message });
    assert.deepEqual(s.pendingPods, [pod('a'), pod('b')]);
    assert.equal(cond(s, 'Drained'), undefined);
    assert.deepEqual(nextLook(reached, s, RENEW_MS), {});
  });

  it('says only how many pods were left when nothing blocked them', () => {
    const s = next(running, stepped(), later(61), { timeout: '1m' });
    assert.equal(s.lastError, 'drain did not finish within 1m: 2 pods left');
  });

  it('keeps draining until the timeout has passed', () => {
    assert.equal(next(running, stepped(), later(60), { timeout: '1m' }).phase, 'Running');
  });

  it('never times out without a timeout', () => {
    assert.equal(next(running, stepped(), later(86_400)).phase, 'Running');
  });

  it('succeeds rather than fails when the drain finishes after the timeout', () => {
    const s = next(running, stepped({ done: true, pending: [] }), later(61), { timeout: '1m' });
    assert.equal(s.phase, 'Succeeded');
  });
});

describe('conditions across rounds', () => {
  it('keeps a condition’s transition time while its status holds', () => {
    const first = next(running, stepped(), later(1));
    const second = next(first, stepped({ pending: [pod('a')] }), later(2));
    assert.equal(cond(second, 'Drained')?.lastTransitionTime, cond(first, 'Drained')?.lastTransitionTime);
    assert.equal(cond(second, 'Drained')?.message, '1 pods left');
  });
});
