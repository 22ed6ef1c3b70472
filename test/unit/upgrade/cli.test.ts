import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { type NodeVersion, NodeVersions, PendingNodes, ScalingGroups } from '../../../src/api/upgrade.ts';
import {
  checkStartPlan,
  parseTimeout,
  planStart,
  retargetRefusal,
  upgradeCommand,
} from '../../../src/upgrade/cli.ts';
import { FakeApiServer } from '../runtime/fake-apiserver.ts';

type Status = NonNullable<NodeVersion['status']>;
type Condition = NonNullable<Status['conditions']>[number];

const cond = (type: string, status: Condition['status'], reason = 'Test'): Condition => ({
  type,
  status,
  reason,
  message: '',
  lastTransitionTime: '2030-01-01T00:00:00Z',
});
const rollingOut = (observedGeneration = 1): Status => ({
  observedGeneration,
  counts: { total: 9, upToDate: 4, outdated: 5 },
  conditions: [cond('Outdated', 'True'), cond('Progressing', 'True', 'ReplacingNodes')],
});
const upToDate = (observedGeneration = 1): Status => ({
  observedGeneration,
  counts: { total: 9, upToDate: 9, outdated: 0 },
  conditions: [cond('Outdated', 'False'), cond('Progressing', 'False')],
});

