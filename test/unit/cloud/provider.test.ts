import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { CloudServer, instanceNode } from '../../../src/cluster/infra/cloud/http-api.ts';
import { CloudError } from '../../../src/upgrade/providers/interface.ts';
import { SimulatedCloudProvider } from '../../../src/upgrade/providers/simulated/provider.ts';

describe('SimulatedCloudProvider against the simulated cloud API', () => {
  let now = 0;
  let server: CloudServer;
  let cloud: SimulatedCloudProvider;

  before(async () => {
    server = new CloudServer({ stateOptions: { bootDelayMs: 1000, seed: 3 }, clock: () => now, tickMs: 0 });
    const url = await server.start();
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    cloud = new SimulatedCloudProvider({ endpoint: url });
    server.state.addGroup({
      id: 'workers',
      role: 'Worker',
      launchImage: 'img-1',
      kubernetesVersion: 'v1.33.0',
    });
    server.state.addGroup({
      id: 'cp',
      role: 'ControlPlane',
      launchImage: 'img-1',
      kubernetesVersion: 'v1.33.0',
    });
  });

  after(async () => {
    await server.close();
  });

  beforeEach(() => {
    server.state.clearFaults();
  });

  it('lists the groups of a cluster', async () => {
    assert.deepEqual(await cloud.listScalingGroups('nodewarden'), [
      { groupId: 'workers', name: 'workers', role: 'Worker', autoscalerGroupName: 'workers' },
      { groupId: 'cp', name: 'cp', role: 'ControlPlane', autoscalerGroupName: 'cp' },
    ]);
    assert.deepEqual(await cloud.listScalingGroups('another'), []);
    assert.equal(cloud.autoscalingCloudProvider(), 'kwok');
  });

  it('creates a node that becomes Ready after the boot delay', async () => {
    const created = await cloud.createNode('workers');
    assert.match(created.providerID, /^nwsim:\/\/workers\//);
    assert.equal(await cloud.nodeState(created.providerID), 'Creating');
    assert.equal(await cloud.scalingGroupId(created.providerID), 'workers');
    assert.equal(await cloud.nodeImage(created.providerID), 'img-1');
    now += 1000;
    assert.equal(await cloud.nodeState(created.providerID), 'Ready');
  });

  it('boots new instances from the image set on the group', async () => {
    await cloud.setScalingGroupImage('workers', 'img-2');
    assert.equal(await cloud.scalingGroupImage('workers'), 'img-2');
    assert.equal(await cloud.scalingGroupImage('cp'), 'img-1');
    const created = await cloud.createNode('workers');
    assert.equal(await cloud.nodeImage(created.providerID), 'img-2');
  });

  it('deletes idempotently; unknown instances are Terminated', async () => {
    const created = await cloud.createNode('cp');
    await cloud.deleteNode(created.providerID);
    await cloud.deleteNode(created.providerID);
    assert.equal(await cloud.nodeState(created.providerID), 'Terminated');
    await cloud.deleteNode('nwsim://cp/never-existed');
    assert.equal(await cloud.nodeState('nwsim://cp/never-existed'), 'Terminated');
    assert.ok(!server.state.getGroup('cp')?.instances.includes(created.providerID));
  });

  it('reports throttling and injected errors as retryable CloudErrors', async () => {
    server.state.setFaults({ throttleNextCalls: 1, failNextCalls: 1 });
    const retryable = (e: unknown) => e instanceof CloudError && e.retryable && /429/.test(e.message);
    await assert.rejects(cloud.createNode('workers'), retryable);
    await assert.rejects(
      cloud.listScalingGroups('nodewarden'),
      (e) => e instanceof CloudError && e.retryable,
    );
    assert.equal((await cloud.listScalingGroups('nodewarden')).length, 2);
  });

  it('reports other failures as non-retryable CloudErrors', async () => {
    await assert.rejects(cloud.createNode('no-such-group'), (e) => e instanceof CloudError && !e.retryable);
    await assert.rejects(
      cloud.setScalingGroupImage('workers', ''),
      (e) => e instanceof CloudError && !e.retryable,
    );
  });

  it('sets faults over HTTP: an instance that never joins', async () => {
    const res = await fetch(`${server.url}/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ neverJoinNext: { workers: 1 } }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(((await res.json()) as { neverJoinNext: unknown }).neverJoinNext, { workers: 1 });
    const stuck = await cloud.createNode('workers');
    now += 60_000;
    assert.equal(await cloud.nodeState(stuck.providerID), 'Creating');
  });

  it('fails unreachable endpoints as retryable', async () => {
    const gone = new CloudServer({ tickMs: 0 });
    const url = await gone.start();
    await gone.close();
    await assert.rejects(
      new SimulatedCloudProvider({ endpoint: url, timeoutMs: 2000 }).nodeState('nwsim://a/b'),
      (e) => e instanceof CloudError && e.retryable,
    );
  });
});

describe('instanceNode', () => {
  it('describes a kwok node with the pool, image and control-plane labels', () => {
    const node = instanceNode(
      {
        providerID: 'nwsim://cp/cp-abcde',
        groupId: 'cp',
        nodeName: 'cp-abcde',
        image: 'registry.example/os:1.2',
        kubernetesVersion: 'v1.33.0',
        zone: 'nw-zone-b',
        state: 'Ready',
        createdAt: 0,
        readyAt: 1,
        deletedAt: undefined,
      },
      {
        id: 'cp',
        name: 'control',
        role: 'ControlPlane',
        cluster: 'nodewarden',
        launchImage: 'registry.example/os:1.2',
        kubernetesVersion: 'v1.33.0',
        instanceType: 'nw.control-4',
        zones: ['nw-zone-b'],
        cpu: '4',
        memory: '16Gi',
        pods: 110,
        instances: [],
      },
    );
    assert.equal(node.metadata?.name, 'cp-abcde');
    assert.equal(node.spec?.providerID, 'nwsim://cp/cp-abcde');
    assert.equal(node.metadata?.annotations?.['kwok.x-k8s.io/node'], 'fake');
    const labels = node.metadata?.labels ?? {};
    assert.equal(labels['nodewarden.dev/pool'], 'control');
    assert.equal(labels['nodewarden.dev/image'], 'registry.example_os_1.2');
    assert.equal(labels['node.kubernetes.io/instance-type'], 'nw.control-4');
    assert.equal(labels['topology.kubernetes.io/zone'], 'nw-zone-b');
    assert.equal(labels['node-role.kubernetes.io/control-plane'], '');
    assert.equal(node.status?.capacity?.cpu, '4');
    assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.33.0');
  });
});
