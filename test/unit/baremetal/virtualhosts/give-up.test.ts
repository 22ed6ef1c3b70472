// A pool gives up a VM (its node left the selector, its host already gone)
// only when it can reach the VM's machine: a lookup of the hypervisors that
// failed is not "there are none". Found by the fault soak (200 nodes, seed
// 424242): the lookup met an API server restarting ("socket hang up"), the
// round went on as if there were no hypervisors, and freed the addresses and
// Secrets of five VMs whose machines stayed on the fleet. Nothing remembered
// them after; the pool handed their IPs and MACs to new VMs, the fleet refused
// those (409: the MAC belongs to another machine), and the pool stayed in
// HypervisorError to the end with the new VMs' addresses held and no VM.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { IPPools, VirtualHostPools } from '../../../../src/api/virtualhosts.ts';
import { IPPoolStore } from '../../../../src/baremetal/ipam/store.ts';
import { PoolAddresses } from '../../../../src/baremetal/virtualhosts/addresses.ts';
import { VirtualHostPoolReconciler } from '../../../../src/baremetal/virtualhosts/controller.ts';
import type {
  HeldVm,
  HypervisorSource,
  Hypervisors,
} from '../../../../src/baremetal/virtualhosts/hypervisors/hypervisor.ts';
import {
  credentialsSecretOf,
  FINALIZER,
  machineId,
  networkDataSecretOf,
  type Pool,
} from '../../../../src/baremetal/virtualhosts/objects.ts';
import { KubeClient } from '../../../../src/runtime/client.ts';
import type { EventRecorder } from '../../../../src/runtime/events.ts';
import type { CacheReader } from '../../../../src/runtime/host.ts';
import { createLogger } from '../../../../src/runtime/log.ts';
import type { Result } from '../../../../src/runtime/reconcile.ts';
import { type K8sObject, Nodes, Secrets } from '../../../../src/runtime/resources.ts';
import { FakeApiServer } from '../../runtime/fake-apiserver.ts';

const NS = 'bm';
const log = createLogger({ level: 'silent' });
const vm = { node: 'n1', flavor: 'worker', index: 0, name: 'vhp-n1-worker-0' };
const MACHINE = machineId(NS, vm.name);
const OWNER = 'vm/n1/worker/0/enp1s0';

const pool = {
  apiVersion: VirtualHostPools.apiVersion,
  kind: 'VirtualHostPool',
  metadata: { name: 'vhp', namespace: NS, uid: 'pool-uid', generation: 1, finalizers: [FINALIZER] },
  spec: {
    nodeSelector: { matchLabels: { hv: 'true' } },
    networks: [
      {
        name: 'oam',
        subnet: '192.168.2.0/24',
        staticAllocationStart: '192.168.2.10',
        staticAllocationStop: '192.168.2.60',
      },
    ],
    nodes: [
      {
        name: 'worker',
        count: 1,
        cpus: 1,
        memoryMiB: 2048,
        diskGB: 10,
        networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
      },
    ],
    bmcCredentials: { username: 'admin', password: 'vm-secret' },
  },
} as unknown as Pool;

/** The fleet: the machines it holds, by id. */
class FakeHypervisors implements Hypervisors {
  readonly agent = { kind: 'pause' } as const;
  readonly machines = new Set<string>([MACHINE]);
  of(node: string) {
    return {
      node,
      define: async (): Promise<HeldVm> => {
        throw new Error('nothing is defined here');
      },
      remove: async (id: string) => {
        this.machines.delete(id);
      },
      list: async (): Promise<HeldVm[]> => [],
    };
  }
}

type Lookup = 'found' | 'failed' | 'none';

