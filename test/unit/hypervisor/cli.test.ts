// `nodewarden hypervisor` in process, against a console on loopback: its
// tables, -o, and what it refuses before calling anything.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hypervisorCommand } from '../../../src/cluster/infra/hypervisor/cli.ts';
import { ConsoleServer } from '../../../src/cluster/infra/hypervisor/console-api.ts';
import type { Vm } from '../../../src/cluster/infra/hypervisor/protocol.ts';
import { HypervisorState } from '../../../src/cluster/infra/hypervisor/state.ts';
import { type CommandRun, runCommand } from '../../harness/command-io.ts';

function run(...args: string[]): Promise<CommandRun> {
  return runCommand(hypervisorCommand, args);
}

describe('nodewarden hypervisor', () => {
  const state = new HypervisorState({ bootDelayMs: 2000 });
  const server = new ConsoleServer(state, () => {});
  const dir = mkdtempSync(join(tmpdir(), 'nodewarden-hypervisor-cli-'));
  let endpoint: string;

  before(async () => {
    process.env.NODEWARDEN_STATE_DIR = join(dir, 'state');
    state.observe(
      {
        pods: [
          {
            namespace: 'c1',
            name: 'master-0',
            uid: 'u1',
            cluster: 'c1',
            role: 'master',
            host: 'host-1',
            running: true,
            finished: false,
            spec: { kubernetesVersion: 'v1.37.1', osVersion: 'os', cpus: '2', memory: '4Gi', nodeLabels: {} },
            problems: [],
          },
        ],
        liveNamespaces: new Set(['c1']),
      },
      Date.now(),
    );
    endpoint = await server.start();
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists the VMs as a table, by name, or as JSON', async () => {
    const table = await run('vms', '--endpoint', endpoint);
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, /^NAMESPACE\s+NAME\s+CLUSTER\s+ROLE\s+STATE\s+HOST\s+BOOTS\n/);
    assert.match(table.out, /c1\s+master-0\s+c1\s+master\s+Booting\s+host-1\s+in \d/);
    assert.equal((await run('vms', '--endpoint', endpoint, '-o', 'name')).out, 'c1/master-0\n');
    const json = JSON.parse((await run('vms', '--endpoint', endpoint, '-o', 'json')).out) as Vm[];
    assert.equal(json[0]?.state, 'Booting');
  });

  it('lists the workload clusters', async () => {
    const { code, out } = await run('clusters', '--endpoint', endpoint);
    assert.equal(code, 0);
    assert.match(out, /c1\s+c1\s+Pending\s+0\/1\s+-\s+-/);
  });

  it('sets and clears faults, and says them', async () => {
    const set = await run('faults', '--endpoint', endpoint, '--set', '{"die": ["master-0"]}');
    assert.equal(set.code, 0, set.err);
    assert.equal(set.out, 'dead: master-0\n');
    assert.equal(state.vm('u1')?.state, 'Dead');
    assert.equal((await run('faults', '--endpoint', endpoint, '--clear')).out, 'none\n');
  });

  it('changes the boot delay', async () => {
    const { code, out } = await run('settings', '--endpoint', endpoint, '--boot-delay', '500ms');
    assert.equal(code, 0);
    assert.match(out, /boot delay\s+500ms/);
    assert.equal(state.getSettings().bootDelayMs, 500);
  });

  it('refuses what cannot work before calling: both --set and --clear, a bad duration, bad JSON', async () => {
    for (const args of [
      ['faults', '--set', '{}', '--clear'],
      ['settings', '--boot-delay', 'soon'],
      ['faults', '--set', 'die=x'],
    ]) {
      const { code } = await run(...args, '--endpoint', endpoint);
      assert.equal(code, 2, args.join(' '));
    }
  });

  it('passes the console’s refusal on: an unknown fault', async () => {
    const { code, err } = await run('faults', '--endpoint', endpoint, '--set', '{"dies": ["x"]}');
    assert.equal(code, 1);
    assert.match(err, /unknown faults "dies"/);
  });

  it('says when the cluster has no hypervisor', async () => {
    const { code, err } = await run('vms', '--cluster', 'nowhere');
    assert.equal(code, 1);
    assert.match(err, /cluster "nowhere" has no simulated hypervisor/);
  });
});
