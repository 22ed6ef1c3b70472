import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Maintenance, type NodeMaintenance } from '../../../src/api/maintenance.ts';
import {
  enterMaintenancePatch,
  leaveMaintenancePatch,
  type NodeObject,
} from '../../../src/maintenance/node-state.ts';

const nm = (
  status: NodeMaintenance['status'] = {},
  taints?: NodeMaintenance['spec']['taints'],
): NodeMaintenance =>
  ({
    apiVersion: 'maintenance.nodewarden.dev/v1alpha1',
    kind: 'NodeMaintenance',
    metadata: { name: 'm' },
    spec: { nodeName: 'n1', taints },
    status,
  }) as NodeMaintenance;

const node = (spec: NodeObject['spec'] = {}, labels: Record<string, string> = {}): NodeObject => ({
  metadata: { name: 'n1', resourceVersion: '42', labels },
  spec,
});

const other = { key: 'example.com/dedicated', value: 'gpu', effect: 'PreferNoSchedule' };

describe('entering maintenance', () => {
  it('cordons, adds both taints and the remediation label, keeping every other taint', () => {
    const patch = enterMaintenancePatch(node({ taints: [other] }), nm());
    assert.ok(patch);
    assert.equal(patch.spec.unschedulable, true);
    assert.deepEqual(
      patch.spec.taints?.map((t) => t.key),
      [other.key, Maintenance.unschedulableTaint.key, Maintenance.drainTaint.key],
    );
    assert.equal(patch.metadata.labels?.[Maintenance.excludeFromRemediationLabel], 'true');
    assert.equal(patch.metadata.resourceVersion, '42', 'optimistic concurrency on the node');
  });

  it('adds the extra taints the spec asks for', () => {
    const patch = enterMaintenancePatch(node(), nm({}, [{ key: 'team/maint', effect: 'NoExecute' }]));
    assert.ok(patch?.spec.taints?.some((t) => t.key === 'team/maint' && t.effect === 'NoExecute'));
  });

  it('does nothing when the node is already in that state (no needless writes)', () => {
    const done = node(
      { unschedulable: true, taints: [{ ...Maintenance.unschedulableTaint }, { ...Maintenance.drainTaint }] },
      { [Maintenance.excludeFromRemediationLabel]: 'true' },
    );
    assert.equal(enterMaintenancePatch(done, nm()), null);
  });
});

describe('leaving maintenance', () => {
  const inMaintenance = node(
    {
      unschedulable: true,
      taints: [other, { ...Maintenance.unschedulableTaint }, { ...Maintenance.drainTaint }],
    },
    { [Maintenance.excludeFromRemediationLabel]: 'true' },
  );

  it('uncordons and removes our taints and label when we cordoned the node', () => {
    const patch = leaveMaintenancePatch(inMaintenance, nm({ nodeWasSchedulable: true }));
    assert.ok(patch);
    assert.equal(patch.spec.unschedulable, null);
    assert.deepEqual(patch.spec.taints, [other]);
    assert.equal(patch.metadata.labels?.[Maintenance.excludeFromRemediationLabel], null);
  });

  it('keeps a node cordoned, with its unschedulable taint, if it was cordoned before us', () => {
    const patch = leaveMaintenancePatch(inMaintenance, nm({ nodeWasSchedulable: false }));
    assert.ok(patch);
    assert.equal('unschedulable' in patch.spec, false, 'the cordon is left alone');
    assert.deepEqual(
      patch.spec.taints?.map((t) => t.key),
      [other.key, Maintenance.unschedulableTaint.key],
    );
  });

  it('leaves a node we never got to cordon alone (nothing recorded)', () => {
    const patch = leaveMaintenancePatch(node({ unschedulable: true, taints: [other] }), nm({}));
    assert.equal(patch, null);
  });
});
