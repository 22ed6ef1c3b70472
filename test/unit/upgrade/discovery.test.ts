import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ScalingGroupSpecType } from '../../../src/api/upgrade.ts';
import {
  DISCOVERED_LABEL,
  planDiscovery,
  scalingGroupName,
} from '../../../src/upgrade/controllers/discovery.ts';
import type { ScalingGroupInfo } from '../../../src/upgrade/providers/interface.ts';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe('naming a discovered scaling group', () => {
  it('lower-cases, as the anchor does', () => {
    assert.equal(scalingGroupName('Workers'), 'workers');
  });

  it('turns every run of other characters into one dash and trims the ends', () => {
    assert.equal(scalingGroupName('__My Workers.East/2__'), 'my-workers-east-2');
  });

  it('keeps long names within 63 characters and apart from each other', () => {
    const a = scalingGroupName(`${'x'.repeat(80)}-a`);
    const b = scalingGroupName(`${'x'.repeat(80)}-b`);
    assert.ok(a.length <= 63 && DNS_LABEL.test(a), a);
    assert.notEqual(a, b);
  });

  it('still gives a valid name when nothing usable is left', () => {
    const n = scalingGroupName('___');
    assert.match(n, /^group-[0-9a-f]{8}$/);
  });
});

const info = (groupId: string, o: Partial<ScalingGroupInfo> = {}): ScalingGroupInfo => ({
  groupId,
  name: groupId,
  role: 'Worker',
  autoscalerGroupName: groupId,
  ...o,
});
const object = (name: string, groupId: string, discovered: boolean, uid = `uid-${name}`) => ({
  metadata: { name, uid, ...(discovered ? { labels: { [DISCOVERED_LABEL]: 'true' } } : {}) },
  spec: { groupId } as ScalingGroupSpecType,
});

describe('planning discovery', () => {
  it('creates a labelled ScalingGroup with the anchor defaults for each new group', () => {
    const plan = planDiscovery([info('cp-1', { name: 'Control-Plane', role: 'ControlPlane' })], []);
    assert.deepEqual(plan.remove, []);
    assert.equal(plan.create.length, 1);
    const sg = plan.create[0]!;
    assert.equal(sg.apiVersion, 'upgrade.nodewarden.dev/v1alpha1');
    assert.equal(sg.kind, 'ScalingGroup');
    assert.equal(sg.metadata.name, 'control-plane');
    assert.deepEqual(sg.metadata.labels, { [DISCOVERED_LABEL]: 'true' });
    assert.deepEqual(sg.spec, {
      groupId: 'cp-1',
      nodeVersion: 'default',
      role: 'ControlPlane',
      autoscaling: false,
      min: 1,
      max: 10,
      autoscalerGroupName: 'cp-1',
    });
  });

  it('creates nothing for a group an object already covers, discovered or made by a user', () => {
    const plan = planDiscovery([info('a'), info('b')], [object('mine', 'a', false), object('b', 'b', true)]);
    assert.deepEqual(plan, { create: [], remove: [] });
  });

  it('deletes discovered objects whose group is gone, by uid', () => {
    const plan = planDiscovery([info('a')], [object('a', 'a', true), object('old', 'gone', true, 'u-old')]);
    assert.deepEqual(plan.remove, [{ name: 'old', uid: 'u-old' }]);
  });

  it('never deletes an object a user made, even for a group the cloud does not list', () => {
    const plan = planDiscovery([], [object('handmade', 'elsewhere', false)]);
    assert.deepEqual(plan.remove, []);
  });

  it('leaves objects being deleted to finish', () => {
    const sg = object('old', 'gone', true);
    const deleting = { ...sg, metadata: { ...sg.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    assert.deepEqual(planDiscovery([], [deleting]).remove, []);
  });

  it('gives a group another name when its own is taken by an object for another group', () => {
    const plan = planDiscovery([info('w-2', { name: 'workers' })], [object('workers', 'w-1', false)]);
    const name = plan.create[0]?.metadata.name ?? '';
    assert.notEqual(name, 'workers');
    assert.match(name, /^workers-[0-9a-f]{8}$/);
  });

  it('gives two groups whose names sanitise alike different names', () => {
    const plan = planDiscovery([info('g1', { name: 'Pool A' }), info('g2', { name: 'pool_a' })], []);
    const names = plan.create.map((sg) => sg.metadata.name);
    assert.equal(new Set(names).size, 2);
    assert.ok(names.includes('pool-a'));
  });

  it('falls back to the group id when the group has no name, and omits an empty autoscaler name', () => {
    const plan = planDiscovery([info('grp-9', { name: '', autoscalerGroupName: '' })], []);
    assert.equal(plan.create[0]?.metadata.name, 'grp-9');
    assert.equal(plan.create[0]?.spec.autoscalerGroupName, undefined);
  });
});
