import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  blockedMessage,
  blockedMessages,
  drainablePods,
  type Pod,
  planDrain,
  REASONS,
} from '../../../src/drain/index.ts';

interface Shape {
  ns?: string;
  owner?: string;
  emptyDir?: boolean;
  mirror?: boolean;
  terminating?: boolean;
  phase?: string;
}

function pod(name: string, s: Shape = {}): Pod {
  return {
    metadata: {
      name,
      namespace: s.ns ?? 'ns',
      uid: `uid-${name}`,
      ...(s.mirror ? { annotations: { 'kubernetes.io/config.mirror': 'x' } } : {}),
      ...(s.owner
        ? {
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: s.owner, name: 'o', uid: 'o', controller: true },
            ],
          }
        : {}),
      ...(s.terminating ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { volumes: s.emptyDir ? [{ name: 'v', emptyDir: {} }] : [] },
    status: { phase: s.phase ?? 'Running' },
  };
}

const names = (pods: Pod[]) => pods.map((p) => p.metadata?.name);
const reasons = (items: { pod: Pod; reason: string }[]) => items.map((i) => [i.pod.metadata?.name, i.reason]);

describe('planDrain', () => {
  const node = [
    pod('web-1', { owner: 'ReplicaSet' }),
    pod('agent', { owner: 'DaemonSet' }),
    pod('etcd', { mirror: true }),
    pod('cache', { owner: 'ReplicaSet', emptyDir: true }),
    pod('bare'),
    pod('leaving', { owner: 'ReplicaSet', terminating: true }),
    pod('job', { phase: 'Succeeded', emptyDir: true }),
  ];

  it('sorts a mixed node with the medik8s defaults: only DaemonSet and mirror pods stay', () => {
    const plan = planDrain(node);
    assert.deepEqual(names(plan.evict), ['web-1', 'cache', 'bare', 'job']);
    assert.deepEqual(names(plan.wait), ['leaving']);
    assert.deepEqual(reasons(plan.skip), [
      ['agent', REASONS.daemonSetSkipped],
      ['etcd', REASONS.mirror],
    ]);
    assert.deepEqual(plan.blocked, []);
    assert.deepEqual(names(drainablePods(plan)), ['web-1', 'cache', 'bare', 'job', 'leaving']);
  });

  it('sorts the same node with every kubectl default (no --force, no flags)', () => {
    const plan = planDrain(node, {
      ignoreDaemonSets: false,
      deleteEmptyDirData: false,
      evictUnmanagedPods: false,
    });
    assert.deepEqual(names(plan.evict), ['web-1', 'job']);
    assert.deepEqual(reasons(plan.blocked), [
      ['agent', REASONS.daemonSetBlocked],
      ['cache', REASONS.localStorageBlocked],
      ['bare', REASONS.unmanagedBlocked],
    ]);
  });

  it('plans nothing for an empty node', () => {
    assert.deepEqual(planDrain([]), { evict: [], wait: [], skip: [], blocked: [] });
  });
});

describe('blocked pod messages', () => {
  it('group pods by reason like kubectl, naming the spec field to change', () => {
    const plan = planDrain(
      [
        pod('b', { emptyDir: true, owner: 'ReplicaSet' }),
        pod('x', { ns: 'kube-system', owner: 'DaemonSet' }),
        pod('a', { emptyDir: true, owner: 'ReplicaSet' }),
      ],
      { deleteEmptyDirData: false, ignoreDaemonSets: false },
    );
    assert.deepEqual(blockedMessages(plan.blocked), [
      'cannot delete Pods with local storage (use deleteEmptyDirData): ns/a, ns/b',
      'cannot delete DaemonSet-managed Pods (use ignoreDaemonSets): kube-system/x',
    ]);
    assert.equal(
      blockedMessage(plan.blocked),
      'cannot delete Pods with local storage (use deleteEmptyDirData): ns/a, ns/b; ' +
        'cannot delete DaemonSet-managed Pods (use ignoreDaemonSets): kube-system/x',
    );
  });

  it('are empty when nothing is blocked', () => {
    assert.equal(blockedMessage(planDrain([pod('a', { owner: 'ReplicaSet' })]).blocked), '');
  });
});
