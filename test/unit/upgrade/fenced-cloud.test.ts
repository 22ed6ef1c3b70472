// A lost leader's cloud changes are fenced with its API writes. Found by the fault soak (seed
// 20261124, busy cores, 2026-11-26): two leaders, stepping down at their renew deadline, each
// launched an instance milliseconds later, from a view made while they could not reach the API server.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fencedCloud } from '../../../src/upgrade/providers/fenced.ts';
import type { CloudProvider } from '../../../src/upgrade/providers/interface.ts';

class FakeCloud {
  calls: string[] = [];
  async createNode(groupId: string) {
    this.calls.push(`create ${groupId}`);
    return { nodeName: 'n', providerID: 'sim://n' };
  }
  async deleteNode(providerID: string) {
    this.calls.push(`delete ${providerID}`);
  }
  async setScalingGroupImage(groupId: string, image: string) {
    this.calls.push(`image ${groupId} ${image}`);
  }
  async listGroup(groupId: string) {
    this.calls.push(`list ${groupId}`);
    return { instances: [], requestedLaunches: [] };
  }
}

function setup() {
  const fake = new FakeCloud();
  let fence: Error | undefined;
  const cloud = fencedCloud(fake as unknown as CloudProvider, () => {
    if (fence) throw fence;
  });
  return { fake, cloud, stepDown: () => (fence = new Error('writes fenced: leader election lost')) };
}

describe("a cloud's changes are fenced with the leader's writes", () => {
  it('while leading, changes and reads reach the cloud', async () => {
    const { fake, cloud } = setup();
    await cloud.createNode('g');
    await cloud.deleteNode('sim://x');
    await cloud.setScalingGroupImage('g', 'img-2');
    await cloud.listGroup('g');
    assert.deepEqual(fake.calls, ['create g', 'delete sim://x', 'image g img-2', 'list g']);
  });
  it('once fenced, no change reaches the cloud; reads still do', async () => {
    const { fake, cloud, stepDown } = setup();
    stepDown();
    await assert.rejects(cloud.createNode('g'), /writes fenced/);
    await assert.rejects(cloud.deleteNode('sim://x'), /writes fenced/);
    await assert.rejects(cloud.setScalingGroupImage('g', 'img-2'), /writes fenced/);
    await cloud.listGroup('g');
    assert.deepEqual(fake.calls, ['list g']);
  });
});
