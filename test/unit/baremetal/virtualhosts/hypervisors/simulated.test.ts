// The simulated hypervisors speak the BMC fleet's console: a VM defined on a
// node is the fleet's machine of kind "vm" with that node as its hypervisor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { machineSpecOf } from '../../../../../src/baremetal/virtualhosts/hypervisors/simulated/hypervisors.ts';
import type { Pool } from '../../../../../src/baremetal/virtualhosts/objects.ts';
import { vmDefinition } from '../../../../../src/baremetal/virtualhosts/objects.ts';

const pool = {
  metadata: { name: 'lab', namespace: 'ns' },
  spec: { bmcCredentials: { username: 'admin', password: 'pw' } },
} as unknown as Pool;
const flavor = { name: 'worker', count: 1, cpus: 2, memoryMiB: 1024, diskGB: 5, networkInterfaces: [] };
const vm = { name: 'lab-n1-worker-0', node: 'n1', flavor: 'worker', index: 0 };
const nics = [{ nic: 'enp1s0', network: 'oam', ip: '10.0.0.11', mac: '02:00:00:00:00:01' }];

describe('the simulated hypervisors', () => {
  it("define a node's VM as the fleet's machine of kind vm on that node", () => {
    const m = machineSpecOf('n1', vmDefinition(pool, vm, flavor as never, nics));
    assert.deepEqual(
      [m.id, m.kind, m.hypervisor, m.cpus, m.nics[0]?.mac],
      ['ns-lab-n1-worker-0', 'vm', 'n1', 2, '02:00:00:00:00:01'],
    );
    assert.deepEqual(
      [m.memoryMiB, m.diskGB, m.nics[0]?.ip, m.credentials],
      [1024, 5, '10.0.0.11', pool.spec.bmcCredentials],
    );
  });

  it("give a flavor without sizes the pool's defaults", () => {
    const m = machineSpecOf('n1', vmDefinition(pool, vm, { name: 'worker' } as never, nics));
    assert.deepEqual([m.cpus, m.memoryMiB, m.diskGB], [1, 2048, 10]);
  });
});