describe('planStart: flags to NodeVersion spec', () => {
  it('names the object "default" and sets only the image when nothing else is given', () => {
    const plan = planStart(['start', '--image', 'img-2']);
    assert.equal(plan.name, 'default');
    assert.deepEqual(plan.spec, { image: 'img-2' });
    assert.equal(plan.force, false);
    assert.equal(plan.wait, false);
    assert.equal(plan.timeoutMs, undefined);
  });

  it('maps every flag to its spec field', () => {
    const plan = planStart([
      ...['start', '--image', 'img-2', '--image-version', '2.0', '--kubernetes-version', 'v1.37.1'],
      ...['--max-surge', '10', '--max-unavailable', '2', '--drain-timeout', '1h30m'],
      ...['--node-ready-timeout', '5m', '--no-control-plane-first', '--name', 'fleet-a', '--force'],
      ...['--wait', '--timeout', '600'],
    ]);
    assert.equal(plan.name, 'fleet-a');
    assert.deepEqual(plan.spec, {
      image: 'img-2',
      imageVersion: '2.0',
      kubernetesVersion: 'v1.37.1',
      strategy: {
        maxSurge: 10,
        maxUnavailable: 2,
        drainTimeout: '1h30m',
        nodeReadyTimeout: '5m',
        controlPlaneFirst: false,
      },
    });
    assert.equal(plan.force, true);
    assert.equal(plan.wait, true);
    assert.equal(plan.timeoutMs, 600_000);
  });

  it('takes --control-plane-first=false and =true the way Go flags are written', () => {
    const cpf = (arg: string) => planStart(['start', '--image', 'i', arg]).spec.strategy?.controlPlaneFirst;
    assert.equal(cpf('--control-plane-first=false'), false);
    assert.equal(cpf('--control-plane-first=true'), true);
    assert.equal(cpf('--control-plane-first'), true);
    assert.throws(() => cpf('--control-plane-first=maybe'), /--control-plane-first takes true or false/);
    assert.throws(
      () => planStart(['start', '--image', 'i', '--control-plane-first', '--no-control-plane-first']),
      /contradict/,
    );
  });

  for (const bad of ['-1', '1.5', 'three', '', '%', '2.5%']) {
    it(`refuses --max-surge "${bad}" and --max-unavailable "${bad}" with a one-line message`, () => {
      assert.throws(
        () => planStart(['start', '--image', 'i', '--max-surge', bad]),
        (err: Error) =>
          err.message ===
          `--max-surge must be a whole number of nodes, 1 or more, or a percentage above 0% like "25%", not "${bad}"`,
      );
      assert.throws(
        () => planStart(['start', '--image', 'i', '--max-unavailable', bad]),
        /--max-unavailable must be a whole number of nodes, 0 or more, or a percentage up to 100%/,
      );
    });
  }

  it('takes --max-surge and --max-unavailable as a count or a percentage, as a Deployment does', () => {
    const plan = planStart(['start', '--image', 'i', '--max-surge', '25%', '--max-unavailable', '10%']);
    assert.deepEqual(plan.spec.strategy, { maxSurge: '25%', maxUnavailable: '10%' });
    const counted = planStart(['start', '--image', 'i', '--max-surge', '3', '--max-unavailable', '2']);
    assert.deepEqual(counted.spec.strategy, { maxSurge: 3, maxUnavailable: 2 });
  });

  it('takes --max-unavailable 0: a surge-only rollout', () => {
    const plan = planStart(['start', '--image', 'i', '--max-surge', '2', '--max-unavailable', '0']);
    assert.deepEqual(plan.spec.strategy, { maxSurge: 2, maxUnavailable: 0 });
  });

  it('refuses a surge of 0 or 0%, and both 0 saying why', () => {
    for (const zero of ['0', '0%'])
      assert.throws(() => planStart(['start', '--image', 'i', '--max-surge', zero]), /1 or more/);
    assert.throws(
      () => planStart(['start', '--image', 'i', '--max-surge', '0', '--max-unavailable', '0%']),
      (err: Error) =>
        err.message ===
        '--max-surge and --max-unavailable cannot both be 0: no node could ever be replaced ' +
          '(--max-unavailable 0 with a surge of 1 or more is a surge-only rollout)',
    );
    assert.throws(() => planStart(['start', '--image', 'i', '--max-unavailable', '101%']), /up to 100%/);
  });

  for (const ok of ['0', '30m', '1h30m', '1.5h', '90s']) {
    it(`accepts --drain-timeout ${ok}, a value the CRD pattern allows`, () => {
      assert.equal(
        planStart(['start', '--image', 'i', '--drain-timeout', ok]).spec.strategy?.drainTimeout,
        ok,
      );
    });
  }
  for (const bad of ['banana', '10', '10d', '-1m', '1h 30m']) {
    it(`refuses --drain-timeout and --node-ready-timeout "${bad}" before anything is sent`, () => {
      assert.throws(
        () => planStart(['start', '--image', 'i', '--drain-timeout', bad]),
        new RegExp(`--drain-timeout "${bad}" is not a duration`),
      );
      assert.throws(
        () => planStart(['start', '--image', 'i', '--node-ready-timeout', bad]),
        /--node-ready-timeout .* is not a duration/,
      );
    });
  }

  it('refuses a Kubernetes version that is not vX.Y.Z', () => {
    for (const bad of ['1.37.1', 'v1.37', 'latest'])
      assert.throws(
        () => planStart(['start', '--image', 'i', '--kubernetes-version', bad]),
        /--kubernetes-version .* is not a release like v1\.37\.1/,
      );
  });

  it('requires --image, refuses unknown flags, flags of another verb and stray arguments', () => {
    assert.throws(() => planStart(['start']), /start needs --image IMG/);
    assert.throws(() => planStart(['start', '--image', '  ']), /start needs --image IMG/);
    assert.throws(() => planStart(['start', '--image', 'i', '--bogus']), /bogus/);
    assert.throws(() => planStart(['start', '--image', 'i', '--watch']), /--watch: not a flag of start/);
    assert.throws(() => planStart(['start', 'img-2']), /start takes no arguments/);
    assert.throws(() => planStart(['start', '--image', 'i', '--timeout', '60']), /only applies with --wait/);
  });

  it('checks what the schema bounds, e.g. the image length', async () => {
    await assert.rejects(checkStartPlan(planStart(['start', '--image', 'x'.repeat(1025)])), /image/);
  });

  it('reads --timeout as seconds or as a duration; refuses anything else', () => {
    assert.equal(parseTimeout('90'), 90_000);
    assert.equal(parseTimeout('2h'), 7_200_000);
    assert.equal(parseTimeout('0'), 0);
    assert.throws(() => parseTimeout('soon'), /--timeout "soon" is not a number of seconds or a duration/);
  });
});

