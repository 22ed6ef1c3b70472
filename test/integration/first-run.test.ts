// What a new user meets before everything is in place, through bin/nodewarden
// as they run it: a cluster without the CRDs (a local cluster of this suite's
// own, "firstrun"), the run's cluster with the CRDs but no operator, a stopped
// cluster, and kubeconfigs that are missing or wrong.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parsePools } from '../../src/cluster/fleet.ts';
import type { LocalClusters } from '../../src/cluster/local-cluster.ts';
import { openLocalClusters } from '../harness/local-clusters.ts';

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

describe('the first run, as a new user meets it', () => {
  let clusters: LocalClusters;
  let bareKubeconfig = '';

  before(async () => {
    clusters = await openLocalClusters({ quiet: true });
    bareKubeconfig = (await clusters.up({ name: BARE, pools: parsePools('worker=1') })).kubeconfig;
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
});
