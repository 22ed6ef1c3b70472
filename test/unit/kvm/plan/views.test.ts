import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KVM_ANNOTATIONS, KVM_LABELS } from '../../../../src/api/kvm.ts';
import { isSettled } from '../../../../src/kvm/plan/rollout.ts';
import {
  deploymentView,
  observeVms,
  type PodObject,
  unhealthyViews,
  type WorkloadNode,
  workloadNodeView,
} from '../../../../src/kvm/plan/views.ts';
import type { K8sObject } from '../../../../src/runtime/resources.ts';

const T = '2026-11-24T01:00:00Z';

describe('workloadNodeView', () => {
  const node = (over: Record<string, unknown>) =>
    workloadNodeView({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, ...over } as K8sObject);

  it('reads readiness, since when, version', () => {
    const v = node({
      status: {
        conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: T }],
        nodeInfo: { kubeletVersion: 'v1.37.1' },
      },
    });
    assert.equal(v.ready, false);
    assert.equal(v.sinceMs, Date.parse(T));
    assert.equal(v.version, 'v1.37.1');
  });

  it('Ready Unknown (the kubelet stopped posting) is not Ready', () => {
    assert.equal(
      node({ status: { conditions: [{ type: 'Ready', status: 'Unknown', lastTransitionTime: T }] } }).ready,
      false,
    );
  });

  const unschedulable: Array<[string, Record<string, unknown>, boolean]> = [
    ['cordoned', { spec: { unschedulable: true } }, true],
    [
      'the unschedulable taint',
      { spec: { taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }] } },
      true,
    ],
    ['another taint', { spec: { taints: [{ key: 'dedicated', effect: 'NoSchedule' }] } }, false],
    ['nothing', {}, false],
  ];
  for (const [what, over, want] of unschedulable) {
    it(`${what}: unschedulable ${want}`, () => assert.equal(node(over).unschedulable, want));
  }

  it('a Node that has not reported Ready yet is not NotReady since 1970', () => {
    const v = node({ metadata: { name: 'n1', creationTimestamp: T }, status: {} });
    assert.equal(v.ready, false);
    assert.ok(v.sinceMs >= Date.parse(T), String(v.sinceMs));
  });
});

describe('deploymentView', () => {
  const dep = (generation: number, observed: number | undefined, counters: Record<string, number>) =>
    deploymentView({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'worker-w1', generation, labels: { [KVM_LABELS.role]: 'worker' } },
      spec: { replicas: 1, template: { metadata: { annotations: { [KVM_ANNOTATIONS.nodeSpec]: 'h1' } } } },
      status: { ...(observed !== undefined ? { observedGeneration: observed } : {}), ...counters },
    } as K8sObject);
  const all1 = { replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 };

  it('reads the hash from the pod template', () => {
    assert.equal(dep(1, 1, all1).specHash, 'h1');
  });
  it('is being deleted only with a deletion timestamp', () => {
    assert.equal(dep(1, 1, all1).deleting, false);
    const going = deploymentView({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'worker-w1',
        deletionTimestamp: '2026-11-27T09:50:00Z',
        finalizers: ['foregroundDeletion'],
      },
    } as K8sObject);
    assert.equal(going.deleting, true);
  });

  const cases: Array<[string, ReturnType<typeof dep>, boolean]> = [
    ['seen and one of one everywhere', dep(2, 2, all1), true],
    ['a spec the Deployment controller has not seen yet', dep(3, 2, all1), false],
    ['no status yet', dep(1, undefined, {}), false],
    ['not ready', dep(1, 1, { ...all1, readyReplicas: 0 }), false],
    ['an old and a new pod', dep(1, 1, { ...all1, replicas: 2 }), false],
  ];
  for (const [what, view, settled] of cases) {
    it(`${what}: ${settled ? 'settled' : 'not settled'}`, () => assert.equal(isSettled(view), settled));
  }
});

describe('observeVms and unhealthyViews', () => {
  const pod = (name: string, role: string, id: string, over: Partial<PodObject> = {}): PodObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      labels: { [KVM_LABELS.role]: role, [KVM_LABELS.nodeId]: id },
      annotations: { [KVM_ANNOTATIONS.nodeSpec]: `h-${id}`, [KVM_ANNOTATIONS.release]: '20.1.0' },
    },
    status: { phase: 'Running', startTime: T },
    ...over,
  });
  const wn = (name: string, ready: boolean): WorkloadNode => ({
    name,
    ready,
    sinceMs: Date.parse(T),
    lastTransitionTime: T,
    version: 'v1.37.1',
    unschedulable: false,
    master: false,
  });
  const pods = [
    pod('worker-w1-a', 'worker', 'w1'),
    pod('master-m1-a', 'master', 'm1'),
    pod('worker-w2-a', 'worker', 'w2', {
      metadata: {
        name: 'worker-w2-a',
        labels: { [KVM_LABELS.role]: 'worker', [KVM_LABELS.nodeId]: 'w2' },
        deletionTimestamp: T,
      },
    }),
  ];

  it('joins each pod with the Node of its name, masters first', () => {
    const vms = observeVms(pods, [wn('master-m1-a', true), wn('worker-w1-a', false)]);
    assert.deepEqual(
      vms.map((v) => [v.pod, v.deployment, v.specHash, v.terminating, v.node?.ready]),
      [
        ['master-m1-a', 'master-m1', 'h-m1', false, true],
        ['worker-w1-a', 'worker-w1', 'h-w1', false, false],
        ['worker-w2-a', 'worker-w2', undefined, true, undefined],
      ],
    );
  });

  it('an unreachable workload cluster: VMs without nodes', () => {
    assert.ok(observeVms(pods, undefined).every((v) => v.node === undefined));
  });

  it('the unhealthy planner sees running-since and the Node readiness', () => {
    const views = unhealthyViews(
      [pod('w1', 'worker', 'w1'), pod('w2', 'worker', 'w2', { status: { phase: 'Pending' } })],
      [wn('w1', false)],
    );
    assert.deepEqual(views, [
      {
        pod: 'w1',
        role: 'worker',
        terminating: false,
        runningSince: Date.parse(T),
        node: { ready: false, sinceMs: Date.parse(T) },
      },
      { pod: 'w2', role: 'worker', terminating: false },
    ]);
  });
});