describe('retargetRefusal: the anchor rule against changing the image mid-rollout', () => {
  const nv = (status?: Status, generation = 1, image = 'img-1'): NodeVersion => ({
    ...NodeVersions.make({ name: 'default', generation }, { image, kubernetesVersion: 'v1.36.0' }),
    ...(status ? { status } : {}),
  });
  const plan = (...flags: string[]) => planStart(['start', ...flags]);

  it('refuses a new image while Progressing is True, in one line saying why', () => {
    const why = retargetRefusal(nv(rollingOut()), plan('--image', 'img-2'));
    assert.equal(
      why,
      'nodeversion/default is still rolling out img-1 (4/9 nodes up to date); ' +
        'refusing to switch to img-2 mid-rollout: wait for it to finish, or pass --force',
    );
  });

  it('refuses a new Kubernetes version mid-rollout too', () => {
    assert.match(
      retargetRefusal(nv(rollingOut()), plan('--image', 'img-1', '--kubernetes-version', 'v1.37.1')) ?? '',
      /refusing to switch to Kubernetes v1\.37\.1 mid-rollout/,
    );
  });

  it('refuses when Outdated is True for the current generation even if not progressing (e.g. paused)', () => {
    const stuck: Status = { observedGeneration: 3, conditions: [cond('Outdated', 'True')] };
    assert.ok(retargetRefusal(nv(stuck, 3), plan('--image', 'img-2')));
    // an Outdated verdict on an older spec says nothing about the current one
    assert.equal(retargetRefusal(nv(stuck, 4), plan('--image', 'img-2')), undefined);
  });

  it('allows a new image once the rollout is finished, or before the operator ever looked', () => {
    assert.equal(retargetRefusal(nv(upToDate()), plan('--image', 'img-2')), undefined);
    assert.equal(retargetRefusal(nv(), plan('--image', 'img-2')), undefined);
  });

  it('allows tuning the strategy of a rollout in progress when the target stays', () => {
    assert.equal(retargetRefusal(nv(rollingOut()), plan('--image', 'img-1', '--max-surge', '5')), undefined);
  });
});

