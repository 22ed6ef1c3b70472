// containerd's configuration for a real node: every path in the node's folder,
// the settings these machines need, in the version-4 schema. (containerd itself
// reads it back in test/integration/node-runtime.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ContainerdConfigInputs,
  renderContainerdConfig,
} from '../../../src/cluster/real-nodes/containerd-config.ts';

const inputs: ContainerdConfigInputs = {
  root: '/srv/n1/containerd/root',
  state: '/srv/n1/containerd/state',
  grpcAddress: '/srv/n1/containerd/containerd.sock',
  ttrpcAddress: '/srv/n1/containerd/containerd.sock.ttrpc',
  cniConfDir: '/srv/n1/cni/net.d',
  sandboxImage: 'registry.k8s.io/pause:3.10.2',
};

/**
 * The TOML as table → key → value. The renderer writes only JSON-compatible
 * values (basic strings, arrays of them, booleans, integers), so JSON.parse reads them.
 */
function tables(text: string): Map<string, Map<string, unknown>> {
  const out = new Map<string, Map<string, unknown>>([['', new Map()]]);
  let table = '';
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (!line) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header?.[1]) {
      table = header[1];
      assert.ok(!out.has(table), `table ${table} twice`);
      out.set(table, new Map());
      continue;
    }
    const kv = /^([A-Za-z_]+) = (.+)$/.exec(line);
    assert.ok(kv?.[1] && kv[2], `not a key = value line: ${line}`);
    const values = out.get(table) as Map<string, unknown>;
    assert.ok(!values.has(kv[1]), `${kv[1]} twice in [${table}]`);
    values.set(kv[1], JSON.parse(kv[2]));
  }
  return out;
}

const get = (t: Map<string, Map<string, unknown>>, table: string, key: string) => t.get(table)?.get(key);
const RUNTIME = "plugins.'io.containerd.cri.v1.runtime'";

describe("a real node's containerd configuration", () => {
  const t = tables(renderContainerdConfig(inputs));

  it('is version 4 and imports no drop-in files from the host', () => {
    assert.equal(get(t, '', 'version'), 4);
    assert.deepEqual(get(t, '', 'imports'), []);
  });

  it("keeps its state, sockets and CNI configuration in the node's folder", () => {
    assert.equal(get(t, '', 'root'), inputs.root);
    assert.equal(get(t, '', 'state'), inputs.state);
    assert.equal(get(t, "plugins.'io.containerd.server.v1.grpc'", 'address'), inputs.grpcAddress);
    assert.equal(get(t, "plugins.'io.containerd.server.v1.ttrpc'", 'address'), inputs.ttrpcAddress);
    assert.equal(get(t, `${RUNTIME}.cni`, 'conf_dir'), inputs.cniConfDir);
    assert.equal(get(t, "plugins.'io.containerd.internal.v1.opt'", 'path'), `${inputs.root}/opt`);
  });

  it('names no host path but the CNI plugins and runc it uses', () => {
    const values = [...t.values()].flatMap((m) => [...m.values()]).flat();
    const hostPaths = values.filter(
      (v) => typeof v === 'string' && v.startsWith('/') && !v.startsWith('/srv/n1/'),
    );
    assert.deepEqual(hostPaths.sort(), ['/usr/lib/cni', '/usr/sbin/runc']);
  });

  it('runs the sandbox from the pinned pause image, with Debian runc and cgroupfs, no OOM score below what it may set', () => {
    assert.equal(
      get(t, "plugins.'io.containerd.cri.v1.images'.pinned_images", 'sandbox'),
      inputs.sandboxImage,
    );
    assert.equal(get(t, RUNTIME, 'restrict_oom_score_adj'), true);
    assert.equal(get(t, `${RUNTIME}.containerd.runtimes.runc.options`, 'BinaryName'), '/usr/sbin/runc');
    assert.equal(get(t, `${RUNTIME}.containerd.runtimes.runc.options`, 'SystemdCgroup'), false);
    assert.deepEqual(get(t, `${RUNTIME}.cni`, 'bin_dirs'), ['/usr/lib/cni']);
  });

  it('serves no TCP streaming port and no NRI socket', () => {
    assert.equal(get(t, "plugins.'io.containerd.grpc.v1.cri'", 'disable_tcp_service'), true);
    assert.equal(get(t, "plugins.'io.containerd.nri.v1.nri'", 'disable'), true);
  });

  it('takes other CNI and runc paths, and quotes any path TOML needs escaped', () => {
    const odd = tables(
      renderContainerdConfig({
        ...inputs,
        root: '/srv/a "quoted" \\ node',
        runc: '/opt/runc',
        cniBinDirs: ['/a', '/b'],
      }),
    );
    assert.equal(get(odd, '', 'root'), '/srv/a "quoted" \\ node');
    assert.equal(get(odd, `${RUNTIME}.containerd.runtimes.runc.options`, 'BinaryName'), '/opt/runc');
    assert.deepEqual(get(odd, `${RUNTIME}.cni`, 'bin_dirs'), ['/a', '/b']);
  });
});
