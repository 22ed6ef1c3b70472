import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_NODE_IMAGE, fleetNodes, parsePools } from '../../../src/cluster/fleet.ts';
import { adoptFleetNodes, groupSpecsForPools } from '../../../src/cluster/infra/cloud/fleet-groups.ts';
import { instanceNode } from '../../../src/cluster/infra/cloud/http-api.ts';
import { CloudState } from '../../../src/cluster/infra/cloud/state.ts';

const pools = parsePools(
  'cp=3:role=control-plane;worker=6:racks=2,cpu=16,memory=64Gi,example.com/team=infra',
);

function cloudOf(cluster = 'prod') {
  const state = new CloudState({ cluster: 'other' });
  for (const spec of groupSpecsForPools(pools, { cluster, kubernetesVersion: 'v1.37.1' }))
    state.addGroup(spec);
  return state;
}

describe('the fleet as scaling groups', () => {
  it('makes one group per pool, named after it, tagged with the cluster', () => {
    const groups = cloudOf().listGroups('prod');
    assert.deepEqual(
      groups.map((g) => [g.id, g.name, g.role, g.launchImage, g.kubernetesVersion, g.instanceType]),
      [
        ['cp', 'cp', 'ControlPlane', DEFAULT_NODE_IMAGE, 'v1.37.1', 'nw.control-4'],
        ['worker', 'worker', 'Worker', DEFAULT_NODE_IMAGE, 'v1.37.1', 'nw.standard-8'],
      ],
    );
    const worker = groups[1]!;
    assert.deepEqual(worker.zones, ['nw-zone-a', 'nw-zone-b', 'nw-zone-c']);
    assert.deepEqual([worker.cpu, worker.memory, worker.pods], ['16', '64Gi', 110]);
    assert.deepEqual(worker.labels, { 'example.com/team': 'infra' });
  });

  it('makes no group of a pool of real nodes: the cloud launches only simulated ones', () => {
    const specs = groupSpecsForPools(parsePools('worker=3;metal=2:real'), {
      cluster: 'prod',
      kubernetesVersion: 'v1.37.1',
    });
    assert.deepEqual(
      specs.map((g) => g.id),
      ['worker'],
    );
  });

  it('adopts every fleet node as a Ready instance of its group, without a ready event', () => {
    const state = cloudOf();
    const events: string[] = [];
    state.onInstance((e, i) => events.push(`${e}:${i.nodeName}`));
    const nodes = fleetNodes(pools, 'v1.37.1');
    assert.equal(adoptFleetNodes(state, nodes, 1000), 9);
    assert.deepEqual(events, []);
    for (const n of nodes) {
      const i = state.getInstance(n.spec!.providerID!);
      assert.equal(i?.state, 'Ready', n.metadata?.name);
      assert.equal(i?.nodeName, n.metadata?.name);
      assert.equal(i?.image, DEFAULT_NODE_IMAGE);
      assert.equal(i?.zone, n.metadata?.labels?.['topology.kubernetes.io/zone']);
    }
    assert.equal(state.getGroup('worker')?.instances.length, 6);
  });

  it('leaves alone nodes that are not instances of a known group', () => {
    const state = cloudOf();
    const [cp, worker] = [fleetNodes(pools, 'v1.37.1')[0]!, fleetNodes(pools, 'v1.37.1')[3]!];
    delete cp.spec!.providerID;
    worker.spec!.providerID = 'nwsim://gone/worker-000';
    assert.equal(adoptFleetNodes(state, [cp, worker], 0), 0);
    assert.equal(state.listInstances().length, 0);
  });

  it("launches nodes that look like the fleet's: same labels, annotations and image", () => {
    const state = cloudOf();
    const nodes = fleetNodes(pools, 'v1.37.1');
    adoptFleetNodes(state, nodes, 0);
    const fleetNode = nodes.find((n) => n.metadata?.name === 'worker-000')!;
    const created = state.createInstance('worker', 0);
    const launched = instanceNode({ ...created, state: 'Ready' }, state.getGroup('worker')!);
    assert.deepEqual(
      Object.keys(launched.metadata!.labels!).sort(),
      Object.keys(fleetNode.metadata!.labels!).sort(),
    );
    assert.deepEqual(
      Object.keys(launched.metadata!.annotations!).sort(),
      Object.keys(fleetNode.metadata!.annotations!).sort(),
    );
    assert.equal(launched.status?.nodeInfo?.osImage, fleetNode.status?.nodeInfo?.osImage);
    assert.equal(launched.metadata?.labels?.['example.com/team'], 'infra');
    // The 7th worker goes where the fleet's 7th would: round-robin over zones, then racks.
    assert.equal(created.zone, 'nw-zone-a');
    assert.equal(created.rack, 'nw-zone-a-rack-0');
  });
});
