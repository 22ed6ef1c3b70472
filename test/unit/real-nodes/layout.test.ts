import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fleetNodes, fleetSize, PoolSpecError, parsePools, realPool } from '../../../src/cluster/fleet.ts';
import { realNodeNames, realNodesLayout } from '../../../src/cluster/real-nodes/layout.ts';
import { realNodesOf } from '../../../src/cluster/real-nodes/local.ts';

describe('real node layout', () => {
  it('gives each node its own namespace, address, pod range, folder and cgroup under the cluster', () => {
    const l = realNodesLayout('dev', '/s/clusters/dev', ['real-000', 'real-001']);
    assert.equal(l.netns, 'nw-dev');
    assert.equal(l.cgroup, 'nodewarden/dev');
    assert.deepEqual(
      l.nodes.map((n) => [n.name, n.netns, n.ip, n.podCidr, n.dir, n.cgroup, n.bridgePort]),
      [
        [
          'real-000',
          'nw-dev-real-000',
          '172.30.0.2',
          '10.244.1.0/24',
          '/s/clusters/dev/real-nodes/real-000',
          'nodewarden/dev/real-000',
          'nw0',
        ],
        [
          'real-001',
          'nw-dev-real-001',
          '172.30.0.3',
          '10.244.2.0/24',
          '/s/clusters/dev/real-nodes/real-001',
          'nodewarden/dev/real-001',
          'nw1',
        ],
      ],
    );
    assert.equal(l.hostPortSocket(6443), '/s/clusters/dev/real-nodes/port-6443.sock');
  });

  it('keeps two clusters apart by name (same addresses, other namespaces and cgroups)', () => {
    const [a, b] = [realNodesLayout('a', '/a', ['n-000']), realNodesLayout('b', '/b', ['n-000'])];
    assert.notEqual(a.nodes[0]!.netns, b.nodes[0]!.netns);
    assert.notEqual(a.cgroup, b.cgroup);
    assert.equal(a.nodes[0]!.ip, b.nodes[0]!.ip);
  });

  it('refuses more nodes than the bridge subnet and pod ranges hold', () => {
    assert.throws(() => realNodesLayout('c', '/c', realNodeNames('r', 201)), /at most 200/);
  });

  it('names nodes as the simulated fleet does', () => {
    assert.deepEqual(realNodeNames('real', 2), ['real-000', 'real-001']);
    assert.equal(realNodeNames('w', 1001)[1000], 'w-1000');
  });
});

describe('real pools', () => {
  it('reads ":real" as a pool of real nodes, which the simulated fleet does not create', () => {
    const pools = parsePools('worker=3;metal=2:real');
    assert.equal(pools[1]!.real, true);
    assert.equal(fleetSize(pools), 3);
    assert.deepEqual(
      fleetNodes(pools, 'v1.37.1').map((n) => n.metadata?.name),
      ['worker-000', 'worker-001', 'worker-002'],
    );
    assert.deepEqual(
      realNodesOf('c', '/c', pools)?.nodes.map((n) => n.name),
      ['metal-000', 'metal-001'],
    );
  });

  it('has no real nodes without a real pool', () => {
    assert.equal(realNodesOf('c', '/c', parsePools('worker=3')), undefined);
  });

  it('refuses a real control-plane pool and a value on real', () => {
    assert.throws(() => parsePools('cp=1:role=control-plane,real'), PoolSpecError);
    assert.throws(() => parsePools('w=1:real=no'), /takes no value/);
  });

  it('makes --real-nodes N a pool named real', () => {
    assert.deepEqual([realPool(2).name, realPool(2).count, realPool(2).real], ['real', 2, true]);
    assert.throws(() => realPool(0), /from 1 to 200/);
  });
});
