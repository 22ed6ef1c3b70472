import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KVMCluster, NodeRole } from '../../../../src/api/kvm.ts';
import { desiredCluster } from '../../../../src/kvm/plan/desired.ts';
import {
  type DeploymentView,
  planVmRollout,
  type VmRolloutDecision,
  type VmRolloutInput,
} from '../../../../src/kvm/plan/rollout.ts';
import { clusterPki, firstIndexes, kvmCluster, workerSpec } from '../fixtures.ts';

const settled = { desired: 1, current: 1, updated: 1, ready: 1, available: 1 };
const roleOf = (name: string): NodeRole => (name.startsWith('master-') ? 'master' : 'worker');
const want = (...names: string[]) =>
  names.map((name) => ({ name, role: roleOf(name), specHash: `new-${name}` }));
/** A Deployment on the desired hash (`fresh`), an older one, or none. */
const dep = (
  name: string,
  hash: 'fresh' | 'old' | 'missing' | 'empty' = 'fresh',
  replicas: Partial<DeploymentView['replicas']> = {},
): DeploymentView => ({
  name,
  role: roleOf(name),
  specHash: { fresh: `new-${name}`, old: `old-${name}`, missing: undefined, empty: '' }[hash],
  deleting: false,
  replicas: { ...settled, ...replicas },
});
const input = (over: Partial<VmRolloutInput>): VmRolloutInput => ({
  desired: [],
  current: [],
  notReadyInWorkload: new Set(),
  masterUnschedulable: false,
  workloadReachable: true,
  ...over,
});
const update = (name: string): VmRolloutDecision => ({ kind: 'update', name, role: roleOf(name) });

describe('planVmRollout (anchor updateDeployments cases 0–13, in our shape)', () => {
  const cases: Array<{ name: string; in: Partial<VmRolloutInput>; want: VmRolloutDecision }> = [
    { name: '0: nothing desired, nothing there', in: {}, want: { kind: 'upToDate' } },
    {
      name: '1: every Deployment on its desired hash',
      in: { desired: want('master-m1', 'worker-w1'), current: [dep('master-m1'), dep('worker-w1')] },
      want: { kind: 'upToDate' },
    },
    {
      name: '2: a desired node without a Deployment yet is a creation, not an update',
      in: { desired: want('master-m1', 'worker-w1'), current: [dep('master-m1')] },
      want: { kind: 'upToDate' },
    },
    {
      name: '3: the one out-of-date Deployment is updated',
      in: { desired: want('master-m1', 'worker-w1'), current: [dep('master-m1'), dep('worker-w1', 'old')] },
      want: update('worker-w1'),
    },
    {
      name: '4: only one returned when many differ, the first in order',
      in: {
        desired: want('master-m1', 'worker-w1', 'worker-w2'),
        current: [dep('master-m1', 'old'), dep('worker-w1', 'old'), dep('worker-w2', 'old')],
      },
      want: update('master-m1'),
    },
    {
      name: '5: proceeds to the next once the first is done',
      in: {
        desired: want('master-m1', 'worker-w1', 'worker-w2'),
        current: [dep('master-m1'), dep('worker-w1', 'old'), dep('worker-w2', 'old')],
      },
      want: update('worker-w1'),
    },
    {
      name: '6: …and to the last',
      in: {
        desired: want('master-m1', 'worker-w1', 'worker-w2'),
        current: [dep('master-m1'), dep('worker-w1'), dep('worker-w2', 'old')],
      },
      want: update('worker-w2'),
    },
    {
      name: '7: a missing hash counts as out of date',
      in: { desired: want('master-m1'), current: [dep('master-m1', 'missing')] },
      want: update('master-m1'),
    },
    {
      name: '8: an empty hash counts as out of date',
      in: { desired: want('master-m1'), current: [dep('master-m1', 'empty')] },
      want: update('master-m1'),
    },
    {
      name: '9: masters before workers, whatever order the Deployments are listed in',
      in: {
        desired: want('master-m1', 'worker-w1'),
        current: [dep('worker-w1', 'old'), dep('master-m1', 'old')],
      },
      want: update('master-m1'),
    },
    {
      name: '10: a master still goes while a workload master is unschedulable',
      in: {
        desired: want('master-m1', 'worker-w1'),
        current: [dep('master-m1', 'old'), dep('worker-w1', 'old')],
        masterUnschedulable: true,
      },
      want: update('master-m1'),
    },
    {
      name: '11: a worker waits while a workload master is unschedulable (anchor #976)',
      in: {
        desired: want('master-m1', 'worker-w1'),
        current: [dep('master-m1'), dep('worker-w1', 'old')],
        masterUnschedulable: true,
      },
      want: { kind: 'wait', outdated: ['worker-w1'], wait: { cause: 'masterUnschedulable' } },
    },
    {
      name: '12: waits while a VM is not a Ready node of the workload cluster',
      in: {
        desired: want('master-m1', 'worker-w1', 'worker-w2'),
        current: [dep('master-m1'), dep('worker-w1'), dep('worker-w2', 'old')],
        notReadyInWorkload: new Set(['worker-w1']),
      },
      want: { kind: 'wait', outdated: ['worker-w2'], wait: { cause: 'notReady', deployment: 'worker-w1' } },
    },
    {
      name: '13: waits while the workload cluster does not answer',
      in: {
        desired: want('master-m1', 'worker-w1'),
        current: [dep('master-m1', 'old'), dep('worker-w1')],
        workloadReachable: false,
      },
      want: { kind: 'wait', outdated: ['master-m1'], wait: { cause: 'unreachable' } },
    },
    {
      name: 'an unreachable workload cluster does not matter when nothing is out of date',
      in: { desired: want('master-m1'), current: [dep('master-m1')], workloadReachable: false },
      want: { kind: 'upToDate' },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(planVmRollout(input(c.in)), c.want);
    });
  }

  // Any Deployment with unequal replica counters, the out-of-date one or another: wait for it to settle.
  const counters: Array<Partial<DeploymentView['replicas']>> = [
    { current: 0 },
    { updated: 0 },
    { ready: 0 },
    { available: 0 },
    { current: 2 },
    { desired: 0, current: 1, updated: 1, ready: 1, available: 1 },
  ];
  for (const replicas of counters) {
    for (const which of ['worker-w1', 'worker-w2']) {
      it(`waits for ${which} to settle with ${JSON.stringify(replicas)}`, () => {
        const current = [
          dep('master-m1'),
          dep('worker-w1', 'fresh', which === 'worker-w1' ? replicas : {}),
          dep('worker-w2', 'old', which === 'worker-w2' ? replicas : {}),
        ];
        assert.deepEqual(
          planVmRollout(input({ desired: want('master-m1', 'worker-w1', 'worker-w2'), current })),
          {
            kind: 'wait',
            outdated: ['worker-w2'],
            wait: { cause: 'settling', deployment: which },
          },
        );
      });
    }
  }

  // planCluster leaves a wanted Deployment being deleted (made again once gone) out of `current`.
  it('a wanted node whose Deployment is not there (being made again) holds the rollout', () => {
    const got = planVmRollout(
      input({
        desired: want('master-m1', 'worker-w1', 'worker-w2'),
        current: [dep('master-m1'), dep('worker-w2', 'old')],
      }),
    );
    assert.deepEqual(got, {
      kind: 'wait',
      outdated: ['worker-w2'],
      wait: { cause: 'settling', deployment: 'worker-w1' },
    });
  });

  it('a Deployment being removed (no longer desired) that has not settled holds the rollout too', () => {
    const got = planVmRollout(
      input({
        desired: want('master-m1'),
        current: [dep('master-m1', 'old'), dep('worker-gone', 'fresh', { ready: 0 })],
      }),
    );
    assert.deepEqual(got, {
      kind: 'wait',
      outdated: ['master-m1'],
      wait: { cause: 'settling', deployment: 'worker-gone' },
    });
  });
});

