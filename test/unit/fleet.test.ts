import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_NODE_IMAGE,
  fleetNodes,
  fleetSize,
  Labels,
  PoolSpecError,
  parsePools,
  poolsForNodeCount,
} from '../../src/cluster/fleet.ts';

describe('pool specs', () => {
  it('parses several pools with options and extra labels', () => {
    const pools = parsePools(
      'cp=3:role=control-plane,type=nw.cp-4;worker=9:zones=a|b,racks=3,cpu=16,memory=64Gi,example.com/team=infra',
    );
    assert.equal(pools.length, 2);
    assert.deepEqual(
      pools.map((p) => [p.name, p.count, p.role, p.instanceType]),
      [
        ['cp', 3, 'control-plane', 'nw.cp-4'],
        ['worker', 9, 'worker', 'nw.standard-8'],
      ],
    );
    assert.deepEqual(pools[1]?.zones, ['a', 'b']);
    assert.equal(pools[1]?.racksPerZone, 3);
    assert.equal(pools[1]?.cpu, '16');
    assert.deepEqual(pools[1]?.labels, { 'example.com/team': 'infra' });
    assert.equal(fleetSize(pools), 12);
  });

  for (const [spec, why] of [
    ['', 'no pools given'],
    ['Bad=1', 'must be a DNS label'],
    ['w=0', 'whole number from 1'],
    ['w=x', 'whole number from 1'],
    ['w=1:role=boss', 'role must be'],
    ['w=1:cpu=lots', 'Kubernetes quantity'],
    ['w=1:colour=red', 'unknown key "colour"'],
    ['w=1;w=2', 'given twice'],
    ['w=1:zones=', 'zones must be'],
  ] as const) {
    it(`rejects "${spec}" (${why})`, () => {
      assert.throws(
        () => parsePools(spec),
        (err: unknown) => err instanceof PoolSpecError && err.message.includes(why),
      );
    });
  }

  it('--nodes N is one worker pool; 0 is an empty fleet; negatives are refused', () => {
    assert.equal(fleetSize(poolsForNodeCount(100)), 100);
    assert.deepEqual(poolsForNodeCount(0), []);
    assert.throws(() => poolsForNodeCount(-1), PoolSpecError);
    assert.throws(() => poolsForNodeCount(1.5), PoolSpecError);
  });
});

describe('fleet nodes', () => {
  const nodes = fleetNodes(parsePools('cp=3:role=control-plane;worker=12:racks=2'), 'v1.37.1');

  it('names nodes by pool and index, all unique', () => {
    assert.equal(nodes.length, 15);
    assert.equal(nodes[0]?.metadata?.name, 'cp-000');
    assert.equal(nodes[14]?.metadata?.name, 'worker-011');
    assert.equal(new Set(nodes.map((n) => n.metadata?.name)).size, 15);
  });

  it('spreads a pool evenly over its zones, and over racks within a zone', () => {
    const workers = nodes.filter((n) => n.metadata?.labels?.[Labels.pool] === 'worker');
    const perZone = new Map<string, number>();
    const racks = new Set<string>();
    for (const n of workers) {
      const zone = n.metadata!.labels![Labels.zone]!;
      perZone.set(zone, (perZone.get(zone) ?? 0) + 1);
      racks.add(n.metadata!.labels![Labels.rack]!);
      assert.ok(n.metadata!.labels![Labels.rack]!.startsWith(zone), 'a rack belongs to its zone');
    }
    assert.deepEqual([...perZone.values()], [4, 4, 4]);
    assert.equal(racks.size, 6);
  });

  it('marks control-plane nodes with the role label and its NoSchedule taint, workers with neither', () => {
    const cp = nodes[0]!;
    assert.equal(cp.metadata?.labels?.[Labels.controlPlane], '');
    assert.deepEqual(cp.spec?.taints, [{ key: Labels.controlPlane, effect: 'NoSchedule' }]);
    const worker = nodes[3]!;
    assert.equal(worker.metadata?.labels?.[Labels.controlPlane], undefined);
    assert.equal(worker.spec?.taints, undefined);
  });

  it('gives kwok its annotation and the node its capacity and kubelet version', () => {
    const n = nodes[5]!;
    assert.equal(n.metadata?.annotations?.['kwok.x-k8s.io/node'], 'fake');
    assert.deepEqual(n.status?.capacity, {
      cpu: '8',
      memory: '32Gi',
      pods: '110',
      'ephemeral-storage': '100Gi',
    });
    assert.equal(n.status?.nodeInfo?.kubeletVersion, 'v1.37.1');
  });

  it("makes every node an instance of the simulated cloud: its pool's group, booted from the default image", () => {
    for (const n of nodes) {
      const pool = n.metadata!.labels![Labels.pool]!;
      assert.equal(n.spec?.providerID, `nwsim://${pool}/${n.metadata?.name}`);
      assert.equal(n.metadata?.labels?.[Labels.scalingGroup], pool);
      assert.equal(n.metadata?.labels?.[Labels.image], DEFAULT_NODE_IMAGE);
      assert.equal(n.metadata?.labels?.[Labels.kubernetesVersion], 'v1.37.1');
      assert.equal(n.metadata?.annotations?.['nodewarden.dev/image'], 'nwos-1.0.0');
      assert.equal(n.status?.nodeInfo?.osImage, 'nwos-1.0.0');
    }
  });
});
