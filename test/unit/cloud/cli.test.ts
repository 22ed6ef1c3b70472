// `nodewarden cloud` through the real binary: the shared verb table's habits,
// how it finds its cluster when no --cluster is given, and kubectl's -o.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CloudServer } from '../../../src/cluster/infra/cloud/http-api.ts';
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
    assert.match(
      err,
      /current context \(https:\/\/10\.1\.2\.3:6443\) is no local cluster; give --cluster NAME/,
    );
    assert.doesNotMatch(err, /"nodewarden"/);
  });

  it('refuses --set that is not JSON as a usage mistake, before reaching any cloud', async () => {
    const { code, err } = await cloud('faults', '--set', '{nope');
    assert.equal(code, 2);
    assert.match(err, /--set takes a JSON object/);
  });

  it('takes the cluster as --cluster: --name names the object a command acts on', async () => {
    const { code, err } = await cloud('groups', '--cluster', 'ghost');
    assert.equal(code, 1);
    assert.match(err, /cluster "ghost" has no simulated cloud: nodewarden cluster up --name ghost/);
    assert.doesNotMatch(err, /warning/);
  });

  it('still reads --name as the cluster, with a warning naming --cluster', async () => {
    const { code, err } = await cloud('groups', '--name', 'ghost');
    assert.equal(code, 1);
    assert.match(err, /^nodewarden cloud: warning: --name is deprecated on groups: write --cluster NAME/m);
    assert.match(err, /cluster "ghost" has no simulated cloud/);
  });

  describe('-o, as kubectl get takes it', () => {
    let server: CloudServer;
    before(async () => {
      server = new CloudServer({ stateOptions: { bootDelayMs: 0 }, tickMs: 0 });
      await server.start();
      server.state.addGroup({
        id: 'workers',
        role: 'Worker',
        launchImage: 'nwos-1.0.0',
        kubernetesVersion: 'v1.37.1',
        memory: '64Gi',
      });
      server.state.addGroup({
        id: 'cp',
        role: 'ControlPlane',
        launchImage: 'nwos-1.0.0',
        kubernetesVersion: 'v1.37.1',
      });
      server.state.createInstance('workers', Date.now());
    });
    after(() => server.close());
    const at = () => ['--endpoint', server.url];

    it('-o name prints the groups and instances by name, one a line', async () => {
      const groups = await cloud('groups', '-o', 'name', ...at());
      assert.equal(groups.code, 0, groups.err);
      assert.deepEqual(groups.out.trimEnd().split('\n').sort(), ['cp', 'workers']);
      const instances = await cloud('instances', '-o', 'name', ...at());
      assert.equal(instances.code, 0, instances.err);
      const names = instances.out.trimEnd().split('\n');
      assert.equal(names.length, 1);
      assert.match(instances.out, /^\S+\n$/);
    });

    it('-o wide adds columns to the table, and table is still the default', async () => {
      const wide = await cloud('groups', '-o', 'wide', ...at());
      assert.equal(wide.code, 0, wide.err);
      assert.match(
        wide.out,
        /^GROUP\s+ROLE\s+SIZE\s+READY\s+IMAGE\s+KUBERNETES\s+TYPE\s+ZONES\s+CPU\s+MEMORY\s+PODS/,
      );
      assert.match(wide.out, /^workers\s+Worker\s+1\s+.*\s64Gi\s/m);
      const table = await cloud('groups', '-o', 'table', ...at());
      assert.equal(table.code, 0, table.err);
      assert.doesNotMatch(table.out, /MEMORY/);
      assert.equal((await cloud('groups', ...at())).out, table.out);
      const instances = await cloud('instances', '-o', 'wide', ...at());
      assert.match(instances.out, /^NODE\s+GROUP\s+STATE\s+IMAGE\s+KUBERNETES\s+ZONE\s+RACK\s+AGE/);
    });

    it('refuses wide and name where one document is printed, and any unknown -o, exit 2', async () => {
      const faults = await cloud('faults', '-o', 'name', ...at());
      assert.equal(faults.code, 2);
      assert.match(faults.err, /--output must be table, json or yaml, not "name"/);
      const xml = await cloud('groups', '-o', 'xml', ...at());
      assert.equal(xml.code, 2);
      assert.match(xml.err, /--output must be table, wide, name, json or yaml, not "xml"/);
    });
  });
});
