// The serving label on master VM pods, which the masters' disruption budget
// counts: on while the VM is a Ready workload node, off otherwise.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KVM_LABELS } from '../../../../src/api/kvm.ts';
import { planServing, type ServingChange } from '../../../../src/kvm/plan/serving.ts';
import type { PodObject, WorkloadNode } from '../../../../src/kvm/plan/views.ts';

const pod = (name: string, o: { serving?: boolean; deleting?: boolean } = {}): PodObject => ({
  metadata: {
    name,
    labels: {
      [KVM_LABELS.role]: name.split('-')[0] ?? '',
      ...(o.serving ? { [KVM_LABELS.serving]: 'true' } : {}),
    },
    ...(o.deleting ? { deletionTimestamp: '2026-11-27T00:00:00Z' } : {}),
  },
});
const node = (name: string, ready = true): WorkloadNode => ({
  name,
  ready,
  sinceMs: 0,
  version: 'v1.37.1',
  unschedulable: false,
  master: name.startsWith('master'),
});

describe('planServing: which master VM pods the masters budget counts', () => {
  const table: Array<[string, PodObject[], WorkloadNode[], ServingChange[]]> = [
    [
      'a master whose VM is a Ready node: labelled',
      [pod('master-m1')],
      [node('master-m1')],
      [{ pod: 'master-m1', serving: true }],
    ],
    ['already labelled: nothing to do', [pod('master-m1', { serving: true })], [node('master-m1')], []],
    [
      // A replacement's pod reads Ready long before its VM joins: it waits unlabelled.
      'a new VM not yet a node: not labelled',
      [pod('master-m1')],
      [],
      [],
    ],
    [
      'its VM died (its Node NotReady): the label goes, so it may be drained',
      [pod('master-m1', { serving: true })],
      [node('master-m1', false)],
      [{ pod: 'master-m1', serving: false }],
    ],
    [
      'its Node gone: the label goes',
      [pod('master-m1', { serving: true })],
      [],
      [{ pod: 'master-m1', serving: false }],
    ],
    ['a worker: never labelled', [pod('worker-w1')], [node('worker-w1')], []],
    [
      'a master being deleted: left as it is (a pod being deleted counts for no budget)',
      [pod('master-m1', { serving: true, deleting: true })],
      [node('master-m1', false)],
      [],
    ],
  ];
  for (const [name, pods, nodes, want] of table)
    it(name, () => assert.deepEqual(planServing(pods, nodes), want));
});
