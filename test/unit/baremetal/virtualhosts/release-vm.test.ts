// Giving up a VM frees its addresses as soon as its machine is gone, before its
// Secrets, and each VM's for good before the next is begun: a leader that loses
// the lease part way down the list of VMs to give up leaves no VM it removed
// still holding an address (the 200-node soak, seed 424242: 165 s held).
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { IPPools } from '../../../../src/api/virtualhosts.ts';
import { IPPoolStore } from '../../../../src/baremetal/ipam/store.ts';
import { PoolAddresses } from '../../../../src/baremetal/virtualhosts/addresses.ts';
import type { Hypervisors } from '../../../../src/baremetal/virtualhosts/hypervisors/hypervisor.ts';
import { machineId, type Pool } from '../../../../src/baremetal/virtualhosts/objects.ts';
import { releaseVm } from '../../../../src/baremetal/virtualhosts/release-vm.ts';
import { KubeClient } from '../../../../src/runtime/client.ts';
import { type K8sObject, Secrets } from '../../../../src/runtime/resources.ts';
import { FakeApiServer } from '../../runtime/fake-apiserver.ts';

const NS = 'bm';
const owner = (index: number) => `vm/n1/worker/${index}/enp1s0`;
const vm = (index: number) => ({ node: 'n1', flavor: 'worker', index, name: `vhp-n1-worker-${index}` });
const pool = {
  metadata: { name: 'vhp', namespace: NS },
  spec: { networks: [{ name: 'enp1s0' }] },
} as unknown as Pool;

describe('releaseVm', () => {
  let fake: FakeApiServer;
  let client: KubeClient;
  let removed: string[];
  let onRemove: () => void;
  const hv = {
    of: () => ({
      remove: async (id: string) => {
        removed.push(id);
        onRemove();
      },
    }),
  } as unknown as Hypervisors;
  const held = () => {
    const spec = fake.get(IPPools.type, 'vhp-enp1s0', NS)?.spec as { allocations?: { owner: string }[] };
    return (spec?.allocations ?? []).map((a) => a.owner);
  };
  const release = (index: number) =>
    releaseVm({ client, hv, addresses: new PoolAddresses(new IPPoolStore(client), pool) }, NS, vm(index));

  beforeEach(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, maxRetries: 0 });
    removed = [];
    onRemove = () => {};
    fake.upsert(IPPools.type, {
      apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
      kind: 'IPPool',
      metadata: { name: 'vhp-enp1s0', namespace: NS },
      spec: {
        subnet: '192.168.2.0/24',
        macPrefix: '52:54:00:00:00:00',
        ranges: [{ start: '192.168.2.10', stop: '192.168.2.99' }],
        allocations: [1, 2, 3].map((i) => ({ owner: owner(i), ip: `192.168.2.${20 + i}` })),
      },
    } as K8sObject);
    for (const i of [1, 2, 3])
      for (const s of ['bmc-secret', 'network-data'])
        fake.upsert(Secrets, { metadata: { name: `vhp-n1-worker-${i}-${s}`, namespace: NS } } as K8sObject);
  });
  afterEach(async () => {
    client.close();
    await fake.stop();
  });

  it('removes the machine, frees its addresses and deletes its Secrets, touching no other VM', async () => {
    await release(3);
    assert.deepEqual(removed, [machineId(NS, 'vhp-n1-worker-3')]);
    assert.deepEqual(held(), [owner(1), owner(2)]);
    assert.equal(fake.get(Secrets, 'vhp-n1-worker-3-bmc-secret', NS), undefined);
    assert.equal(fake.get(Secrets, 'vhp-n1-worker-3-network-data', NS), undefined);
    assert.ok(fake.get(Secrets, 'vhp-n1-worker-2-bmc-secret', NS), 'another VM keeps its Secrets');
  });

  it('frees the addresses before the Secrets: a refused Secret delete leaves none held', async () => {
    fake.failNext(1, 403, { method: 'DELETE', path: 'secrets' });
    await assert.rejects(release(3));
    assert.deepEqual(held(), [owner(1), owner(2)]);
  });

  it('the lease lost part way down the list: every VM released before it keeps its addresses freed', async () => {
    await release(3);
    onRemove = () => client.fenceWrites('leader election lost');
    await assert.rejects(release(2), /fenced/);
    assert.deepEqual(
      held(),
      [owner(1), owner(2)],
      'worker-3 freed for good; worker-2 waits for the next leader',
    );
    assert.equal(removed.length, 2);
  });
});
