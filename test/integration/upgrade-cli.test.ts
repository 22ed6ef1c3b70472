// `nodewarden upgrade` against a real API server with the upgrade CRDs
// installed and no operator: the test plays the operator by writing the
// NodeVersion's status subresource. Uses NodeVersions of its own name only.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type NodeVersion, NodeVersions } from '../../src/api/upgrade.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { CustomResourceDefinitions } from '../../src/runtime/resources.ts';
import { upgradeCommand } from '../../src/upgrade/cli.ts';
import { interrupted, nodewarden } from '../harness/binary.ts';
import { eventually, testKubeConfig, testKubeconfigPath } from '../harness/cluster.ts';

const T = NodeVersions.type;
const NAME = `cli-test-${randomBytes(3).toString('hex')}`;
type Status = NonNullable<NodeVersion['status']>;
type Condition = NonNullable<Status['conditions']>[number];

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const cond = (type: string, status: Condition['status'], reason: string, message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: now(),
});

describe('nodewarden upgrade on a real API server', () => {
  const client = KubeClient.fromKubeConfig(testKubeConfig());
  let out = '';
  let err = '';
  const io = { out: { write: (c: string) => (out += c) }, err: { write: (c: string) => (err += c) } };
  /** Runs the command in-process, with fresh captured output. */
  const run = (...args: string[]) => {
    out = '';
    err = '';
    return upgradeCommand([...args, '--name', NAME, '--kubeconfig', testKubeconfigPath()], io);
  };
  const get = () => client.get<NodeVersion>(T, NAME);
  /** Writes status as the operator would, for the generation it has seen. */
  const setStatus = (status: Status) =>
    client.patch(T, NAME, undefined, { status }, { type: 'merge', subresource: 'status' });
  const rollingOut = (observedGeneration: number): Status => ({
    observedGeneration,
    counts: { total: 9, upToDate: 3, outdated: 6, donors: 1, heirs: 2 },
    groups: [
      {
        groupId: 'workers',
        role: 'Worker',
        total: 6,
        upToDate: 0,
        outdated: 6,
        replacing: 2,
        draining: 1,
        imageReference: 'img-a',
      },
      { groupId: 'cp', role: 'ControlPlane', total: 3, upToDate: 3, outdated: 0, replacing: 0, draining: 0 },
    ],
    replaced: 3,
    conditions: [
      cond('Outdated', 'True', 'NodesOutOfDate', '6 nodes to replace'),
      cond('Progressing', 'True', 'ReplacingNodes', '2 replacements in flight'),
      cond('Degraded', 'False', 'AsExpected'),
    ],
    startTime: now(),
  });
  const upToDate = (observedGeneration: number): Status => ({
    observedGeneration,
    counts: { total: 9, upToDate: 9, outdated: 0 },
    groups: [],
    replaced: 9,
    conditions: [
      cond('Outdated', 'False', 'NodesUpToDate', 'all nodes up to date'),
      cond('Progressing', 'False', 'RolloutComplete', ''),
      cond('Degraded', 'False', 'AsExpected'),
    ],
    finishTime: now(),
  });

  before(async () => {
    // The CRDs ship with the suite and the harness installs them; fail clearly if they are missing.
    await client.get(CustomResourceDefinitions, NodeVersions.name);
  });
  after(async () => {
    await client.delete(T, NAME, undefined, { ignoreNotFound: true });
    client.close();
  });

  it('start creates the NodeVersion with the fields the flags give, server defaults for the rest', async () => {
    const code = await run(
      ...['start', '--image', 'img-a', '--image-version', '1.0', '--kubernetes-version', 'v1.37.1'],
      ...['--max-surge', '3', '--drain-timeout', '10m', '--control-plane-first=false'],
    );
    assert.equal(code, 0, err);
    assert.match(out, new RegExp(`nodeversion/${NAME} created: rolling out img-a`));
    const nv = await get();
    assert.deepEqual(nv.spec, {
      image: 'img-a',
      imageVersion: '1.0',
      kubernetesVersion: 'v1.37.1',
      strategy: {
        maxSurge: 3,
        drainTimeout: '10m',
        controlPlaneFirst: false,
        maxUnavailable: 1,
        nodeReadyTimeout: '15m',
        paused: false,
      },
    });
    assert.equal(nv.metadata.generation, 1);
  });

  it('status says it waits for the operator until the status observes the generation', async () => {
    assert.equal(await run('status'), 0, err);
    assert.match(out, /^State: +waiting for the operator to observe generation 1$/m);
  });

  it('refuses a new image while the status says Progressing, changing nothing, and says why', async () => {
    await setStatus(rollingOut(1));
    assert.equal(await run('start', '--image', 'img-b'), 1);
    assert.equal(
      err,
      `nodewarden upgrade: nodeversion/${NAME} is still rolling out img-a (3/9 nodes up to date); ` +
        'refusing to switch to img-b mid-rollout: wait for it to finish, or pass --force\n',
    );
    const nv = await get();
    assert.equal(nv.spec.image, 'img-a');
    assert.equal(nv.metadata.generation, 1);
  });

  it('status shows the groups, totals, conditions and timings of the rollout', async () => {
    assert.equal(await run('status'), 0, err);
    assert.match(out, /^State: +Progressing$/m);
    assert.match(out, /^ {2}cp +ControlPlane +\[##########\] 3\/3 +0 +0 +-$/m);
    assert.match(out, /^ {2}workers +Worker +\[----------\] 0\/6 +2 +1 +img-a$/m);
    assert.match(out, /^Nodes: +3\/9 up to date, 6 outdated, 1 draining, 2 taking over; 3 replaced$/m);
    assert.match(out, /^Conditions: +Outdated=True \(NodesOutOfDate\): 6 nodes to replace$/m);
    assert.match(out, /^Elapsed: +\d+s$/m);
  });

  it('status -o wide adds the outdated nodes per group; -o name prints kind.group/name (the binary)', async () => {
    const kubeconfig = ['--name', NAME, '--kubeconfig', testKubeconfigPath()];
    const wide = await nodewarden(['upgrade', 'status', '-o', 'wide', ...kubeconfig]);
    assert.equal(wide.code, 0, wide.err);
    assert.match(
      wide.out,
      /^ {2}GROUP +ROLE +UP-TO-DATE +OUTDATED +REPLACING +DRAINING +IMAGE +LAUNCHES-TARGET$/m,
    );
    assert.match(wide.out, /^ {2}workers +Worker +\[----------\] 0\/6 +6 +2 +1 +img-a +yes$/m);
    const name = await nodewarden(['upgrade', 'status', '-o', 'name', ...kubeconfig]);
    assert.equal(name.code, 0, name.err);
    assert.equal(name.out, `nodeversion.upgrade.nodewarden.dev/${NAME}\n`);
  });

  it('accepts the new image with --force, keeping the strategy fields not given', async () => {
    assert.equal(await run('start', '--image', 'img-b', '--force'), 0, err);
    assert.match(err, /re-targeting the rollout in progress \(--force\)/);
    assert.match(out, new RegExp(`nodeversion/${NAME} configured: rolling out img-b \\(was img-a\\)`));
    const nv = await get();
    assert.equal(nv.spec.image, 'img-b');
    assert.equal(nv.spec.imageVersion, '1.0');
    assert.equal(nv.spec.strategy?.maxSurge, 3);
    assert.equal(nv.spec.strategy?.controlPlaneFirst, false);
    assert.equal(nv.metadata.generation, 2);
  });

  it('pause and resume toggle spec.strategy.paused', async () => {
    assert.equal(await run('pause'), 0, err);
    assert.equal((await get()).spec.strategy?.paused, true);
    assert.match(out, new RegExp(`nodeversion/${NAME} paused`));
    assert.equal(await run('resume'), 0, err);
    assert.equal((await get()).spec.strategy?.paused, false);
    assert.equal((await get()).spec.strategy?.maxSurge, 3);
  });

  it('status --json prints the object, status included', async () => {
    assert.equal(await run('status', '--json'), 0, err);
    const obj = JSON.parse(out) as NodeVersion;
    assert.equal(obj.kind, 'NodeVersion');
    assert.equal(obj.metadata.name, NAME);
    assert.equal(obj.spec.image, 'img-b');
    assert.equal(obj.status?.observedGeneration, 1);
    assert.deepEqual(
      obj.status?.conditions?.map((c) => `${c.type}=${c.status}`),
      ['Outdated=True', 'Progressing=True', 'Degraded=False'],
    );
  });

  it('start --wait follows the rollout and exits 0 once it is done at the current generation', async () => {
    const generation = (await get()).metadata.generation!;
    const done = run('start', '--image', 'img-b', '--max-unavailable', '2', '--wait', '--timeout', '60');
    await eventually('the strategy change', async () =>
      (await get()).spec.strategy?.maxUnavailable === 2 ? true : undefined,
    );
    const target = generation + 1;
    await setStatus(rollingOut(target));
    await eventually('the progress line', async () => (err.includes('3/9 up to date') ? true : undefined));
    await setStatus(upToDate(target));
    assert.equal(await done, 0, err);
    assert.match(
      err.trimEnd().split('\n').at(-1) ?? '',
      new RegExp(`nodeversion/${NAME}: 9/9 nodes up to date on img-b`),
    );
  });

  it('list shows the NodeVersion as a row', async () => {
    assert.equal(await upgradeCommand(['list', '--kubeconfig', testKubeconfigPath()], io), 0, err);
    assert.match(out, new RegExp(`^${NAME} +img-b +1\\.0 +v1\\.37\\.1 +9/9 +UpToDate +\\d+s$`, 'm'));
  });
  it('Ctrl-C during start --wait says the rollout goes on, and how to follow and pause it', async () => {
    const got = await interrupted(
      [
        'upgrade',
        'start',
        '--image',
        'img-c',
        '--force',
        '--wait',
        '--name',
        NAME,
        '--kubeconfig',
        testKubeconfigPath(),
      ],
      /up to date/, // the progress line: it waits
    );
    assert.equal(got.code, 130, got.err);
    assert.match(
      got.err,
      new RegExp(`interrupted: stopped waiting; the rollout of nodeversion/${NAME} goes on`),
    );
    assert.match(got.err, new RegExp(`nodewarden upgrade pause --name ${NAME}`));
    assert.equal((await get()).spec.image, 'img-c', 'the new image stays');
  });
});
