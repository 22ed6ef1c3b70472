// `nodewarden maintenance` against a real API server with the NodeMaintenance
// CRD installed and no operator: the test plays the operator by writing the
// status subresource while the command waits. Uses node worker-004 only.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type NodeMaintenance, NodeMaintenances } from '../../src/api/maintenance.ts';
import { maintenanceCommand } from '../../src/maintenance/cli.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { interrupted, nodewarden } from '../harness/binary.ts';
import { eventually, testKubeConfig, testKubeconfigPath } from '../harness/cluster.ts';

const NODE = 'worker-004';
const T = NodeMaintenances.type;
type Status = NonNullable<NodeMaintenance['status']>;

describe('nodewarden maintenance on a real API server', () => {
  const client = KubeClient.fromKubeConfig(testKubeConfig());
  let out = '';
  let err = '';
  const io = { out: { write: (c: string) => (out += c) }, err: { write: (c: string) => (err += c) } };
  /** Runs the command in-process, with fresh captured output. */
  const run = (...args: string[]) => {
    out = '';
    err = '';
    return maintenanceCommand([...args, '--kubeconfig', testKubeconfigPath()], io);
  };
  const ours = async () =>
    (await client.list<NodeMaintenance>(T)).items.filter((nm) => nm.spec.nodeName === NODE);
  const removeOurs = async () => {
    for (const nm of await ours())
      await client.delete(T, nm.metadata.name!, undefined, { ignoreNotFound: true });
  };
  const setStatus = (name: string, status: Status) =>
    client.patch(T, name, undefined, { status }, { type: 'merge', subresource: 'status' });
  const gone = async (name: string) => {
    try {
      await client.get(T, name);
      return false;
    } catch (e) {
      if (isNotFound(e)) return true;
      throw e;
    }
  };

  before(removeOurs);
  after(async () => {
    await removeOurs();
    client.close();
  });

  it('start creates a NodeMaintenance named after the node with the spec the flags ask for', async () => {
    const code = await run(
      ...['start', NODE, '--reason', 'kernel 6.12', '--drain-timeout', '10m', '--grace-period', '30'],
      ...['--pod-selector', 'app=web', '--no-ignore-daemonsets'],
    );
    assert.equal(code, 0, err);
    assert.match(out, new RegExp(`nodemaintenance/${NODE} created`));
    const nm = await client.get<NodeMaintenance>(T, NODE);
    assert.deepEqual(nm.spec, {
      nodeName: NODE,
      reason: 'kernel 6.12',
      timeout: '10m',
      gracePeriodSeconds: 30,
      podSelector: 'app=web',
      deleteEmptyDirData: true,
      evictUnmanagedPods: true,
      ignoreDaemonSets: false,
    });
  });

  it('list shows it as a kubectl-get row, and status shows progress, blocked PDBs and conditions', async () => {
    await setStatus(NODE, {
      phase: 'Running',
      drainProgress: 50,
      totalPods: 4,
      evictionPods: 2,
      pendingPods: [{ namespace: 'shop', name: 'web-1' }],
      blockedPods: [{ namespace: 'shop', name: 'web-1', pdb: 'web', message: 'would violate the PDB' }],
      conditions: [
        {
          type: 'Drained',
          status: 'False',
          reason: 'PodsBlocked',
          message: '1 pod blocked',
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      ],
    });
    assert.equal(await run('list'), 0, err);
    assert.match(out, /^NAME +NODE +PHASE +PROGRESS +REASON +AGE$/m);
    assert.match(out, new RegExp(`^${NODE} +${NODE} +Running +50% +kernel 6\\.12 +\\d+s$`, 'm'));

    assert.equal(await run('status', NODE), 0, err);
    assert.match(out, /^Progress: +\[#+-+\] 50%$/m);
    assert.match(out, /^Pods: +4 total, 2 to evict, 1 evicted, 1 pending$/m);
    assert.match(out, /^Blocked: +shop\/web-1 by PDB shop\/web: would violate the PDB$/m);
    assert.match(out, /^Conditions: +Drained=False \(PodsBlocked\): 1 pod blocked$/m);

    assert.equal(await run('status', NODE, '-o', 'json'), 0, err);
    assert.equal((JSON.parse(out) as NodeMaintenance).status?.blockedPods?.[0]?.pdb, 'web');
  });

  it('list -o wide adds the drain, and -o name prints kind.group/name, through the binary', async () => {
    const kubeconfig = ['--kubeconfig', testKubeconfigPath()];
    const wide = await nodewarden(['maintenance', 'list', '-o', 'wide', ...kubeconfig]);
    assert.equal(wide.code, 0, wide.err);
    assert.match(
      wide.out,
      /^NAME +NODE +PHASE +PROGRESS +EVICTED +PENDING +BLOCKED +DRAIN-TIMEOUT +GRACE-PERIOD/m,
    );
    assert.match(
      wide.out,
      new RegExp(`^${NODE} +${NODE} +Running +50% +1/2 +1 +1 +10m +30s +app=web +kernel 6\\.12 +\\d+s$`, 'm'),
    );
    const name = await nodewarden(['maintenance', 'status', NODE, '-o', 'name', ...kubeconfig]);
    assert.equal(name.code, 0, name.err);
    assert.equal(name.out, `nodemaintenance.maintenance.nodewarden.dev/${NODE}\n`);
  });

  it('refuses a bad --drain-timeout with a clear message, creating nothing', async () => {
    assert.equal(
      await run('start', NODE, '--reason', 'r', '--drain-timeout', 'banana', '--name', 'nw-cli-bad'),
      2,
    );
    assert.match(err, /--drain-timeout "banana" is not a duration like 90s, 10m or 1h30m/);
    assert.ok(await gone('nw-cli-bad'));
  });

  it('start --timeout without --wait (once the drain bound) is refused, pointing at --drain-timeout', async () => {
    assert.equal(await run('start', NODE, '--reason', 'r', '--timeout', '10m', '--name', 'nw-cli-old'), 2);
    assert.match(err, /--timeout only applies with --wait .*write --drain-timeout 10m/);
    assert.ok(await gone('nw-cli-old'));
  });

  it('prints the API server refusal of a second maintenance of the same name and exits 1', async () => {
    assert.equal(await run('start', NODE, '--reason', 'again'), 1);
    assert.match(err, /the API server refused: .*already exists; nothing created/);
    assert.equal((await client.get<NodeMaintenance>(T, NODE)).spec.reason, 'kernel 6.12');
  });

  it('stop deletes it (no operator, so no finalizer: it is gone at once)', async () => {
    assert.equal(await run('stop', NODE), 0, err);
    assert.match(out, new RegExp(`nodemaintenance/${NODE} deleted`));
    assert.ok(await gone(NODE));
    assert.equal(await run('stop', NODE), 1);
    assert.match(err, /has no NodeMaintenance/);
  });

  it('start --wait renders the drain as the status moves, mentions the PDB, and exits 0 on Succeeded', async () => {
    const name = 'nw-cli-wait';
    const done = run(
      'start',
      NODE,
      '--reason',
      'wait test',
      '--name',
      name,
      '--wait',
      '--wait-timeout',
      '60s',
    );
    await eventually('the NodeMaintenance', () => client.get(T, name));
    await setStatus(name, {
      phase: 'Running',
      drainProgress: 50,
      pendingPods: [
        { namespace: 'shop', name: 'web-1' },
        { namespace: 'shop', name: 'web-2' },
      ],
      blockedPods: [
        { namespace: 'shop', name: 'web-1', pdb: 'web', message: 'would violate the PDB' },
        { namespace: 'shop', name: 'web-2', pdb: 'web', message: 'would violate the PDB' },
      ],
    });
    await eventually('the PDB in the progress line', async () =>
      err.includes('waiting on PDB shop/web for 2 pods') ? true : undefined,
    );
    await setStatus(name, { phase: 'Succeeded', drainProgress: 100, pendingPods: [], blockedPods: [] });
    assert.equal(await done, 0, err);
    assert.match(err, /50% Running, 2 pods left, waiting on PDB shop\/web for 2 pods/);
    assert.match(err.trimEnd().split('\n').at(-1) ?? '', /100% Succeeded, node worker-004 drained/);

    assert.equal(await run('stop', NODE, '--name', name, '--wait', '--wait-timeout', '30s'), 0, err);
    assert.match(err, /node worker-004 is schedulable again/);
    assert.ok(await gone(name));
  });

  it('Ctrl-C during start --wait says the drain goes on, and how to follow and end it', async () => {
    await removeOurs();
    const got = await interrupted(
      ['maintenance', 'start', NODE, '--reason', 'ctrl-c', '--wait', '--kubeconfig', testKubeconfigPath()],
      /% Pending/, // the progress line: it waits
    );
    assert.equal(got.code, 130, got.err);
    assert.match(got.err, /interrupted: stopped waiting; the drain of worker-004 goes on/);
    assert.match(got.err, /nodewarden maintenance stop worker-004/);
    assert.equal((await ours()).length, 1, 'the maintenance is still there');
  });
});
