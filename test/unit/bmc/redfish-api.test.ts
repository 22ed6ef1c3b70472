import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { BmcServer } from '../../../src/cluster/infra/bmc/server.ts';
import { type Answer, call, spec, startFleet } from './fixtures.ts';

let server: BmcServer;
let now = 0;
const a = spec('host-a');
const b = spec('host-b');
const asA: [string, string] = [a.credentials.username, a.credentials.password];
const asB: [string, string] = [b.credentials.username, b.credentials.password];

before(async () => {
  server = await startFleet({ clock: () => now });
  server.state.define(a);
  server.state.define(b);
});
after(() => server.close());
beforeEach(() => {
  server.state.clearFaults();
  now = 0;
});

function assertRedfishError(body: Answer['body']): void {
  assert.match(body.error.code, /^Base\.1\.\d+\.GeneralError$/);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error['@Message.ExtendedInfo'].length > 0);
}

describe('the service root', () => {
  it('answers without credentials and links the session service', async () => {
    const r = await call(server, 'GET', '/redfish/v1/');
    assert.equal(r.status, 200);
    assert.equal(r.headers['odata-version'], '4.0');
    assert.equal(r.body.Links.Sessions['@odata.id'], '/redfish/v1/SessionService/Sessions');
    assert.equal(r.body.Systems['@odata.id'], '/redfish/v1/Systems');
    assert.deepEqual((await call(server, 'GET', '/redfish')).body, { v1: '/redfish/v1/' });
  });
});

describe('credentials, per machine', () => {
  it('shows each set of credentials its own machine only', async () => {
    const r = await call(server, 'GET', '/redfish/v1/Systems', { basic: asA });
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.Members.map((m: { '@odata.id': string }) => m['@odata.id']),
      ['/redfish/v1/Systems/host-a'],
    );
  });

  it("refuses a machine's System to another machine's credentials with 401 and a Redfish error", async () => {
    const r = await call(server, 'GET', '/redfish/v1/Systems/host-b', { basic: asA });
    assert.equal(r.status, 401);
    assertRedfishError(r.body);
  });

  it('refuses wrong credentials and no credentials with 401', async () => {
    assert.equal(
      (await call(server, 'GET', '/redfish/v1/Systems', { basic: ['admin', 'nope'] })).status,
      401,
    );
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems')).status, 401);
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/host-a')).status, 401);
  });

  it('opens a session whose token works for its machine only, until it is deleted', async () => {
    const login = await call(server, 'POST', '/redfish/v1/SessionService/Sessions', {
      body: { UserName: asB[0], Password: asB[1] },
    });
    assert.equal(login.status, 201);
    const token = login.headers['x-auth-token'] as string;
    const location = login.headers.location as string;
    assert.match(location, /^\/redfish\/v1\/SessionService\/Sessions\/[0-9a-f]+$/);
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/host-b', { token })).status, 200);
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/host-a', { token })).status, 401);
    assert.equal((await call(server, 'DELETE', location, { token })).status, 204);
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/host-b', { token })).status, 401);
  });

  it('refuses a login with wrong credentials with 401, and one without them with 400', async () => {
    const bad = await call(server, 'POST', '/redfish/v1/SessionService/Sessions', {
      body: { UserName: 'admin', Password: 'nope' },
    });
    assert.equal(bad.status, 401);
    assert.equal(bad.headers['x-auth-token'], undefined);
    const empty = await call(server, 'POST', '/redfish/v1/SessionService/Sessions', { body: {} });
    assert.equal(empty.status, 400);
  });
});

