// Through the real binary, against a loopback API server: every command that
// prints objects takes kubectl's -o wide and -o name; --timeout is how long a
// command waits everywhere; upgrade start --wait says when no operator runs.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BareMetalHosts } from '../../../src/api/baremetal.ts';
import { NodeMaintenances } from '../../../src/api/maintenance.ts';
import { NodeVersions, PendingNodes, ScalingGroups } from '../../../src/api/upgrade.ts';
import { Nodes } from '../../../src/runtime/resources.ts';
import { nodewarden } from '../../harness/binary.ts';
import { FakeApiServer } from '../runtime/fake-apiserver.ts';

describe('nodewarden against a loopback API server', () => {
  let fake: FakeApiServer;
  let dir: string;
  let kubeconfig: string;
  const run = (...args: string[]) => nodewarden([...args, '--kubeconfig', kubeconfig]);
  const lines = (text: string) => text.trimEnd().split('\n');

  before(async () => {
    fake = await FakeApiServer.start();
    dir = mkdtempSync(join(tmpdir(), 'nw-kubectl-habits-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, fake.kubeConfig().exportConfig());
    fake.upsert(Nodes, { metadata: { name: 'worker-1' } });
    fake.upsert(
      NodeMaintenances.type,
      NodeMaintenances.make(
        { name: 'kernel-1' },
        {
          nodeName: 'worker-1',
          reason: `kernel update ${'and a long story '.repeat(4)}`,
          timeout: '45m',
          gracePeriodSeconds: 30,
        },
      ),
    );
    fake.upsert(NodeMaintenances.type, {
      ...NodeMaintenances.make({ name: 'worker-2' }, { nodeName: 'worker-2', reason: 'disk' }),
      status: { phase: 'Running', drainProgress: 50, evictionPods: 4, pendingPods: [] },
    } as never);
    fake.upsert(NodeVersions.type, NodeVersions.make({ name: 'default' }, { image: 'nwos-1.1.0' }));
    fake.upsert(ScalingGroups.type, {
      ...ScalingGroups.make(
        { name: 'workers' },
        { groupId: 'workers', nodeVersion: 'default', rollout: { maxSurge: 2 } },
      ),
    });
    fake.upsert(
      PendingNodes.type,
      PendingNodes.make(
        { name: 'worker-9' },
        { nodeName: 'worker-9', providerID: 'nwcloud://workers/worker-9', groupID: 'workers', goal: 'Join' },
      ),
    );
    fake.upsert(
      BareMetalHosts.type,
      BareMetalHosts.make(
        { name: 'bm-r0-00', namespace: 'metal3' },
        {
          online: true,
          bootMACAddress: '52:54:00:00:00:01',
          bmc: { address: 'redfish://10.0.0.9/redfish/v1/Systems/1', credentialsName: 'bmc-r0-00' },
        },
      ),
    );
  });
  after(async () => {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('-o name: kind.group/name, one a line, as kubectl prints it', () => {
    it('maintenance list and status', async () => {
      const all = await run('maintenance', 'list', '-o', 'name');
      assert.equal(all.code, 0, all.err);
      assert.deepEqual(lines(all.out).sort(), [
        'nodemaintenance.maintenance.nodewarden.dev/kernel-1',
        'nodemaintenance.maintenance.nodewarden.dev/worker-2',
      ]);
      const one = await run('maintenance', 'status', 'worker-1', '-o', 'name');
      assert.equal(one.out, 'nodemaintenance.maintenance.nodewarden.dev/kernel-1\n');
    });

    it('upgrade list names each object with its own kind, and upgrade status the NodeVersion', async () => {
      const all = await run('upgrade', 'list', '-o', 'name');
      assert.equal(all.code, 0, all.err);
      assert.deepEqual(lines(all.out), [
        'nodeversion.upgrade.nodewarden.dev/default',
        'scalinggroup.upgrade.nodewarden.dev/workers',
        'pendingnode.upgrade.nodewarden.dev/worker-9',
      ]);
      const one = await run('upgrade', 'status', '-o', 'name');
      assert.equal(one.out, 'nodeversion.upgrade.nodewarden.dev/default\n');
    });

    it('baremetal hosts', async () => {
      const r = await run('baremetal', 'hosts', '-o', 'name');
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, 'baremetalhost.metal3.io/bm-r0-00\n');
    });
  });

  describe('-o wide: the table with more columns; table stays the default', () => {
    it('maintenance list adds the drain: pods, timeout, grace period, selector, the reason uncut', async () => {
      const wide = await run('maintenance', 'list', '-o', 'wide');
      assert.equal(wide.code, 0, wide.err);
      const [head, ...rows] = lines(wide.out);
      assert.match(
        head!,
        /^NAME\s+NODE\s+PHASE\s+PROGRESS\s+EVICTED\s+PENDING\s+BLOCKED\s+DRAIN-TIMEOUT\s+GRACE-PERIOD\s+POD-SELECTOR\s+REASON\s+AGE$/,
      );
      assert.match(
        rows.find((r) => r.startsWith('kernel-1'))!,
        /\s45m\s+30s\s+<all>\s+kernel update .*long story\s+\S+$/,
      );
      assert.match(
        rows.find((r) => r.startsWith('worker-2'))!,
        /^worker-2\s+worker-2\s+Running\s+50%\s+4\/4\s+0\s+0\s+none\s+pod\s/,
      );
      const table = await run('maintenance', 'list', '-o', 'table');
      assert.match(lines(table.out)[0]!, /^NAME\s+NODE\s+PHASE\s+PROGRESS\s+REASON\s+AGE$/);
      assert.match(table.out, /…/);
      assert.equal((await run('maintenance', 'list')).out.split('\n')[0], lines(table.out)[0]);
    });

    it('upgrade list adds the strategy, the groups and the nodes in flight', async () => {
      const wide = await run('upgrade', 'list', '-o', 'wide');
      assert.equal(wide.code, 0, wide.err);
      assert.match(
        wide.out,
        /^NAME\s+IMAGE\s+VERSION\s+KUBERNETES\s+UP-TO-DATE\s+REPLACING\s+DRAINING\s+GROUPS\s+MAX-SURGE\s+MAX-UNAVAILABLE\s+DRAIN-TIMEOUT\s+STATE\s+AGE$/m,
      );
      assert.match(
        wide.out,
        /^NAME\s+GROUP\s+ROLE\s+MIN\s+MAX\s+AUTOSCALING\s+NODEVERSION\s+MAX-SURGE\s+MAX-UNAVAILABLE\s+MAX-SIZE\s+IMAGE$/m,
      );
      assert.match(wide.out, /^workers\s+workers\s+-\s+-\s+-\s+no\s+default\s+2\s+-\s+-\s+-$/m);
      assert.match(wide.out, /^worker-9\s+worker-9\s+Join\s.*\sworkers\s+nwcloud:\/\/workers\/worker-9$/m);
      const table = await run('upgrade', 'list');
      assert.doesNotMatch(table.out, /MAX-SURGE|PROVIDER-ID/);
    });

    it('baremetal hosts gives the namespace its column and adds the BMC and the boot MAC', async () => {
      const wide = await run('baremetal', 'hosts', '-o', 'wide');
      assert.equal(wide.code, 0, wide.err);
      assert.match(
        lines(wide.out)[0]!,
        /^NAMESPACE\s+HOST\s+RACK\s+STATE\s+POWER\s+HARDWARE\s+CLAIMED BY\s+BMC\s+BOOT MAC\s+OPERATIONAL\s+IMAGE\s+ERROR$/,
      );
      assert.match(
        wide.out,
        /^metal3\s+bm-r0-00\s.*redfish:\/\/10\.0\.0\.9\/redfish\/v1\/Systems\/1\s+52:54:00:00:00:01\s/m,
      );
      const table = await run('baremetal', 'hosts');
      assert.match(table.out, /^metal3\/bm-r0-00\s/m);
      assert.doesNotMatch(table.out, /BMC/);
    });
  });

  it('refuses an unknown -o in every command, exit 2, listing the choices', async () => {
    for (const args of [
      ['maintenance', 'list'],
      ['upgrade', 'status'],
      ['baremetal', 'hosts'],
    ]) {
      const r = await run(...args, '-o', 'xml');
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
      assert.match(r.err, /--output must be table, wide, name, json or yaml, not "xml"/);
    }
  });

  describe('--timeout is how long the command waits', () => {
    it('maintenance start --timeout with --wait bounds the wait, not the drain', async () => {
      const r = await run(
        ...['maintenance', 'start', 'worker-1', '--name', 'timeout-wait', '--reason', 'r'],
        ...['--wait', '--timeout', '1s'],
      );
      assert.equal(r.code, 2, r.err);
      assert.match(r.err, /stopped waiting after 1s; the drain goes on/);
      const nm = fake.get(NodeMaintenances.type, 'timeout-wait') as { spec: { timeout?: string } };
      assert.equal(nm.spec.timeout, undefined);
      fake.remove(NodeMaintenances.type, 'timeout-wait');
    });

    it('maintenance start --timeout without --wait is refused, pointing at --drain-timeout', async () => {
      const r = await run(
        ...['maintenance', 'start', 'worker-1', '--name', 'timeout-drain', '--reason', 'r'],
        ...['--timeout', '10m'],
      );
      assert.equal(r.code, 2, r.err);
      assert.match(r.err, /--timeout only applies with --wait .*write --drain-timeout 10m/);
      assert.match(r.err, /Run "nodewarden maintenance --help"/);
      assert.equal(fake.get(NodeMaintenances.type, 'timeout-drain'), undefined);
    });
  });

  it('upgrade start --wait says when no operator seems to be running, and keeps waiting', async () => {
    const r = await run(
      ...['upgrade', 'start', '--name', 'no-operator', '--image', 'nwos-2.0.0'],
      ...['--wait', '--timeout', '7s'],
    );
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /no operator seems to be running: nodeversion\/no-operator has no status after 5s/);
    assert.match(r.err, /make run.*nodewarden operator.*helm install/);
    assert.match(r.err, /not finished after 7s; it goes on without us/);
    fake.remove(NodeVersions.type, 'no-operator');
  });
});
