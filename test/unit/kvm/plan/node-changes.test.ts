import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeRole } from '../../../../src/api/kvm.ts';
import { desiredCluster } from '../../../../src/kvm/plan/desired.ts';
import { type NodeRemoval, planNodeChanges } from '../../../../src/kvm/plan/node-changes.ts';
import { clusterPki, firstIndexes, kvmCluster } from '../fixtures.ts';

/** A node Deployment as observed: its name, the role and id its labels carry, whether it is being deleted. */
const dep = (role: NodeRole, id: string, labelled = true, deleting = false) => ({
  name: `${role}-${id}`,
  role,
  ...(labelled ? { nodeId: id } : {}),
  deleting,
});
const goingAway = (role: NodeRole, id: string) => dep(role, id, true, true);

const removed = (role: NodeRole, id: string, claim?: string): NodeRemoval => ({
  name: `${role}-${id}`,
  role,
  objects: [
    // The Deployment in the foreground: a garbage collector whose watch broke must still see it go.
    { kind: 'Deployment', name: `${role}-${id}`, propagation: 'Foreground' },
    { kind: 'ConfigMap', name: `${role}-${id}`, propagation: 'Background' },
    ...(claim
      ? [{ kind: 'PersistentVolumeClaim' as const, name: claim, propagation: 'Background' as const }]
      : []),
  ],
});

describe('planNodeChanges: which nodes to create and which to remove', () => {
  const kc = kvmCluster({ masters: 1, workers: 2 });
  const desired = desiredCluster(kc, firstIndexes(kc), clusterPki(kc)).nodes;

  const cases: Array<{
    name: string;
    existing: ReturnType<typeof dep>[];
    create: string[];
    remove: NodeRemoval[];
  }> = [
    {
      name: 'a new cluster: every node at once, masters first',
      existing: [],
      create: ['master-m1', 'worker-w1', 'worker-w2'],
      remove: [],
    },
    {
      name: 'every node there: nothing to do',
      existing: [dep('master', 'm1'), dep('worker', 'w1'), dep('worker', 'w2')],
      create: [],
      remove: [],
    },
    {
      name: 'a worker added to the spec: only it is created',
      existing: [dep('master', 'm1'), dep('worker', 'w1')],
      create: ['worker-w2'],
      remove: [],
    },
    {
      name: 'a worker dropped from the spec: its Deployment and ConfigMap go, no claim',
      existing: [dep('master', 'm1'), dep('worker', 'w1'), dep('worker', 'w2'), dep('worker', 'w3')],
      create: [],
      remove: [removed('worker', 'w3')],
    },
    {
      name: 'a master dropped: its etcd claim goes too, named from its node id',
      existing: [dep('master', 'm1'), dep('master', 'm0'), dep('worker', 'w1'), dep('worker', 'w2')],
      create: [],
      remove: [removed('master', 'm0', 'etcd-m0')],
    },
    {
      name: 'a master id with a dash keeps it in its claim name',
      existing: [dep('master', 'm1'), dep('master', 'old-m'), dep('worker', 'w1'), dep('worker', 'w2')],
      create: [],
      remove: [removed('master', 'old-m', 'etcd-old-m')],
    },
    {
      name: 'a master Deployment without a node-id label: no claim name is guessed',
      existing: [dep('master', 'm1'), dep('master', 'm9', false), dep('worker', 'w1'), dep('worker', 'w2')],
      create: [],
      remove: [removed('master', 'm9')],
    },
    {
      name: 'a node replaced by another id: one created, one removed in the same pass',
      existing: [dep('master', 'm1'), dep('worker', 'w1'), dep('worker', 'old')],
      create: ['worker-w2'],
      remove: [removed('worker', 'old')],
    },
    // Seed 424242 at 200 nodes (2026-11-27): a worker's Deployment deleted and made again under its
    // name while the garbage collector's watch was broken; the old VM ran on for good.
    {
      name: 'a dropped worker whose Deployment is being deleted: not deleted again',
      existing: [dep('master', 'm1'), dep('worker', 'w1'), dep('worker', 'w2'), goingAway('worker', 'w3')],
      create: [],
      remove: [],
    },
    {
      name: 'a worker back in the spec while its old Deployment is being deleted: made only once it is gone',
      existing: [dep('master', 'm1'), dep('worker', 'w1'), goingAway('worker', 'w2')],
      create: [],
      remove: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const plan = planNodeChanges(desired, c.existing);
      assert.deepEqual(
        plan.create.map((n) => n.name),
        c.create,
      );
      assert.deepEqual(plan.remove, c.remove);
    });
  }

  it('creates the desired objects themselves (PVC, ConfigMap, Deployment), not copies', () => {
    const plan = planNodeChanges(desired, []);
    assert.equal(plan.create[0], desired[0]);
  });
});