describe('upgradeCommand against a loopback API server', () => {
  const T = NodeVersions.type;
  let fake: FakeApiServer;
  let dir: string;
  let kubeconfig: string;
  let out: string;
  let err: string;
  const io = { out: { write: (c: string) => (out += c) }, err: { write: (c: string) => (err += c) } };
  const run = (...args: string[]) => upgradeCommand([...args, '--kubeconfig', kubeconfig], io);
  const stored = (name = 'default') => fake.get(T, name) as NodeVersion | undefined;
  const setStatus = (status: Status, generation = 1, name = 'default') => {
    const nv = stored(name)!;
    fake.upsert(T, { ...nv, metadata: { ...nv.metadata, generation }, status });
  };
  const until = async (what: string, cond: () => boolean) => {
    for (let i = 0; !cond(); i++) {
      if (i > 500) assert.fail(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  before(async () => {
    fake = await FakeApiServer.start();
    dir = mkdtempSync(join(tmpdir(), 'nw-upgrade-cli-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, fake.kubeConfig().exportConfig());
  });
  after(async () => {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    out = '';
    err = '';
    fake.remove(T, 'default');
  });

  it('start creates the NodeVersion, then patches the image and keeps strategy fields not given', async () => {
    assert.equal(
      await run('start', '--image', 'img-1', '--max-surge', '3', '--drain-timeout', '10m'),
      0,
      err,
    );
    assert.match(out, /nodeversion\/default created: rolling out img-1/);
    assert.deepEqual(stored()?.spec, { image: 'img-1', strategy: { maxSurge: 3, drainTimeout: '10m' } });

    setStatus(upToDate());
    assert.equal(await run('start', '--image', 'img-2', '--max-unavailable', '2'), 0, err);
    assert.deepEqual(stored()?.spec, {
      image: 'img-2',
      strategy: { maxSurge: 3, drainTimeout: '10m', maxUnavailable: 2 },
    });
    const patch = fake.requests.findLast((r) => r.method === 'PATCH');
    assert.equal(patch?.headers['content-type'], 'application/merge-patch+json');
    // the patch is conditional on the version judged, so a rollout starting meanwhile is not overrun
    assert.ok((patch?.body as NodeVersion | undefined)?.metadata.resourceVersion);
  });

  it('refuses a new image mid-rollout without --force, changing nothing, and accepts it with --force', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    setStatus(rollingOut());
    const patches = () => fake.requests.filter((r) => r.method === 'PATCH').length;
    const before = patches();
    assert.equal(await run('start', '--image', 'img-2'), 1);
    assert.match(err, /^nodewarden upgrade: nodeversion\/default is still rolling out img-1 .*--force\n$/);
    assert.equal(patches(), before);
    assert.equal(stored()?.spec.image, 'img-1');

    err = '';
    assert.equal(await run('start', '--image', 'img-2', '--force'), 0, err);
    assert.equal(stored()?.spec.image, 'img-2');
    assert.match(err, /re-targeting the rollout in progress \(--force\)/);
  });

  it('looks again when the NodeVersion changed between its check and its patch', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    setStatus(upToDate());
    fake.failNext(1, 409, { method: 'PATCH' });
    const gets = () =>
      fake.requests.filter((r) => r.method === 'GET' && r.path.includes('/nodeversions')).length;
    const before = gets();
    assert.equal(await run('start', '--image', 'img-2'), 0, err);
    assert.equal(gets() - before, 2, 'read once per attempt');
    assert.equal(stored()?.spec.image, 'img-2');
  });

  it('start --wait follows until Outdated and Progressing are False at the current generation', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    // The fake server does not bump generations: play the API server, whose patch makes generation 2
    // while the operator's verdict "up to date" is still about generation 1; it must not end the wait.
    setStatus(upToDate(1), 2);
    out = '';
    const done = run('start', '--image', 'img-2', '--wait', '--timeout', '20');
    await until('the waiting line', () => err.includes('waiting for the operator to observe generation 2'));
    setStatus(rollingOut(2), 2);
    await until('the progress line', () => err.includes('4/9 up to date'));
    setStatus(upToDate(2), 2);
    assert.equal(await done, 0, err);
    assert.match(
      err.trimEnd().split('\n').at(-1) ?? '',
      /^nodeversion\/default: 9\/9 nodes up to date on img-2/,
    );
  });

  it('start --wait gives up at --timeout with a clear message and exit 2', async () => {
    assert.equal(await run('start', '--image', 'img-1', '--wait', '--timeout', '1'), 2);
    assert.match(err, /the rollout is not finished after 1s; it goes on without us/);
  });

  it('pause and resume set spec.strategy.paused and keep the rest of the strategy', async () => {
    assert.equal(await run('start', '--image', 'img-1', '--max-surge', '2'), 0, err);
    assert.equal(await run('pause'), 0, err);
    assert.deepEqual(stored()?.spec.strategy, { maxSurge: 2, paused: true });
    assert.match(out, /nodeversion\/default paused: replacements in flight finish/);
    assert.equal(await run('pause'), 0, err);
    assert.match(out, /already paused/);
    assert.equal(await run('resume'), 0, err);
    assert.deepEqual(stored()?.spec.strategy, { maxSurge: 2, paused: false });
    assert.match(out, /nodeversion\/default resumed/);
  });

  it('says when there is no NodeVersion of that name, and exits 1', async () => {
    assert.equal(await run('status', '--name', 'nope'), 1);
    assert.match(err, /no NodeVersion named "nope" \(nodewarden upgrade start --image IMG creates it\)/);
    assert.equal(await run('resume', '--name', 'nope'), 1);
  });

  it('status prints the display, and --json the object without managedFields', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    setStatus(rollingOut());
    out = '';
    assert.equal(await run('status'), 0, err);
    assert.match(out, /^State: +Progressing$/m);
    out = '';
    assert.equal(await run('status', '--json'), 0, err);
    const obj = JSON.parse(out) as NodeVersion;
    assert.equal(obj.spec.image, 'img-1');
    assert.equal(obj.status?.counts?.upToDate, 4);
    assert.equal(obj.metadata.managedFields, undefined);
  });

  it('status --watch re-prints on each change when not a terminal, and stops at --timeout', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    setStatus(rollingOut());
    out = '';
    const done = run('status', '--watch', '--timeout', '2');
    await until('the first display', () => out.includes('4/9 up to date'));
    setStatus(upToDate());
    await until('the second display', () => out.includes('9/9 up to date'));
    assert.equal(await done, 0, err);
    const shots = out.split('\n\n');
    assert.equal(shots.length, 2, out);
    assert.match(shots[0] ?? '', /State: +Progressing/);
    assert.match(shots[1] ?? '', /State: +UpToDate/);
  });

  it('status --watch prints an object once, not again when a poll returns it unchanged', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    setStatus(rollingOut());
    // Four watchers at once, one per output form, each with its own capture.
    const forms = [['-o', 'json'], ['--json'], ['-o', 'yaml'], []];
    const captured = forms.map(() => ({ text: '' }));
    const runs = forms.map((form, i) =>
      upgradeCommand(['status', '--watch', '--timeout', '2', ...form, '--kubeconfig', kubeconfig], {
        out: { write: (c: string) => (captured[i]!.text += c) },
        err: io.err,
      }),
    );
    await until('the first prints', () => captured.every((c) => c.text.length > 0));
    // A cut watch makes the command poll: every poll returns the same object.
    fake.closeWatchesAbruptly();
    await new Promise((r) => setTimeout(r, 1200));
    setStatus(upToDate());
    for (const r of runs) assert.equal(await r, 0, err);
    const count = (text: string, re: RegExp) => text.match(re)?.length ?? 0;
    for (const c of captured.slice(0, 2)) assert.equal(count(c.text, /"kind":"NodeVersion"/g), 2, c.text);
    assert.equal(count(captured[2]!.text, /^kind: NodeVersion$/gm), 2, captured[2]!.text);
    assert.equal(count(captured[3]!.text, /^Name: /gm), 2, captured[3]!.text);
  });

  it('status --watch redraws in place on a terminal', async () => {
    assert.equal(await run('start', '--image', 'img-1'), 0, err);
    setStatus(rollingOut());
    let screen = '';
    const tty = { write: (c: string) => (screen += c), isTTY: true, columns: 200 };
    const done = upgradeCommand(['status', '--watch', '--timeout', '2', '--kubeconfig', kubeconfig], {
      out: tty,
      err: io.err,
    });
    await until('the first display', () => screen.includes('4/9 up to date'));
    const height = screen.split('\n').length - 1;
    setStatus(upToDate());
    await until('the redraw', () => screen.includes('9/9 up to date'));
    assert.equal(await done, 0, err);
    assert.ok(screen.includes(`\x1b[${height}A\r\x1b[J`), 'moved up over the previous display and erased it');
  });

  it('start warns that a surge beyond what the scaling groups hold is clamped to it', async () => {
    const sg = (name: string, spec: Record<string, unknown>) =>
      fake.upsert(
        ScalingGroups.type,
        ScalingGroups.make({ name }, { groupId: name, role: 'Worker', nodeVersion: 'default', ...spec }),
      );
    sg('pool-a', { min: 1, max: 10 });
    sg('pool-b', { min: 1, max: 10, rollout: { maxSize: 4 } });
    try {
      assert.equal(await run('start', '--image', 'img-1', '--max-surge', '100000'), 0, err);
      assert.equal(stored()?.spec.strategy?.maxSurge, 100000, 'written as asked; the operator clamps it');
      assert.match(
        err,
        /^warning: nodeversion\/default: maxSurge 100000 is more than the scaling groups can hold \(14: pool-a max 10, pool-b maxSize 4\); surging at most 14 nodes at once$/m,
      );
      err = '';
      assert.equal(await run('start', '--image', 'img-1', '--max-surge', '14'), 0, err);
      assert.doesNotMatch(err, /warning/);
    } finally {
      fake.remove(ScalingGroups.type, 'pool-a');
      fake.remove(ScalingGroups.type, 'pool-b');
    }
  });

  it('list prints NodeVersions, ScalingGroups and PendingNodes in tables', async () => {
    assert.equal(await run('start', '--image', 'img-1', '--image-version', '1.0'), 0, err);
    fake.upsert(ScalingGroups.type, {
      ...ScalingGroups.make({ name: 'workers' }, { groupId: 'workers', role: 'Worker', min: 1, max: 10 }),
      status: { imageReference: 'img-1' },
    });
    fake.upsert(
      PendingNodes.type,
      PendingNodes.make(
        { name: 'worker-9' },
        { providerID: 'sim://worker-9', groupID: 'workers', nodeName: 'worker-9', goal: 'Join' },
      ),
    );
    out = '';
    assert.equal(await run('list'), 0, err);
    assert.match(out, /^NodeVersions\nNAME +IMAGE +VERSION .*\ndefault +img-1 +1\.0 +- +- +Waiting +\d+s$/m);
    assert.match(
      out,
      /^ScalingGroups\nNAME +GROUP +ROLE +MIN +MAX .*\nworkers +workers +Worker +1 +10 +no +img-1$/m,
    );
    assert.match(out, /^PendingNodes\nNAME +NODE +GOAL .*\nworker-9 +worker-9 +Join +- +no +-$/m);
    fake.remove(ScalingGroups.type, 'workers');
    fake.remove(PendingNodes.type, 'worker-9');
  });

  it('exits 2 on a usage error without contacting the server', async () => {
    const before = fake.requests.length;
    assert.equal(await run('start', '--image', 'i', '--max-surge', '0'), 2);
    assert.match(err, /--max-surge must be a whole number of nodes, 1 or more, .*not "0"/);
    assert.equal(await run('list', '--name', 'x'), 2);
    assert.match(err, /--name: not a flag of list/);
    assert.equal(await run('status', '--timeout', '5'), 2);
    assert.match(err, /--timeout only applies with --watch/);
    assert.equal(await run('frobnicate'), 2);
    assert.match(err, /unknown verb "frobnicate"/);
    assert.equal(fake.requests.length, before);
  });

  it('prints help with --help (exit 0) and without a verb (exit 2)', async () => {
    assert.equal(await upgradeCommand(['--help'], io), 0);
    assert.match(out, /^Usage: nodewarden upgrade <start\|status\|pause\|resume\|list>/);
    assert.match(out, /--max-surge N/);
    out = '';
    assert.equal(await upgradeCommand([], io), 2);
    assert.match(out, /^Usage:/);
  });
});
