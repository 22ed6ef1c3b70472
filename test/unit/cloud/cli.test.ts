// `nodewarden cloud` through the real binary: the shared verb table's habits,
// and how it finds its cluster when no --name is given.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { nodewarden } from '../../harness/binary.ts';

describe('nodewarden cloud', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nodewarden-cloud-cli-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  // A kubeconfig whose current context is some other cluster, and no local clusters.
  const kubeconfig = join(dir, 'kubeconfig.yaml');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'elsewhere', cluster: { server: 'https://10.1.2.3:6443' } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [{ name: 'elsewhere', context: { cluster: 'elsewhere', user: 'u' } }],
      'current-context': 'elsewhere',
    }),
  );
  const env = { NODEWARDEN_STATE_DIR: join(dir, 'state'), KUBECONFIG: kubeconfig, NODEWARDEN_CLUSTER: '' };
  const cloud = (...args: string[]) => nodewarden(['cloud', ...args], env);

  it('suggests the closest verb for a typo, exit 2 with a pointer to --help', async () => {
    const { code, err } = await cloud('grups');
    assert.equal(code, 2);
    assert.match(err, /unknown verb "grups"; did you mean "groups"\?/);
    assert.match(err, /Run "nodewarden cloud --help" for usage/);
  });

  it('suggests the closest flag for a typo, exit 2', async () => {
    const { code, err } = await cloud('instances', '--gruop', 'worker');
    assert.equal(code, 2);
    assert.match(err, /unknown flag --gruop; did you mean --group\?/);
  });

  it("answers for the cluster of the kubeconfig's current context, not a default one", async () => {
    const { code, err } = await cloud('status');
    assert.equal(code, 1);
    assert.match(err, /current context \(https:\/\/10\.1\.2\.3:6443\) is no local cluster; give --name NAME/);
    assert.doesNotMatch(err, /"nodewarden"/);
  });

  it('refuses --set that is not JSON as a usage mistake, before reaching any cloud', async () => {
    const { code, err } = await cloud('faults', '--set', '{nope');
    assert.equal(code, 2);
    assert.match(err, /--set takes a JSON object/);
  });
});