describe('VirtualHostPool gives up a VM only where it can reach its machine', () => {
  let fake: FakeApiServer;
  let client: KubeClient;
  let fleet: FakeHypervisors;
  let lookup: Lookup;

  const source: HypervisorSource = {
    name: 'the BMC fleet',
    missing: 'no BMC fleet',
    agentWhenNone: { kind: 'pause' },
    find: async () => {
      if (lookup === 'failed') throw new Error('socket hang up');
      return lookup === 'found' ? fleet : undefined;
    },
  };
  const cache = {
    get: (type: never, name: string, namespace?: string) => fake.get(type, name, namespace),
    list: (type: never, opts?: { namespace?: string; labelSelector?: string }) => fake.stored(type, opts),
  } as unknown as CacheReader;
  const events = { normal: () => {}, warning: () => {} } as unknown as EventRecorder;

  const round = (): Promise<Result> =>
    new VirtualHostPoolReconciler({ client, cache, events, log }, source).reconcile(
      { name: 'vhp', namespace: NS },
      { controller: 'virtualhostpool', log, signal: new AbortController().signal },
    );
  const held = () => {
    const spec = fake.get(IPPools.type, 'vhp-oam', NS)?.spec as
      | { allocations?: { owner: string }[] }
      | undefined;
    return (spec?.allocations ?? []).map((a) => a.owner);
  };
  const secrets = () => fake.stored(Secrets, { namespace: NS }).map((s) => s.metadata!.name!);
  const ready = () => (fake.get(VirtualHostPools.type, 'vhp', NS) as Pool).status?.conditions?.[0];

  beforeEach(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, maxRetries: 0 });
    fleet = new FakeHypervisors();
    fake.upsert(VirtualHostPools.type, pool);
    // n1 has left the selector; its VM's host is gone already; its address, Secrets and machine remain.
    fake.upsert(Nodes, { metadata: { name: 'n1', labels: {} } } as K8sObject);
    const addresses = new PoolAddresses(new IPPoolStore(client), pool);
    await addresses.ensure();
    await addresses.vms([vm], () => true);
    fake.upsert(Secrets, credentialsSecretOf(pool, vm));
    fake.upsert(Secrets, networkDataSecretOf(pool, vm, 'network data'));
  });
  afterEach(async () => {
    client.close();
    await fake.stop();
  });

  const rows: {
    lookup: Lookup;
    why: string;
    machine: boolean;
    address: boolean;
    secrets: number;
    requeueAfterMs: number | undefined;
  }[] = [
    {
      lookup: 'found',
      why: 'the machine removed, then its address and Secrets',
      machine: false,
      address: false,
      secrets: 0,
      requeueAfterMs: undefined,
    },
    {
      lookup: 'failed',
      why: 'nothing touched: the address and Secrets still remember the VM; looked at again soon',
      machine: true,
      address: true,
      secrets: 2,
      requeueAfterMs: 1_000,
    },
    {
      lookup: 'none',
      why: 'no hypervisor to hold a machine: its address and Secrets go',
      machine: true,
      address: false,
      secrets: 0,
      requeueAfterMs: 30_000,
    },
  ];
  for (const r of rows)
    it(`hypervisors ${r.lookup}: ${r.why}`, async () => {
      lookup = r.lookup;
      assert.deepEqual(held(), [OWNER]);
      const result = await round();
      assert.equal(fleet.machines.has(MACHINE), r.machine, 'machine at the fleet');
      assert.equal(held().includes(OWNER), r.address, 'address held');
      assert.equal(secrets().length, r.secrets, 'Secrets');
      assert.equal(result.requeueAfterMs, r.requeueAfterMs);
    });

  it('a failed lookup, then one that answers: the VM is released on the next round, its machine first', async () => {
    lookup = 'failed';
    await round();
    assert.equal(ready()?.reason, 'NoHypervisor');
    assert.match(String(ready()?.message), /cannot find the BMC fleet: socket hang up/);
    lookup = 'found';
    await round();
    assert.equal(fleet.machines.size, 0);
    assert.deepEqual(held(), []);
    assert.deepEqual(secrets(), []);
  });
});
