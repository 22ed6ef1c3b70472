import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { cloudRequest } from '../../../src/cluster/infra/cloud/api.ts';
import { parseBootDelay } from '../../../src/cluster/infra/cloud/cli.ts';
import { CloudServer } from '../../../src/cluster/infra/cloud/http-api.ts';

describe('the settings API', () => {
  let server: CloudServer;
  const now = 0;

  before(async () => {
    server = new CloudServer({ stateOptions: { bootDelayMs: 5000 }, clock: () => now, tickMs: 0 });
    await server.start();
    server.state.addGroup({ id: 'w', role: 'Worker', launchImage: 'img', kubernetesVersion: 'v1.37.1' });
  });
  after(() => server.close());

  it('reads and changes the boot delay of new instances', async () => {
    assert.deepEqual(await cloudRequest(server.url, 'GET', '/settings'), { bootDelayMs: 5000 });
    assert.deepEqual(await cloudRequest(server.url, 'POST', '/settings', { bootDelayMs: 250 }), {
      bootDelayMs: 250,
    });
    const i = await cloudRequest<{ readyAt: number }>(server.url, 'POST', '/groups/w/instances');
    assert.equal(i.readyAt, now + 250);
  });

  it('refuses unknown settings and bad values with 400', async () => {
    await assert.rejects(
      cloudRequest(server.url, 'POST', '/settings', { bootDelay: 1 }),
      /400 unknown settings/,
    );
    await assert.rejects(
      cloudRequest(server.url, 'POST', '/settings', { bootDelayMs: -5 }),
      /400 bootDelayMs/,
    );
    assert.deepEqual(await cloudRequest(server.url, 'GET', '/settings'), { bootDelayMs: 250 });
  });

  it('is not subject to injected API faults', async () => {
    server.state.setFaults({ failNextCalls: 1 });
    assert.deepEqual(await cloudRequest(server.url, 'GET', '/settings'), { bootDelayMs: 250 });
    assert.equal((await fetch(`${server.url}/groups`)).status, 503);
  });

  it("leaves the faults to the operator when the console reads the cloud's API", async () => {
    server.state.setFaults({ failNextCalls: 1 });
    assert.equal((await cloudRequest<unknown[]>(server.url, 'GET', '/groups')).length, 1);
    assert.equal(server.state.getFaults().failNextCalls, 1, 'the fault is still pending');
    assert.equal((await fetch(`${server.url}/groups`)).status, 503, 'the next other caller takes it');
  });

  it('refuses an unknown fault, naming the known ones, and sets nothing', async () => {
    await assert.rejects(
      cloudRequest(server.url, 'POST', '/faults', { neverJoin: { w: 1 }, failNextCalls: 2 }),
      /400 unknown fault "neverJoin"; the faults are .*neverJoinNext/,
    );
    assert.equal(server.state.getFaults().failNextCalls, 0);
  });
});

describe('boot delays on the command line', () => {
  for (const [text, ms] of [
    ['5s', 5000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['1m30s', 90_000],
    ['0', 0],
  ] as const) {
    it(`reads "${text}" as ${ms} ms`, () => assert.equal(parseBootDelay(text), ms));
  }
  for (const bad of ['', '5', 'fast', '5 s', '-1s', '1h']) {
    it(`refuses "${bad}"`, () => assert.throws(() => parseBootDelay(bad), /not a duration/));
  }
});
