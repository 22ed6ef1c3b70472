import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decidePendingNode,
  isNodeOf,
  nextCheckMs,
  type PendingObservation,
  RECHECK_MS,
  TRANSITION_RECHECK_MS,
  VANISHED_GRACE_MS,
} from '../../../src/upgrade/controllers/pendingnode.ts';

const NOW = 10_000_000;
const obs = (o: Partial<PendingObservation>): PendingObservation => ({
  goal: 'Join',
  state: 'Creating',
  nodeExists: false,
  ageMs: 1000,
  now: NOW,
  ...o,
});

describe('a joining node', () => {
  it('has joined when the cloud says Ready and its Node exists', () => {
    assert.deepEqual(decidePendingNode(obs({ state: 'Ready', nodeExists: true })), { kind: 'joined' });
  });

  it('has not joined while its Node is missing, even if the cloud says Ready', () => {
    const d = decidePendingNode(obs({ state: 'Ready', deadline: NOW + 120_000 }));
    assert.deepEqual(d, { kind: 'wait', requeueAfterMs: RECHECK_MS, overdue: false });
  });

  it('has not joined while the cloud says Creating, even if a Node exists', () => {
    assert.equal(decidePendingNode(obs({ nodeExists: true })).kind, 'wait');
  });

  it('is checked every 5 s while it boots', () => {
    const d = decidePendingNode(obs({ state: 'Creating', deadline: NOW + 600_000 }));
    assert.deepEqual(d, { kind: 'wait', requeueAfterMs: TRANSITION_RECHECK_MS, overdue: false });
  });

  it('is checked again exactly at its deadline when that comes first', () => {
    const d = decidePendingNode(obs({ state: 'Stopped', deadline: NOW + 1234 }));
    assert.deepEqual(d, { kind: 'wait', requeueAfterMs: 1234, overdue: false });
  });

  it('is given up once its deadline has passed', () => {
    assert.equal(decidePendingNode(obs({ deadline: NOW })).kind, 'abandon');
    assert.equal(decidePendingNode(obs({ state: 'Ready', deadline: NOW - 1 })).kind, 'abandon');
  });

  it('is not given up at the deadline if it has joined by then', () => {
    assert.equal(
      decidePendingNode(obs({ state: 'Ready', nodeExists: true, deadline: NOW - 1 })).kind,
      'joined',
    );
  });

  it('is given up at once when the cloud reports it Failed (anchor waits for the deadline)', () => {
    assert.equal(decidePendingNode(obs({ state: 'Failed', deadline: NOW + 600_000 })).kind, 'abandon');
  });

  it('is believed gone only after a grace period: a new instance may not be listed yet', () => {
    const early = decidePendingNode(obs({ state: 'Terminated', ageMs: VANISHED_GRACE_MS - 1 }));
    assert.equal(early.kind, 'wait');
    const late = decidePendingNode(obs({ state: 'Terminated', ageMs: VANISHED_GRACE_MS }));
    assert.equal(late.kind, 'abandon');
  });

  it('without a deadline waits as long as it takes', () => {
    assert.deepEqual(decidePendingNode(obs({ state: 'Unknown' })), {
      kind: 'wait',
      requeueAfterMs: RECHECK_MS,
      overdue: false,
    });
  });
});

describe('a leaving node', () => {
  it('has left once the cloud says Terminated', () => {
    assert.deepEqual(decidePendingNode(obs({ goal: 'Leave', state: 'Terminated' })), { kind: 'left' });
  });

  it('has left once Terminated even past its deadline', () => {
    assert.equal(
      decidePendingNode(obs({ goal: 'Leave', state: 'Terminated', deadline: NOW - 1 })).kind,
      'left',
    );
  });

  it('is checked every 5 s while it shuts down', () => {
    const d = decidePendingNode(obs({ goal: 'Leave', state: 'Terminating' }));
    assert.deepEqual(d, { kind: 'wait', requeueAfterMs: TRANSITION_RECHECK_MS, overdue: false });
  });

  it('past its deadline is reported overdue and rechecked every 30 s', () => {
    const d = decidePendingNode(obs({ goal: 'Leave', state: 'Ready', deadline: NOW - 1 }));
    assert.deepEqual(d, { kind: 'wait', requeueAfterMs: RECHECK_MS, overdue: true });
  });

  it('never counts as joined, whatever the Node says', () => {
    assert.equal(decidePendingNode(obs({ goal: 'Leave', state: 'Ready', nodeExists: true })).kind, 'wait');
  });
});

describe('when to look again', () => {
  it('is never 0, which the controller would read as "done"', () => {
    assert.equal(nextCheckMs('Ready', NOW + 0.2, NOW), 1);
    assert.equal(nextCheckMs('Ready', NOW - 50, NOW), 1);
  });

  it('is the period when the deadline is further away', () => {
    assert.equal(nextCheckMs('Ready', NOW + 10 * RECHECK_MS, NOW), RECHECK_MS);
    assert.equal(nextCheckMs('Creating', undefined, NOW), TRANSITION_RECHECK_MS);
  });
});

describe('which Node belongs to the instance', () => {
  it('is one with its providerID', () => {
    assert.ok(isNodeOf({ metadata: { name: 'n' }, spec: { providerID: 'sim://a' } }, 'sim://a'));
  });

  it('is one without a providerID yet', () => {
    assert.ok(isNodeOf({ metadata: { name: 'n' }, spec: {} }, 'sim://a'));
  });

  it('is not one of the same name running another instance', () => {
    assert.ok(!isNodeOf({ metadata: { name: 'n' }, spec: { providerID: 'sim://b' } }, 'sim://a'));
  });

  it('is not one being deleted, nor a missing one', () => {
    assert.ok(!isNodeOf({ metadata: { name: 'n', deletionTimestamp: '2026-01-01T00:00:00Z' } }, 'sim://a'));
    assert.ok(!isNodeOf(undefined, 'sim://a'));
  });
});
