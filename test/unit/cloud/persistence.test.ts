import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import { fleetNodes, parsePools } from '../../../src/cluster/fleet.ts';
import {
  type CloudConfig,
  loadCloudState,
  readCloudSnapshot as readSnapshot,
} from '../../../src/cluster/infra/cloud/process-main.ts';
import { type CloudSnapshot, CloudState } from '../../../src/cluster/infra/cloud/state.ts';
import { SnapshotWriter, writeSnapshot } from '../../../src/cluster/infra/kit/snapshot.ts';

const tmp = mkdtempSync(join(tmpdir(), 'nw-cloud-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function busyCloud() {
  const state = new CloudState({ bootDelayMs: 5000, seed: 9, cluster: 'c1' });
  state.addGroup({
    id: 'w',
    role: 'Worker',
    launchImage: 'img-1',
    kubernetesVersion: 'v1.37.1',
    racksPerZone: 2,
  });
  state.adoptInstance({ groupId: 'w', nodeName: 'w-000', zone: 'nw-zone-a' }, 0);
  const ready = state.createInstance('w', 0);
  state.tick(5000);
  const gone = state.createInstance('w', 100);
  state.deleteInstance(gone.providerID, 200);
  state.setFaults({ neverJoinNext: { w: 1 }, failNextCalls: 2 });
  const stuck = state.createInstance('w', 6000);
  state.setFaults({ slowBootMs: 1000 });
  state.setSettings({ bootDelayMs: 2000 });
  const booting = state.createInstance('w', 7000);
  return { state, ready, gone, stuck, booting };
}

describe('snapshots of the cloud', () => {
  it('restore every group, instance, fault and setting', () => {
    const { state, ready, gone, stuck, booting } = busyCloud();
    const json = JSON.parse(JSON.stringify(state.snapshot())) as CloudSnapshot;
    const back = CloudState.restore(json);
    assert.deepEqual(back.snapshot(), state.snapshot());
    assert.equal(back.getInstance(ready.providerID)?.state, 'Ready');
    assert.equal(back.getInstance(gone.providerID)?.state, 'Terminated');
    assert.equal(back.getInstance(stuck.providerID)?.readyAt, undefined);
    assert.equal(back.getInstance(booting.providerID)?.state, 'Creating');
    assert.deepEqual(back.getFaults(), { ...state.getFaults() });
    assert.equal(back.bootDelayMs, 2000);
    assert.deepEqual(
      back.listGroups('c1').map((g) => g.id),
      ['w'],
    );
  });

  it('keeps a booting instance due when it was due, and never boots one that never joins', () => {
    const { state, booting, stuck } = busyCloud();
    assert.equal(booting.readyAt, 7000 + 2000 + 1000);
    const back = CloudState.restore(JSON.parse(JSON.stringify(state.snapshot())) as CloudSnapshot);
    assert.deepEqual(back.tick(9999), []);
    assert.deepEqual(
      back.tick(10_000).map((i) => i.providerID),
      [booting.providerID],
    );
    back.tick(1_000_000);
    assert.equal(back.getInstance(stuck.providerID)?.state, 'Creating');
  });

  it('go on naming instances as if the cloud had never stopped', () => {
    const a = busyCloud().state;
    const b = CloudState.restore(JSON.parse(JSON.stringify(a.snapshot())) as CloudSnapshot);
    const next = (s: CloudState) => [1, 2, 3].map(() => s.createInstance('w', 0).nodeName);
    assert.deepEqual(next(b), next(a));
  });

  it('are written shortly after changes, several changes at once, and on stop', async () => {
    const path = join(tmp, 'state.json');
    const state = new CloudState();
    const writer = new SnapshotWriter(state, path, { debounceMs: 20 });
    writer.start();
    state.addGroup({ id: 'w', role: 'Worker', launchImage: 'img-1', kubernetesVersion: 'v1' });
    state.createInstance('w', 0);
    assert.equal(readSnapshot(path), undefined, 'not before the debounce');
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(readSnapshot(path)?.instances.length, 1);
    state.createInstance('w', 0);
    writer.stop();
    assert.equal(readSnapshot(path)?.instances.length, 2, 'stop writes what is pending');
    state.createInstance('w', 0);
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(readSnapshot(path)?.instances.length, 2, 'nothing after stop');
  });

  it('replace the file whole', () => {
    const path = join(tmp, 'whole.json');
    writeSnapshot(path, busyCloud().state.snapshot());
    assert.doesNotThrow(() => JSON.parse(readFileSync(path, 'utf8')));
  });
});

describe('starting the cloud of a cluster', () => {
  const pools = parsePools('cp=1:role=control-plane;worker=2');
  const config: CloudConfig = { cluster: 'c1', kubeconfig: '-', pools, kubernetesVersion: 'v1.37.1' };
  const nodes = async (): Promise<V1Node[]> => fleetNodes(pools, 'v1.37.1');

  it('the first time: one group per pool, the fleet adopted, the default boot delay', async () => {
    const path = join(tmp, 'first.json');
    const { state, restored, adopted } = await loadCloudState(config, path, nodes, 0);
    assert.equal(restored, false);
    assert.equal(adopted, 3);
    assert.deepEqual(
      state.listGroups('c1').map((g) => g.id),
      ['cp', 'worker'],
    );
    assert.equal(state.bootDelayMs, 5000);
  });

  it('afterwards: from the snapshot, with a boot delay given on this up applied over the saved one', async () => {
    const path = join(tmp, 'again.json');
    const first = await loadCloudState({ ...config, bootDelayMs: 3000 }, path, nodes, 0);
    first.state.setSettings({ bootDelayMs: 1500 });
    first.state.createInstance('worker', 0);
    writeSnapshot(path, first.state.snapshot());

    const kept = await loadCloudState(config, path, async () => assert.fail('no listing on restore'), 0);
    assert.equal(kept.restored, true);
    assert.equal(kept.state.bootDelayMs, 1500);
    assert.equal(kept.state.listInstances('worker').length, 3);

    const overridden = await loadCloudState({ ...config, bootDelayMs: 250 }, path, nodes, 0);
    assert.equal(overridden.state.bootDelayMs, 250);
  });
});
