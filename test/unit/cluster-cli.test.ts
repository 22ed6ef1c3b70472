import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { clusterCommand, clusterHelp } from '../../src/cluster/cli.ts';
import { simulatedCloud } from '../../src/cluster/infra/cloud/addon.ts';
import type { SimulatedInfrastructure } from '../../src/cluster/infra/index.ts';
import { nodewarden } from '../harness/binary.ts';

function addon(name: string, upFlags: SimulatedInfrastructure['upFlags']): SimulatedInfrastructure {
  return { name, upFlags, up: async () => {}, down: async () => {} };
}

describe("the add-ons' cluster up flags", () => {
  it('shows none without add-ons', () => {
    assert.doesNotMatch(clusterHelp([]), /--boot-delay/);
  });

  it("shows the cloud's --boot-delay between --port and --timeout, in the help's columns", () => {
    const lines = clusterHelp([simulatedCloud]).split('\n');
    const at = lines.findIndex((l) => l.startsWith('  --boot-delay D'));
    assert.deepEqual(lines.slice(at - 1, at + 3), [
      "  --port PORT          the API server's port on 127.0.0.1 (default: a free one)",
      '  --boot-delay D       how long a machine the simulated cloud launches takes to boot,',
      '                       e.g. 5s, 500ms (default 5s; kept across down/up; see nodewarden cloud)',
      '  --timeout DURATION   how long to wait for Ready nodes, e.g. 90s, 5m (default 2m)',
    ]);
  });

  it('gives a long flag its own space before the text', () => {
    const help = clusterHelp([addon('bmc', { 'bmc-power-delay': { placeholder: 'DURATION', help: 'x' } })]);
    assert.match(help, /^ {2}--bmc-power-delay DURATION {2}x$/m);
  });

  for (const [what, addons] of [
    ['one of ours', [addon('a', { port: { placeholder: 'P', help: 'x' } })]],
    [
      "another add-on's",
      [
        addon('a', { delay: { placeholder: 'D', help: 'x' } }),
        addon('b', { delay: { placeholder: 'D', help: 'y' } }),
      ],
    ],
  ] as const) {
    it(`refuses a flag that is ${what}`, async () => {
      await assert.rejects(clusterCommand(['status'], addons), /--(port|delay) is declared twice/);
    });
  }
});

describe('nodewarden cluster, as kubectl users expect', () => {
  // A state folder of its own: no clusters in it. And a cold cache with a `go` that fails first on
  // the PATH: a look at clusters that are not there must build nothing (a fresh machine's first
  // `cluster list` once started the control plane's 25-minute build; here it would fail at once,
  // and the build script would leave its lock in the cache).
  const state = mkdtempSync(join(tmpdir(), 'nodewarden-cli-'));
  const cache = mkdtempSync(join(tmpdir(), 'nodewarden-cli-cache-'));
  const noGo = mkdtempSync(join(tmpdir(), 'nodewarden-cli-nogo-'));
  writeFileSync(join(noGo, 'go'), '#!/bin/sh\necho "no Go here" >&2\nexit 1\n', { mode: 0o755 });
  after(() => {
    for (const dir of [state, cache, noGo]) rmSync(dir, { recursive: true, force: true });
  });
  const cluster = async (...args: string[]) => {
    const result = await nodewarden(['cluster', ...args], {
      NODEWARDEN_STATE_DIR: state,
      NODEWARDEN_CACHE: cache,
      NODEWARDEN_BIN_DIR: '',
      PATH: `${noGo}${delimiter}${process.env.PATH ?? ''}`,
    });
    assert.deepEqual(readdirSync(cache), [], `cluster ${args.join(' ')} started a build`);
    return result;
  };

  it('suggests the closest verb for a typo, exit 2 with a pointer to --help', async () => {
    const { code, err } = await cluster('stauts');
    assert.equal(code, 2);
    assert.match(err, /unknown verb "stauts"; did you mean "status"\?/);
    assert.match(err, /Run "nodewarden cluster --help" for usage/);
  });

  it('suggests the closest flag for a typo, exit 2', async () => {
    const { code, err } = await cluster('up', '--nodse', '3');
    assert.equal(code, 2);
    assert.match(err, /unknown flag --nodse; did you mean --nodes\?/);
  });

  it('refuses a flag the verb does not take, exit 2', async () => {
    const { code, err } = await cluster('delete', '--nodes', '3');
    assert.equal(code, 2);
    assert.match(err, /--nodes: not a flag of delete/);
  });

  it('says when there are no clusters, and how to create one', async () => {
    const { code, out, err } = await cluster('list');
    assert.equal(code, 0);
    assert.equal(out, '');
    assert.match(err, /no clusters; "nodewarden cluster up" creates one/);
  });

  it('lists as JSON with -o json, and --json is the same', async () => {
    for (const flag of [['-o', 'json'], ['--json']]) {
      const { code, out } = await cluster('list', ...flag);
      assert.equal(code, 0);
      assert.deepEqual(JSON.parse(out), []);
    }
  });

  it('shows the status of a cluster as YAML with -o yaml, exit 1 when it does not run', async () => {
    const { code, out } = await cluster('status', '--name', 'ghost', '-o', 'yaml');
    assert.equal(code, 1);
    assert.match(out, /^name: ghost$/m);
    assert.match(out, /^state: absent$/m);
  });

  it('says so when stopping, or asking the kubeconfig of, a cluster that does not exist', async () => {
    for (const verb of ['down', 'kubeconfig']) {
      const { code, err } = await cluster(verb, '--name', 'ghost');
      assert.equal(code, 1, verb);
      assert.match(err, /no cluster named "ghost"/, verb);
    }
  });

  it('says so when deleting a cluster that does not exist', async () => {
    const { code, err } = await cluster('delete', '--name', 'ghost');
    assert.equal(code, 1);
    assert.match(err, /no cluster named "ghost"/);
    assert.doesNotMatch(err, /deleted/);
  });

  it('prints a cluster by its plain name with -o name, and its detail with -o wide', async () => {
    const name = await cluster('status', '--name', 'ghost', '-o', 'name');
    assert.equal(name.code, 1);
    assert.equal(name.out, 'ghost\n');
    const wide = await cluster('status', '--name', 'ghost', '-o', 'wide');
    assert.match(wide.out, /^cluster +ghost$/m);
    assert.match(wide.out, /^kubeconfig +\S+/m);
  });

  it('takes up --timeout as a duration; a bare number is seconds, with a warning', async () => {
    // A bad --nodes after it stops up before anything starts.
    const bare = await cluster('up', '--name', 'ghost', '--timeout', '90', '--nodes', 'many');
    assert.equal(bare.code, 2);
    assert.match(
      bare.err,
      /^nodewarden cluster: warning: --timeout 90: a bare number of seconds is deprecated; write a duration: --timeout 90s$/m,
    );
    const duration = await cluster('up', '--name', 'ghost', '--timeout', '5m', '--nodes', 'many');
    assert.equal(duration.code, 2);
    assert.doesNotMatch(duration.err, /warning/);
    assert.match(duration.err, /--nodes must be a number of nodes/);
    const bad = await cluster('up', '--name', 'ghost', '--timeout', 'soon');
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--timeout "soon" is not a number of seconds or a duration like 90s/);
  });

  it('refuses an unknown -o, exit 2, listing the choices', async () => {
    const { code, err } = await cluster('list', '-o', 'xml');
    assert.equal(code, 2);
    assert.match(err, /--output must be table, wide, name, json or yaml, not "xml"/);
  });
});
