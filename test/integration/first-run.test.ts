// What a new user meets before everything is in place, through bin/nodewarden
// as they run it: a cluster without the CRDs (a local cluster of this suite's
// own, "firstrun"), the run's cluster with the CRDs but no operator, a stopped
// cluster, and kubeconfigs that are missing or wrong.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NodeMaintenances } from '../../src/api/maintenance.ts';
import { NodeVersions } from '../../src/api/upgrade.ts';
import { parsePools } from '../../src/cluster/fleet.ts';
import type { LocalClusters } from '../../src/cluster/local-cluster.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { eventually, testKubeConfig, testKubeconfigPath } from '../harness/cluster.ts';
import { openLocalClusters } from '../harness/local-clusters.ts';
import { startOperator } from '../harness/operator.ts';

const BIN = join(import.meta.dirname, '../../bin/nodewarden');
const BARE = 'firstrun';

interface Run {
  code: number;
  out: string;
  err: string;
  ms: number;
}

/** `nodewarden args…` as a user runs it; `env` adds to (or, undefined, removes from) the test's environment. */
function nodewarden(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const started = Date.now();
  const merged: Record<string, string | undefined> = { ...process.env, NODEWARDEN_FROM_SOURCE: '1', ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  return new Promise((resolve) => {
    execFile(BIN, args, { env: merged as NodeJS.ProcessEnv, timeout: 60_000 }, (error, out, err) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out, err, ms: Date.now() - started }),
    );
  });
}

/** true once nothing listens on 127.0.0.1:port; undefined while something does. */
function refused(port: number): Promise<true | undefined> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.on('error', () => resolve(true));
  });
}

