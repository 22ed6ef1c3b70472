// The Redfish client against the simulated fleet taught to behave as BMCs we
// did not write do, and against a small local HTTP server for the redirects
// the fleet never sends (to another host, in a loop).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { BmcError, RedfishClient } from '../../../../src/baremetal/redfish/client.ts';
import { MAX_REDIRECTS, sameHost } from '../../../../src/baremetal/redfish/transport.ts';
import type { BmcServer } from '../../../../src/cluster/infra/bmc/server.ts';
import { spec, startFleet } from '../../bmc/fixtures.ts';

let fleet: BmcServer;
const a = spec('host-a', { cpus: 16, diskGB: 480 });

before(async () => {
  fleet = await startFleet();
  fleet.state.define(a);
});
after(() => fleet.close());
beforeEach(() => {
  fleet.state.clearFaults();
  fleet.state.ejectMedia(a.id);
});

function client(opts: { insecure?: boolean; origin?: string; systemPath?: string } = {}): RedfishClient {
  return new RedfishClient({
    address: {
      origin: opts.origin ?? fleet.url,
      systemPath: opts.systemPath ?? `/redfish/v1/Systems/${a.id}`,
      virtualMedia: true,
    },
    credentials: a.credentials,
    insecure: opts.insecure ?? true,
  });
}

async function failure(p: Promise<unknown>): Promise<BmcError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof BmcError, `not a BmcError: ${err}`);
    return err;
  }
  assert.fail('did not fail');
}

