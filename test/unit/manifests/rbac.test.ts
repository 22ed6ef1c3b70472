import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  clusterRoleFrom,
  leaderElectionRules,
  managerRules,
  mergeRules,
  type PolicyRule,
  runtimeRules,
} from '../../../src/manifests/rbac.ts';

const pods = (verbs: string[]): PolicyRule => ({ apiGroups: [''], resources: ['pods'], verbs });

describe('mergeRules', () => {
  it('unions the verbs of rules naming the same groups and resources, sorted', () => {
    const merged = mergeRules([pods(['watch', 'get']), pods(['list', 'get'])]);
    assert.deepEqual(merged, [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }]);
  });

  it('keeps rules for different resources, or different resource names, apart', () => {
    const named: PolicyRule = { ...pods(['update']), resourceNames: ['one'] };
    const merged = mergeRules([
      pods(['get']),
      named,
      { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
    ]);
    assert.equal(merged.length, 3);
    assert.deepEqual(
      merged.find((r) => r.resourceNames),
      { apiGroups: [''], resources: ['pods'], verbs: ['update'], resourceNames: ['one'] },
    );
  });

  it('gives the same output for the same rules in any order', () => {
    const rules: PolicyRule[] = [
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] },
      pods(['list']),
      { apiGroups: ['policy'], resources: ['pods/eviction'], verbs: ['create'] },
      pods(['get']),
    ];
    const forward = JSON.stringify(mergeRules(rules));
    assert.equal(JSON.stringify(mergeRules([...rules].reverse())), forward);
    assert.equal(JSON.stringify(mergeRules([rules[2]!, rules[0]!, rules[3]!, rules[1]!])), forward);
  });

  it('does not modify the rules it is given', () => {
    const rule = pods(['watch', 'get']);
    mergeRules([rule, pods(['list'])]);
    assert.deepEqual(rule.verbs, ['watch', 'get']);
  });

  it('rejects a wildcard anywhere, with a message naming the field', () => {
    assert.throws(() => mergeRules([pods(['*'])]), /wildcards are not allowed in verbs/);
    assert.throws(
      () => mergeRules([{ apiGroups: ['*'], resources: ['pods'], verbs: ['get'] }]),
      /in apiGroups/,
    );
    assert.throws(
      () => mergeRules([{ apiGroups: [''], resources: ['pods/*'], verbs: ['get'] }]),
      /in resources/,
    );
  });

  it('rejects unknown verbs and empty lists', () => {
    assert.throws(() => mergeRules([pods(['read'])]), /unknown verb "read"/);
    assert.throws(() => mergeRules([pods([])]), /verbs is empty/);
  });
});

describe('managerRules and clusterRoleFrom', () => {
  it('include what the runtime needs to record Events', () => {
    const rules = managerRules([]);
    for (const group of ['', 'events.k8s.io']) {
      assert.deepEqual(rules.find((r) => r.apiGroups[0] === group && r.resources[0] === 'events')?.verbs, [
        'create',
        'patch',
      ]);
    }
  });

  it('keep leader election out of the ClusterRole: leases belong to the namespaced Role', () => {
    assert.ok(!managerRules([]).some((r) => r.resources.includes('leases')));
    assert.deepEqual(leaderElectionRules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ]);
  });

  it("merge each controller's rules with the runtime's", () => {
    const rules = managerRules([
      { controller: 'a', rules: [pods(['get', 'list', 'watch'])] },
      {
        controller: 'b',
        rules: [pods(['delete']), { apiGroups: [''], resources: ['events'], verbs: ['get'] }],
      },
    ]);
    assert.deepEqual(rules.find((r) => r.resources[0] === 'pods')?.verbs, ['delete', 'get', 'list', 'watch']);
    assert.deepEqual(rules.find((r) => r.apiGroups[0] === '' && r.resources[0] === 'events')?.verbs, [
      'create',
      'get',
      'patch',
    ]);
    assert.equal(rules.length, runtimeRules.length + 1);
  });

  it('name the controller that asked for a wildcard', () => {
    assert.throws(() => managerRules([{ controller: 'greedy', rules: [pods(['*'])] }]), /controller greedy/);
  });

  it('build a ClusterRole object', () => {
    const role = clusterRoleFrom('r', [pods(['get'])]);
    assert.deepEqual(role, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'r' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    });
  });
});
