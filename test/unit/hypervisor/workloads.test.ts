import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CLUSTER_NAME } from '../../../src/cluster/control-plane.ts';
import { planeName } from '../../../src/cluster/infra/hypervisor/workloads.ts';

describe('naming a workload control plane', () => {
  it('is the cluster id when kwokctl takes it as a name', () => {
    assert.equal(planeName('hv-a'), 'hv-a');
    assert.equal(planeName('kvmmwtywr9j'), 'kvmmwtywr9j');
  });

  const odd = ['a-cluster-id-much-longer-than-thirty-two-characters', 'Upper_Case.id', '-', 'x'.repeat(63)];
  for (const id of odd)
    it(`makes a name kwokctl takes, the same each time, from "${id.slice(0, 20)}…"`, () => {
      const name = planeName(id);
      assert.match(name, CLUSTER_NAME);
      assert.equal(planeName(id), name);
    });

  it('never gives two ids the same name by shortening them', () => {
    const a = planeName(`${'a'.repeat(40)}-one`);
    const b = planeName(`${'a'.repeat(40)}-two`);
    assert.notEqual(a, b);
  });
});