describe('redirects', () => {
  it('follows a System addressed by name to its UUID, for reads and actions, with the credentials', async () => {
    fleet.state.setFaults({ redirectToUuid: [a.id] });
    const redfish = client();
    const system = await redfish.system();
    assert.equal(system.id, a.id);
    assert.match(system.redirectedTo ?? '', /\/redfish\/v1\/Systems\/[0-9a-f-]{36}$/);
    await redfish.reset('On');
    assert.equal(fleet.state.get(a.id)?.power, 'On');
    await redfish.reset('ForceOff');
  });

  it('says where it was sent when the answer after a redirect is an error', async () => {
    fleet.state.setFaults({ redirectToUuid: [a.id], failPower: [a.id] });
    const err = await failure(client().reset('On'));
    assert.equal(err.kind, 'action-failed');
    assert.match(
      err.message,
      /redirected to https:\/\/127\.0\.0\.1:\d+\/redfish\/v1\/Systems\/[0-9a-f-]{36}\//,
    );
  });

  it('keeps credentials on the same host, or the same host upgraded to https, and nowhere else', () => {
    const u = (s: string) => new URL(s);
    assert.ok(sameHost(u('https://10.0.0.1:8443/a'), u('https://10.0.0.1:8443/b')));
    assert.ok(sameHost(u('http://10.0.0.1/a'), u('https://10.0.0.1/a')));
    assert.ok(sameHost(u('http://10.0.0.1:8000/a'), u('https://10.0.0.1:8443/a')));
    assert.ok(!sameHost(u('https://10.0.0.1/a'), u('http://10.0.0.1/a')));
    assert.ok(!sameHost(u('https://10.0.0.1/a'), u('https://10.0.0.2/a')));
    assert.ok(!sameHost(u('https://10.0.0.1:8443/a'), u('https://10.0.0.1:9443/a')));
  });

  describe('from a BMC that redirects elsewhere', () => {
    let server: http.Server;
    let port = 0;
    const seenByOtherHost: (string | undefined)[] = [];

    before(async () => {
      server = http.createServer((req, res) => {
        if (req.headers.host?.startsWith('localhost')) seenByOtherHost.push(req.headers.authorization);
        const hop = Number(/\/loop\/(\d+)/.exec(req.url ?? '')?.[1] ?? -1);
        const location = hop >= 0 ? `/loop/${hop + 1}` : `http://localhost:${port}/redfish/v1/Systems/host-a`;
        res.writeHead(307, { location }).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    after(() => server.close());

    it('refuses a redirect to another host, naming it, and sends it no credentials', async () => {
      const err = await failure(client({ origin: `http://127.0.0.1:${port}` }).system());
      assert.equal(err.kind, 'redirect');
      assert.match(
        err.message,
        new RegExp(`to http://localhost:${port}/redfish/v1/Systems/host-a, another host`),
      );
      assert.deepEqual(seenByOtherHost, []);
    });

    it(`gives up after ${MAX_REDIRECTS} redirects`, async () => {
      const err = await failure(
        client({ origin: `http://127.0.0.1:${port}`, systemPath: '/loop/0' }).system(),
      );
      assert.equal(err.kind, 'redirect');
      assert.match(
        err.message,
        new RegExp(`more than ${MAX_REDIRECTS} redirects \\(last to .*/loop/${MAX_REDIRECTS + 1}\\)`),
      );
    });
  });
});

describe('certificates', () => {
  it('reports a refused certificate as its own failure, with the TLS reason, not as unreachable', async () => {
    const err = await failure(client({ insecure: false }).system());
    assert.equal(err.kind, 'certificate');
    assert.ok(err.tlsCode, 'no TLS code');
    assert.match(err.message, new RegExp(`answered, but its TLS certificate was refused: ${err.tlsCode}`));
  });

  it('still reports a BMC that does not answer as unreachable', async () => {
    const err = await failure(client({ origin: 'https://127.0.0.1:1' }).system());
    assert.equal(err.kind, 'unreachable');
  });
});

describe('virtual media', () => {
  it('ejects the drive before inserting, so a BMC that refuses an insert into a busy drive takes it', async () => {
    fleet.state.setFaults({ refuseBusyInsert: [a.id] });
    fleet.state.insertMedia(a.id, 'http://images.example/old.iso');
    const redfish = client();
    await redfish.insertMedia(await redfish.system(), 'http://images.example/new.iso');
    assert.equal(fleet.state.get(a.id)?.virtualMedia, 'http://images.example/new.iso');
  });

  it('reads which image the CD drive holds, none when empty', async () => {
    const redfish = client();
    assert.equal(await redfish.insertedImage(await redfish.system()), undefined);
    fleet.state.insertMedia(a.id, 'http://images.example/live.iso');
    assert.equal(await redfish.insertedImage(await redfish.system()), 'http://images.example/live.iso');
  });

  it('ejects nothing from an empty drive, and succeeds', async () => {
    const redfish = client();
    await redfish.ejectMedia(await redfish.system());
    assert.equal(fleet.state.get(a.id)?.virtualMedia, undefined);
  });

  it('finds the drive under the System when the Manager has none', async () => {
    fleet.state.setFaults({ mediaUnderSystem: [a.id] });
    const redfish = client();
    const system = await redfish.system();
    assert.equal(system.virtualMediaPath, `/redfish/v1/Systems/${a.id}/VirtualMedia`);
    const drives = await redfish.mediaDrives(system);
    assert.deepEqual(
      drives.map((d) => d.path),
      [`/redfish/v1/Systems/${a.id}/VirtualMedia/Cd`],
    );
    await redfish.insertMedia(system, 'http://images.example/live.iso');
    assert.equal(fleet.state.get(a.id)?.virtualMedia, 'http://images.example/live.iso');
    await redfish.ejectMedia(system);
    assert.equal(fleet.state.get(a.id)?.virtualMedia, undefined);
  });
});

describe('ejecting from a BMC that refuses to eject an empty drive', () => {
  let server: http.Server;
  let port = 0;
  /** What the drive reports once the eject was refused: empty (it was never really in use) or not. */
  let emptyAfterRefusal = true;
  let ejectRefused = false;

  before(async () => {
    const docs: Record<string, unknown> = {
      '/redfish/v1/Systems/1': { Id: '1', PowerState: 'On', Links: { ManagedBy: [{ '@odata.id': '/m' }] } },
      '/m': { VirtualMedia: { '@odata.id': '/m/vm' } },
      '/m/vm': { Members: [{ '@odata.id': '/m/vm/cd' }] },
    };
    server = http.createServer((req, res) => {
      const send = (status: number, body?: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(body ? JSON.stringify(body) : '');
      if (req.method === 'POST') {
        ejectRefused = true;
        return send(400, { error: { message: 'no media is connected' } });
      }
      if (req.url === '/m/vm/cd')
        return send(200, { MediaTypes: ['CD'], Inserted: !(ejectRefused && emptyAfterRefusal) });
      return send(200, docs[req.url ?? '']);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => server.close());
  beforeEach(() => {
    ejectRefused = false;
  });

  const bmc = () => client({ origin: `http://127.0.0.1:${port}`, systemPath: '/redfish/v1/Systems/1' });

  it('takes the refusal when the drive reads empty after it', async () => {
    emptyAfterRefusal = true;
    const redfish = bmc();
    await redfish.ejectMedia(await redfish.system());
    assert.ok(ejectRefused);
  });

  it('reports the refusal when the drive still holds an image', async () => {
    emptyAfterRefusal = false;
    const redfish = bmc();
    const err = await failure(redfish.ejectMedia(await redfish.system()));
    assert.equal(err.kind, 'action-failed');
    assert.match(err.message, /no media is connected/);
  });
});

describe('inspection', () => {
  it('reads the processors: model, architecture and threads', async () => {
    const redfish = client();
    const cpus = await redfish.processors(await redfish.system());
    assert.equal(cpus.length, 2);
    assert.equal(
      cpus.reduce((n, p) => n + (p.threads ?? 0), 0),
      a.cpus,
    );
    assert.equal(cpus[0]?.arch, 'x86_64');
    assert.equal(cpus[0]?.model, 'Simulated x86-64 CPU');
  });

  it('reads the disks of the storage collection', async () => {
    const redfish = client();
    const disks = await redfish.disks(await redfish.system());
    assert.equal(disks.length, 1);
    assert.equal(disks[0]?.sizeBytes, a.diskGB * 1_000_000_000);
    assert.equal(disks[0]?.rotational, false);
    assert.ok(disks[0]?.serialNumber);
  });
});

describe('boot override', () => {
  it('sets a one-time boot from the CD and reads back that it took', async () => {
    const redfish = client();
    await redfish.bootOnce('Cd');
    assert.equal((await redfish.system()).bootTarget, 'Cd');
  });
});