describe('systems', () => {
  it('describes a machine as the simulated hardware is', async () => {
    const r = await call(server, 'GET', '/redfish/v1/Systems/host-a', { basic: asA });
    assert.equal(r.body.Id, 'host-a');
    assert.equal(r.body.ProcessorSummary.Count, a.cpus);
    assert.equal(r.body.MemorySummary.TotalSystemMemoryGiB, a.memoryMiB / 1024);
    assert.deepEqual(r.body.Actions['#ComputerSystem.Reset']['ResetType@Redfish.AllowableValues'], [
      'On',
      'ForceOff',
      'GracefulShutdown',
      'GracefulRestart',
      'ForceRestart',
    ]);
    const nic = await call(server, 'GET', '/redfish/v1/Systems/host-a/EthernetInterfaces/eno1', {
      basic: asA,
    });
    assert.equal(nic.body.MACAddress, a.nics[0]?.mac);
    assert.deepEqual(
      nic.body.IPv4Addresses.map((x: { Address: string }) => x.Address),
      [a.nics[0]?.ip],
    );
    const procs = await call(server, 'GET', '/redfish/v1/Systems/host-a/Processors', { basic: asA });
    let threads = 0;
    for (const m of procs.body.Members)
      threads += (await call(server, 'GET', m['@odata.id'], { basic: asA })).body.TotalThreads;
    assert.equal(threads, a.cpus);
  });

  it('powers a machine on and off through ComputerSystem.Reset', async () => {
    const reset = '/redfish/v1/Systems/host-a/Actions/ComputerSystem.Reset';
    assert.equal((await call(server, 'POST', reset, { basic: asA, body: { ResetType: 'On' } })).status, 204);
    assert.equal(server.state.get('host-a')?.power, 'On');
    assert.equal(
      (await call(server, 'POST', reset, { basic: asA, body: { ResetType: 'ForceOff' } })).status,
      204,
    );
    assert.equal(server.state.get('host-a')?.power, 'Off');
  });

  it('refuses an unknown ResetType with 400 and a missing one with 400', async () => {
    const reset = '/redfish/v1/Systems/host-a/Actions/ComputerSystem.Reset';
    const bad = await call(server, 'POST', reset, { basic: asA, body: { ResetType: 'Explode' } });
    assert.equal(bad.status, 400);
    assertRedfishError(bad.body);
    assert.equal((await call(server, 'POST', reset, { basic: asA, body: {} })).status, 400);
  });

  it('answers 404 for an unknown System and 405 for a method a resource does not take', async () => {
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/nowhere', { basic: asA })).status, 404);
    const r = await call(server, 'DELETE', '/redfish/v1/Systems/host-a', { basic: asA });
    assert.equal(r.status, 405);
    assert.equal(r.headers.allow, 'GET, PATCH');
  });

  it('sets a one-time boot override by PATCH, and refuses a target not allowed', async () => {
    const r = await call(server, 'PATCH', '/redfish/v1/Systems/host-a', {
      basic: asA,
      body: { Boot: { BootSourceOverrideTarget: 'Pxe', BootSourceOverrideEnabled: 'Once' } },
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.Boot.BootSourceOverrideTarget, 'Pxe');
    const bad = await call(server, 'PATCH', '/redfish/v1/Systems/host-a', {
      basic: asA,
      body: { Boot: { BootSourceOverrideTarget: 'Usb' } },
    });
    assert.equal(bad.status, 400);
  });

  it('inserts and ejects virtual media', async () => {
    const cd = '/redfish/v1/Managers/host-a/VirtualMedia/Cd';
    const insert = await call(server, 'POST', `${cd}/Actions/VirtualMedia.InsertMedia`, {
      basic: asA,
      body: { Image: 'http://images.example/boot.iso' },
    });
    assert.equal(insert.status, 204);
    const got = await call(server, 'GET', cd, { basic: asA });
    assert.deepEqual([got.body.Inserted, got.body.Image], [true, 'http://images.example/boot.iso']);
    await call(server, 'POST', `${cd}/Actions/VirtualMedia.EjectMedia`, { basic: asA, body: {} });
    assert.equal((await call(server, 'GET', cd, { basic: asA })).body.Inserted, false);
  });
});

describe('faults over Redfish', () => {
  it('drops the connection of an unreachable machine without a reply', async () => {
    server.state.setFaults({ unreachable: ['host-a'] });
    await assert.rejects(
      call(server, 'GET', '/redfish/v1/Systems/host-a', { basic: asA }),
      /socket hang up|ECONNRESET/,
    );
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/host-b', { basic: asB })).status, 200);
  });

  it('refuses every login to a machine with badCredentials, right ones included', async () => {
    server.state.setFaults({ badCredentials: ['host-a'] });
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/host-a', { basic: asA })).status, 401);
    const login = await call(server, 'POST', '/redfish/v1/SessionService/Sessions', {
      body: { UserName: asA[0], Password: asA[1] },
    });
    assert.equal(login.status, 401);
  });

  it('fails a power action with 500 under failPower', async () => {
    server.state.setFaults({ failPower: ['*'] });
    const r = await call(server, 'POST', '/redfish/v1/Systems/host-b/Actions/ComputerSystem.Reset', {
      basic: asB,
      body: { ResetType: 'On' },
    });
    assert.equal(r.status, 500);
    assertRedfishError(r.body);
    assert.equal(server.state.get('host-b')?.power, 'Off');
  });

  it('answers 404 for a vanished machine', async () => {
    server.state.setFaults({ vanished: ['host-b'] });
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/host-b', { basic: asB })).status, 404);
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems', { basic: asB })).body.Members.length, 0);
  });

  it('reads PoweringOn while a slow power-on is under way', async () => {
    server.state.setFaults({ powerOnDelayMs: 2000 });
    server.state.setPower('host-b', 'Off', now);
    await call(server, 'POST', '/redfish/v1/Systems/host-b/Actions/ComputerSystem.Reset', {
      basic: asB,
      body: { ResetType: 'On' },
    });
    assert.equal(
      (await call(server, 'GET', '/redfish/v1/Systems/host-b', { basic: asB })).body.PowerState,
      'PoweringOn',
    );
    now = 2000;
    assert.equal(
      (await call(server, 'GET', '/redfish/v1/Systems/host-b', { basic: asB })).body.PowerState,
      'On',
    );
  });
});

describe('behaviours of BMCs we did not write, each behind a setting', () => {
  it('answers a System addressed by name with 307 to its UUID path, and serves it there (redirectToUuid)', async () => {
    assert.equal((await call(server, 'GET', '/redfish/v1/Systems/host-a', { basic: asA })).status, 200);
    server.state.setFaults({ redirectToUuid: ['host-a'] });
    const r = await call(server, 'GET', '/redfish/v1/Systems/host-a/EthernetInterfaces', { basic: asA });
    assert.equal(r.status, 307);
    const to = r.headers.location as string;
    assert.match(to, /^\/redfish\/v1\/Systems\/[0-9a-f-]{36}\/EthernetInterfaces$/);
    const there = await call(server, 'GET', to, { basic: asA });
    assert.equal(there.status, 200);
    assert.equal((await call(server, 'GET', to, { basic: asB })).status, 401);
  });

  it('keeps the virtual CD under the System, not the Manager (mediaUnderSystem)', async () => {
    server.state.setFaults({ mediaUnderSystem: ['host-a'] });
    const system = await call(server, 'GET', '/redfish/v1/Systems/host-a', { basic: asA });
    assert.equal(system.body.VirtualMedia['@odata.id'], '/redfish/v1/Systems/host-a/VirtualMedia');
    const manager = await call(server, 'GET', '/redfish/v1/Managers/host-a', { basic: asA });
    assert.equal(manager.body.VirtualMedia, undefined);
    const cd = await call(server, 'GET', '/redfish/v1/Systems/host-a/VirtualMedia/Cd', { basic: asA });
    assert.equal(cd.body['@odata.id'], '/redfish/v1/Systems/host-a/VirtualMedia/Cd');
    assert.equal(
      (await call(server, 'GET', '/redfish/v1/Managers/host-a/VirtualMedia', { basic: asA })).status,
      404,
    );
  });

  it('refuses an insert into a drive that holds an image with 409 (refuseBusyInsert)', async () => {
    server.state.setFaults({ refuseBusyInsert: ['host-a'] });
    const insert = '/redfish/v1/Managers/host-a/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia';
    const eject = '/redfish/v1/Managers/host-a/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia';
    assert.equal(
      (await call(server, 'POST', insert, { basic: asA, body: { Image: 'http://x/1.iso' } })).status,
      204,
    );
    const busy = await call(server, 'POST', insert, { basic: asA, body: { Image: 'http://x/2.iso' } });
    assert.equal(busy.status, 409);
    assertRedfishError(busy.body);
    assert.equal((await call(server, 'POST', eject, { basic: asA, body: {} })).status, 204);
    assert.equal(
      (await call(server, 'POST', insert, { basic: asA, body: { Image: 'http://x/2.iso' } })).status,
      204,
    );
    await call(server, 'POST', eject, { basic: asA, body: {} });
  });

  it('lists a storage controller with one disk of the machine’s size', async () => {
    const system = await call(server, 'GET', '/redfish/v1/Systems/host-a', { basic: asA });
    const coll = await call(server, 'GET', system.body.Storage['@odata.id'], { basic: asA });
    const storage = await call(server, 'GET', coll.body.Members[0]['@odata.id'], { basic: asA });
    const drive = await call(server, 'GET', storage.body.Drives[0]['@odata.id'], { basic: asA });
    assert.equal(drive.status, 200);
    assert.equal(drive.body.CapacityBytes, a.diskGB * 1_000_000_000);
  });
});