describe('planVmRollout with hashes from desiredCluster', () => {
  // The anchor rolled on the release annotation only; we roll on anything in the node-spec hash.
  const deployed = (kc: KVMCluster): DeploymentView[] =>
    desiredCluster(kc, firstIndexes(kc), clusterPki(kc)).nodes.map((n) => ({
      name: n.name,
      role: n.node.role,
      specHash: n.specHash,
      deleting: false,
      replicas: settled,
    }));
  const plan = (running: KVMCluster, wanted: KVMCluster) =>
    planVmRollout(
      input({
        desired: desiredCluster(wanted, firstIndexes(wanted), clusterPki(wanted)).nodes.map((n) => ({
          name: n.name,
          role: n.node.role,
          specHash: n.specHash,
        })),
        current: deployed(running),
      }),
    );
  const running = kvmCluster({ masters: 1, workers: 2 });

  it('an unrelated spec change (port mappings, unhealthy-node policy) rolls nothing', () => {
    const wanted = kvmCluster({
      masters: 1,
      workers: 2,
      spec: { portMappings: [{ name: 'web', targetPort: 8080 }], unhealthyNodes: { terminate: true } },
    });
    assert.deepEqual(plan(running, wanted), { kind: 'upToDate' });
  });

  it('a release change rolls the master first', () => {
    const wanted = kvmCluster({
      masters: 1,
      workers: 2,
      spec: { release: { ...running.spec.release, version: '20.2.0' } },
    });
    assert.deepEqual(plan(running, wanted), update('master-m1'));
  });

  it("a worker's CPUs or memory roll that worker (the anchor ignored them)", () => {
    for (const change of [{ cpus: 8 }, { memory: '16G' }]) {
      const wanted = kvmCluster({ spec: { workers: [workerSpec('w1'), workerSpec('w2', change)] } });
      const from = kvmCluster({ spec: { workers: [workerSpec('w1'), workerSpec('w2')] } });
      assert.deepEqual(plan(from, wanted), update('worker-w2'), JSON.stringify(change));
    }
  });
});
