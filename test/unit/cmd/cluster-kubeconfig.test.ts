// `nodewarden cluster kubeconfig` prints a path without the control-plane toolchain:
// what it prints, and that every other case still gets the cluster command's answer.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { nodewarden } from '../../harness/binary.ts';

describe('nodewarden cluster kubeconfig', () => {
  let state: string;
  before(() => {
    state = mkdtempSync(join(tmpdir(), 'nw-kubeconfig-'));
    for (const name of ['dev', 'nodewarden']) {
      mkdirSync(join(state, 'clusters', name), { recursive: true });
      writeFileSync(join(state, 'clusters', name, 'kwok.yaml'), 'kind: KwokctlConfiguration\n');
    }
  });
  after(() => rmSync(state, { recursive: true, force: true }));

  it('prints the admin kubeconfig of the cluster named by --name, in either spelling', async () => {
    for (const args of [['--name', 'dev'], ['--name=dev']]) {
      const r = await nodewarden(['cluster', 'kubeconfig', ...args], { NODEWARDEN_STATE_DIR: state });
      assert.equal(r.code, 0, r.err);
      assert.equal(r.out, `${join(state, 'clusters', 'dev', 'kubeconfig.yaml')}\n`);
    }
  });

  it('takes the cluster from NODEWARDEN_CLUSTER, then the default name', async () => {
    const named = await nodewarden(['cluster', 'kubeconfig'], {
      NODEWARDEN_STATE_DIR: state,
      NODEWARDEN_CLUSTER: 'dev',
    });
    assert.equal(named.out, `${join(state, 'clusters', 'dev', 'kubeconfig.yaml')}\n`);
    const fallback = await nodewarden(['cluster', 'kubeconfig'], { NODEWARDEN_STATE_DIR: state });
    assert.equal(fallback.out, `${join(state, 'clusters', 'nodewarden', 'kubeconfig.yaml')}\n`);
  });

  it('says a cluster does not exist, exit 1, as the cluster command does', async () => {
    const r = await nodewarden(['cluster', 'kubeconfig', '--name', 'nope'], { NODEWARDEN_STATE_DIR: state });
    assert.equal(r.code, 1);
    assert.match(r.err, /no cluster named "nope"/);
    assert.equal(r.out, '');
  });
});
