import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { stopLeftoverComponents } from '../../../src/cluster/infra/hypervisor/leftovers.ts';

describe('stopping what a dead hypervisor left running', () => {
  const addonDir = mkdtempSync(join(tmpdir(), 'nw-hv-leftovers-'));
  after(() => rmSync(addonDir, { recursive: true, force: true }));

  it('stops a component its pid file names, and never a process that merely has the pid', async () => {
    const cluster = join(addonDir, 'workloads', 'clusters', 'c1');
    mkdirSync(join(cluster, 'pids'), { recursive: true });
    // A stand-in component whose command line names its cluster's folder, as kwokctl's do.
    const child = spawn(
      process.execPath,
      ['-e', 'setTimeout(() => {}, 60000)', join(cluster, 'kubeconfig.yaml')],
      {
        stdio: 'ignore',
      },
    );
    const exited = new Promise((r) => child.once('exit', r));
    writeFileSync(join(cluster, 'pids', 'kube-apiserver.pid'), `${child.pid}\n`);
    // Our own pid under another component's name: not the cluster's, so left alone.
    writeFileSync(join(cluster, 'pids', 'etcd.pid'), `${process.pid}\n`);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await stopLeftoverComponents(addonDir), 1);
    await exited;
    assert.equal(await stopLeftoverComponents(addonDir), 0, 'nothing left the second time');
  });

  it('does nothing for an add-on folder without workload clusters', async () => {
    assert.equal(await stopLeftoverComponents(join(addonDir, 'none')), 0);
  });
});