describe('the first run, as a new user meets it', () => {
  let clusters: LocalClusters;
  let bareKubeconfig = '';
  let bareServer = '';

  before(async () => {
    clusters = await openLocalClusters({ quiet: true });
    const info = await clusters.up({ name: BARE, pools: parsePools('worker=1') });
    bareKubeconfig = info.kubeconfig;
    bareServer = info.server!;
  });
  after(async () => {
    await clusters.delete(BARE).catch(() => {});
  });

  describe('a cluster without the CRDs', () => {
    it('maintenance start says the CRD is missing and how to install it, not "HTTP 404"', async () => {
      const r = await nodewarden([
        'maintenance',
        'start',
        'worker-000',
        '--reason',
        'r',
        '--kubeconfig',
        bareKubeconfig,
      ]);
      assert.equal(r.code, 1, r.err);
      assert.doesNotMatch(r.err, /404 page not found/);
      assert.match(
        r.err,
        /NodeMaintenance CRD \(nodemaintenances\.maintenance\.nodewarden\.dev\) is not installed/,
      );
      assert.match(r.err, /make install/);
      assert.match(r.err, /Helm chart/);
    });

    it('upgrade says it in the same words', async () => {
      const r = await nodewarden(['upgrade', 'status', '--kubeconfig', bareKubeconfig]);
      assert.equal(r.code, 1, r.err);
      assert.match(r.err, /CRDs are not installed in this cluster; install the CRDs with "make install"/);
    });

    it('maintenance list and stop say the same', async () => {
      for (const verb of [['list'], ['stop', 'any-node']]) {
        const r = await nodewarden(['maintenance', ...verb, '--kubeconfig', bareKubeconfig]);
        assert.equal(r.code, 1, r.err);
        assert.match(
          r.err,
          /NodeMaintenance CRD .* is not installed in this cluster; install the CRDs with "make install"/,
        );
      }
    });
  });

  describe('the operator without the CRDs', () => {
    it('says once which kinds are missing, and /readyz says why it is not ready', async () => {
      const op = startOperator(['--kubeconfig', bareKubeconfig]);
      try {
        const health = await eventually('the health server', async () => {
          const line = op.logs.find((l) => l.msg === 'serving health');
          const a = line?.address as { address: string; port: number } | undefined;
          return a ? `${a.address}:${a.port}` : undefined;
        });
        const missingLines = () => op.logs.filter((l) => Array.isArray(l.missing));
        await eventually('the missing kinds said', async () => (missingLines().length ? true : undefined));
        await new Promise((r) => setTimeout(r, 4000));
        assert.equal(missingLines().length, 1, JSON.stringify(missingLines()));
        assert.match(
          String(missingLines()[0]!.msg),
          /NodeMaintenance \(nodemaintenances\.maintenance\.nodewarden\.dev\)/,
        );
        assert.match(String(missingLines()[0]!.msg), /CustomResourceDefinitions are not installed/);
        const retries = op.logs.filter((l) => l.msg === 'informer error; retrying');
        assert.equal(retries.length, 0, JSON.stringify(retries.slice(0, 2)));
        const res = await fetch(`http://${health}/readyz`);
        assert.equal(res.status, 503);
        assert.match(
          await res.text(),
          /not served by the API server \(CRD not installed\): .*NodeMaintenance/,
        );
      } finally {
        await op.stop();
      }
    });
  });

  describe('the CRDs but no operator', () => {
    const name = 'firstrun-no-operator';
    const client = () => KubeClient.fromKubeConfig(testKubeConfig());
    const remove = async () => {
      const c = client();
      try {
        await c.delete(NodeMaintenances.type, name, undefined, { ignoreNotFound: true });
        await c.delete(NodeVersions.type, name, undefined, { ignoreNotFound: true });
      } finally {
        c.close();
      }
    };
    before(remove);
    after(remove);

    it('maintenance start --wait says no operator seems to be running and how to start one, and keeps waiting', async () => {
      const r = await nodewarden([
        ...['maintenance', 'start', 'worker-005', '--name', name, '--reason', 'first run'],
        ...['--wait', '--wait-timeout', '9s', '--kubeconfig', testKubeconfigPath()],
      ]);
      assert.equal(r.code, 2, r.err);
      assert.match(
        r.err,
        new RegExp(`no operator seems to be running: nodemaintenance/${name} has no status after 5s`),
      );
      assert.match(r.err, /make run.*nodewarden operator.*helm install/);
      assert.match(r.err, /stopped waiting after 9s/);
    });

    it('upgrade start --wait says the same, and keeps waiting', async () => {
      const r = await nodewarden([
        ...['upgrade', 'start', '--name', name, '--image', 'nwos-first-run'],
        ...['--wait', '--wait-timeout', '8s', '--kubeconfig', testKubeconfigPath()],
      ]);
      assert.equal(r.code, 2, r.err);
      assert.match(
        r.err,
        new RegExp(`no operator seems to be running: nodeversion/${name} has no status after 5s`),
      );
      assert.match(r.err, /make run.*nodewarden operator.*helm install/);
      assert.match(r.err, /not finished after 8s; it goes on without us/);
    });
  });

  describe('the local clusters, listed the kubectl way', () => {
    it('cluster list -o name prints each name alone on its line', async () => {
      const r = await nodewarden(['cluster', 'list', '-o', 'name']);
      assert.equal(r.code, 0, r.err);
      const names = r.out.trimEnd().split('\n');
      assert.ok(names.includes(BARE), r.out);
      assert.ok(
        names.every((n) => /^[a-z0-9-]+$/.test(n)),
        r.out,
      );
    });

    it('cluster list -o wide adds the version, nodes, kubeconfig and the add-ons’ endpoints', async () => {
      const r = await nodewarden(['cluster', 'list', '-o', 'wide']);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /^NAME +STATE +SERVER +VERSION +NODES +KUBECONFIG +ENDPOINTS$/m);
      assert.match(
        r.out,
        new RegExp(
          `^${BARE} +running +https://127\\.0\\.0\\.1:\\d+ +v\\S+ +\\d+/\\d+ +\\S+kubeconfig\\S* +\\S*cloud=http`,
          'm',
        ),
      );
    });
  });

  describe('connection problems say what to do', () => {
    it('with no kubeconfig at all, says none was found and how to point at one', async () => {
      const home = mkdtempSync(join(tmpdir(), 'nodewarden-home-'));
      const r = await nodewarden(['maintenance', 'list'], {
        HOME: home,
        KUBECONFIG: undefined,
        KUBERNETES_SERVICE_HOST: undefined,
      });
      assert.equal(r.code, 1, r.err);
      assert.doesNotMatch(r.err, /HTTP protocol is not allowed/);
      assert.match(
        r.err,
        /no kubeconfig: --kubeconfig is not given, KUBECONFIG is not set and .*\.kube\/config does not exist/,
      );
      assert.match(r.err, /--kubeconfig PATH or KUBECONFIG=PATH/);
      assert.match(r.err, /nodewarden cluster up/);
    });

    it('with a wrong kubeconfig path, names the path and where it came from, not the errno', async () => {
      const flag = await nodewarden(['maintenance', 'list', '--kubeconfig', '/nonexistent/kubeconfig.yaml']);
      assert.equal(flag.code, 1, flag.err);
      assert.doesNotMatch(flag.err, /ENOENT/);
      assert.match(flag.err, /the kubeconfig \/nonexistent\/kubeconfig\.yaml does not exist \(--kubeconfig /);
      const env = await nodewarden(['upgrade', 'status'], { KUBECONFIG: '/nonexistent/kubeconfig.yaml' });
      assert.equal(env.code, 1, env.err);
      assert.match(env.err, /does not exist \(KUBECONFIG=\/nonexistent\/kubeconfig\.yaml\)/);
    });

    it('with a stopped local cluster, says it is unreachable and how to start it, within seconds', async () => {
      await clusters.down(BARE);
      // What the user meets is a port nobody listens on, not an API server still shutting down.
      const port = Number(new URL(bareServer).port);
      await eventually('the API server port refuses connections', () => refused(port), 20_000);
      const r = await nodewarden(['maintenance', 'list', '--kubeconfig', bareKubeconfig]);
      assert.equal(r.code, 1, r.err);
      assert.match(r.err, /cannot reach the API server at https:\/\/127\.0\.0\.1:\d+ \(connection refused\)/);
      assert.match(
        r.err,
        new RegExp(
          `local cluster "${BARE}", which is not running; start it with: nodewarden cluster up --name ${BARE}`,
        ),
      );
      assert.ok(r.ms < 6000, `answered after ${r.ms} ms`);
    });
  });
});
