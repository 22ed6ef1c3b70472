import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { consoleRequest } from '../../../src/cluster/infra/bmc/api.ts';
import { consolePaths, type Machine } from '../../../src/cluster/infra/bmc/protocol.ts';
import type { BmcServer } from '../../../src/cluster/infra/bmc/server.ts';
import { call, spec, startFleet, testCertificate } from './fixtures.ts';

let server: BmcServer;
const target = () => ({ endpoint: server.url, ca: testCertificate().cert });

before(async () => {
  server = await startFleet();
});
after(() => server.close());

describe('the console', () => {
  it('defines a machine (201), takes the same spec again (200), refuses another (409)', async () => {
    const first = await call(server, 'POST', consolePaths.machines, {
      body: spec('vm-1', { kind: 'vm', hypervisor: 'node-a' }),
    });
    assert.equal(first.status, 201);
    assert.equal(first.body.bmcAddress, `redfish://${server.address}/redfish/v1/Systems/vm-1`);
    assert.equal(first.body.power, 'Off');
    const again = await call(server, 'POST', consolePaths.machines, {
      body: spec('vm-1', { kind: 'vm', hypervisor: 'node-a' }),
    });
    assert.equal(again.status, 200);
    const other = await call(server, 'POST', consolePaths.machines, {
      body: spec('vm-1', { kind: 'vm', cpus: 2 }),
    });
    assert.equal(other.status, 409);
    assert.match(other.body.error, /exists with another spec/);
  });

  it('refuses a bad spec with 400 saying what to fix', async () => {
    await assert.rejects(
      consoleRequest(target(), 'POST', consolePaths.machines, { ...spec('vm-2'), cpus: -1 }),
      /400 machine "vm-2": cpus must be a whole number >= 1/,
    );
  });

  it('lists machines by kind and removes one', async () => {
    await consoleRequest(target(), 'POST', consolePaths.machines, spec('bm-1'));
    const vms = await consoleRequest<Machine[]>(target(), 'GET', `${consolePaths.machines}?kind=vm`);
    assert.deepEqual(
      vms.map((m) => m.id),
      ['vm-1'],
    );
    const gone = await consoleRequest<Machine>(target(), 'DELETE', consolePaths.machine('bm-1'));
    assert.equal(gone.id, 'bm-1');
    await assert.rejects(consoleRequest(target(), 'GET', consolePaths.machine('bm-1')), /404/);
  });

  it("switches a machine's power behind the operator's back", async () => {
    const on = await consoleRequest<Machine>(target(), 'POST', consolePaths.power('vm-1'), { power: 'On' });
    assert.equal(on.power, 'On');
    await assert.rejects(
      consoleRequest(target(), 'POST', consolePaths.power('vm-1'), { power: 'Maybe' }),
      /400/,
    );
  });

  it('sets faults, refuses an unknown key with 400 setting nothing, and clears them', async () => {
    await consoleRequest(target(), 'PUT', consolePaths.faults, { failPower: ['vm-1'] });
    await assert.rejects(
      consoleRequest(target(), 'PUT', consolePaths.faults, { vanished: ['vm-1'], unreachabel: ['vm-1'] }),
      /400 unknown fault "unreachabel"; the faults are unreachable, badCredentials/,
    );
    const now = await consoleRequest<{ vanished: string[]; failPower: string[] }>(
      target(),
      'GET',
      consolePaths.faults,
    );
    assert.deepEqual([now.vanished, now.failPower], [[], ['vm-1']]);
    const cleared = await consoleRequest<{ failPower: string[] }>(target(), 'DELETE', consolePaths.faults);
    assert.deepEqual(cleared.failPower, []);
  });

  it('is not subject to Redfish faults', async () => {
    await consoleRequest(target(), 'PUT', consolePaths.faults, { unreachable: ['*'] });
    try {
      assert.equal((await consoleRequest<Machine>(target(), 'GET', consolePaths.machine('vm-1'))).id, 'vm-1');
    } finally {
      await consoleRequest(target(), 'DELETE', consolePaths.faults);
    }
  });
});
