// `nodewarden bmc` against a fleet given by --endpoint: its verbs, output and
// usage errors (finding the cluster's fleet is in the integration test).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bmcCommand } from '../../../src/cluster/infra/bmc/cli.ts';
import type { Machine } from '../../../src/cluster/infra/bmc/protocol.ts';
import type { BmcServer } from '../../../src/cluster/infra/bmc/server.ts';
import { type CommandRun, runCommand } from '../../harness/command-io.ts';
import { spec, startFleet } from './fixtures.ts';

let server: BmcServer;

before(async () => {
  server = await startFleet();
  server.state.define(spec('bm-r0-00'));
  server.state.define(spec('vm-0', { kind: 'vm', rack: undefined, hypervisor: 'node-a' }));
});
after(() => server.close());

function bmc(...args: string[]): Promise<CommandRun> {
  return runCommand(bmcCommand, [...args, '--endpoint', server.url]);
}

describe('nodewarden bmc', () => {
  it('lists machines as a table, and by kind with -o json', async () => {
    const table = await bmc('machines');
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, /^MACHINE\s+KIND\s+RACK\/HYPERVISOR\s+POWER/);
    assert.match(table.out, /bm-r0-00\s+physical\s+rack-0\s+Off/);
    const vms = await bmc('machines', '--kind', 'vm', '-o', 'json');
    assert.deepEqual(
      (JSON.parse(vms.out) as Machine[]).map((m) => m.id),
      ['vm-0'],
    );
  });

  it('switches a machine on, and refuses a state other than on or off (exit 2)', async () => {
    const on = await bmc('power', 'vm-0', 'on');
    assert.equal(on.code, 0, on.err);
    assert.equal(server.state.get('vm-0')?.power, 'On');
    assert.equal((await bmc('power', 'vm-0', 'sideways')).code, 2);
  });

  it('prints machines as kubectl does with -o name and -o wide', async () => {
    assert.equal((await bmc('machines', '-o', 'name')).out, 'bm-r0-00\nvm-0\n');
    const wide = await bmc('machines', '-o', 'wide');
    assert.match(wide.out, /^MACHINE.*\bDISK\s+BOOT ONCE\s+BMC ADDRESS$/m);
    assert.match(wide.out, /bm-r0-00 .*redfish:\/\/.*\/redfish\/v1\/Systems\/bm-r0-00/);
  });

  it('refuses -o name on a verb that prints one document, before switching anything', async () => {
    const before = server.state.get('bm-r0-00')?.power;
    const r = await bmc('power', 'bm-r0-00', 'on', '-o', 'name');
    assert.equal(r.code, 2);
    assert.match(r.err, /table, json or yaml|json, yaml/);
    assert.equal(server.state.get('bm-r0-00')?.power, before);
  });

  it('sets, shows and clears faults', async () => {
    const set = await bmc('faults', '--set', '{"failPower": ["vm-0"], "powerOnDelayMs": 1500}');
    assert.equal(set.code, 0, set.err);
    assert.equal(set.out, 'failing power actions: vm-0; power-on takes 1500ms\n');
    assert.equal((await bmc('faults', '--clear')).out, 'none\n');
    assert.equal((await bmc('faults', '--set', '{}', '--clear')).code, 2);
  });

  it('refuses an unknown fault, naming the known ones, and sets nothing', async () => {
    const r = await bmc('faults', '--set', '{"slowPower": 5}');
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /400 unknown fault "slowPower"; the faults are unreachable, badCredentials, failPower, vanished, powerOnDelayMs/,
    );
    assert.equal(server.state.getFaults().powerOnDelayMs, 0);
  });
});
