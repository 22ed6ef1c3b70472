// The simulated hypervisors speak the BMC fleet's console: a VM defined on a
// node is the fleet's machine of kind "vm" with that node as its hypervisor.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HypervisorError } from '../../../../../src/baremetal/virtualhosts/hypervisors/hypervisor.ts';
import {
  machineSpecOf,
  SimulatedHypervisors,
} from '../../../../../src/baremetal/virtualhosts/hypervisors/simulated/hypervisors.ts';
import type { Pool } from '../../../../../src/baremetal/virtualhosts/objects.ts';
import { vmDefinition } from '../../../../../src/baremetal/virtualhosts/objects.ts';
import type { BmcServer } from '../../../../../src/cluster/infra/bmc/server.ts';
import { startFleet, testCertificate } from '../../../bmc/fixtures.ts';

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

describe('the simulated hypervisors on a running fleet', () => {
  let server: BmcServer;
  let hypervisors: SimulatedHypervisors;
  before(async () => {
    server = await startFleet();
    hypervisors = new SimulatedHypervisors(server.url, testCertificate().cert);
  });
  after(() => {
    hypervisors.close();
    server.close();
  });

  it('define a VM on its node, answering its Redfish address, and list it on that node only', async () => {
    const def = vmDefinition(pool, vm, flavor as never, nics);
    const held = await hypervisors.of('n1').define(def);
    assert.deepEqual(held, {
      id: def.id,
      power: 'Off',
      redfishAddress: `redfish://${server.address}/redfish/v1/Systems/${def.id}`,
    });
    assert.deepEqual(
      await hypervisors.of('n1').define(def),
      held,
      'defining it again the same way is no change',
    );
    assert.deepEqual(
      (await hypervisors.of('n1').list()).map((v) => v.id),
      [def.id],
    );
    assert.deepEqual(await hypervisors.of('n2').list(), []);
  });

  it('refuse the same id defined another way with a 409, and remove a VM (twice is no error)', async () => {
    const other = [{ ...nics[0]!, mac: '02:00:00:00:00:02', ip: '10.0.0.12' }];
    const def = vmDefinition(pool, { ...vm, name: 'lab-n1-worker-1', index: 1 }, flavor as never, other);
    await hypervisors.of('n1').define(def);
    await assert.rejects(
      hypervisors.of('n1').define({ ...def, flavor: { ...def.flavor, cpus: 4 } }),
      (err: unknown) => err instanceof HypervisorError && err.status === 409 && !err.retryable,
    );
    await hypervisors.of('n1').remove(def.id);
    await hypervisors.of('n1').remove(def.id);
    assert.ok(!(await hypervisors.of('n1').list()).some((v) => v.id === def.id));
  });
});
