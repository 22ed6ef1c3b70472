import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import type { KVMCluster } from '../../../../src/api/kvm.ts';
import { encodeUserData, IGNITION_VERSION, renderIgnition } from '../../../../src/kvm/plan/ignition.ts';
import { type ClusterNode, clusterNodes } from '../../../../src/kvm/plan/spec.ts';
import { clusterPki, firstIndexes, kvmCluster, masterSpec, workerSpec } from '../fixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: reading into a generated config
type Any = any;

/** Debian's ignition package: the same validator the Flatcar images' Ignition uses. */
const IGNITION_VALIDATE = '/usr/bin/ignition-validate';
const dir = mkdtempSync(join(tmpdir(), 'kvm-ignition-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function validate(config: unknown): { ok: boolean; output: string } {
  const path = join(dir, `config-${files++}.ign`);
  writeFileSync(path, JSON.stringify(config));
  const r = spawnSync(IGNITION_VALIDATE, [path], { encoding: 'utf8' });
  if (r.error) throw r.error;
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim() };
}

/** The config as the VM reads it from its ConfigMap: base64 → gunzip → JSON. */
const decode = (userData: string): Any =>
  JSON.parse(gunzipSync(Buffer.from(userData, 'base64')).toString('utf8'));

function configs(kc: KVMCluster): Array<{ node: ClusterNode; index: number; config: Any }> {
  const indexes = firstIndexes(kc);
  return clusterNodes(kc.spec).map((node) => {
    const index = indexes[node.id] ?? 0;
    const rendered = renderIgnition({
      cluster: kc.metadata.name ?? '',
      spec: kc.spec,
      node,
      index,
      pki: clusterPki(kc),
    });
    return { node, index, config: decode(encodeUserData(rendered)) };
  });
}

const file = (config: Any, path: string): string => {
  const f = config.storage.files.find((x: Any) => x.path === path);
  assert.ok(f, `file ${path}`);
  const source: string = f.contents.source;
  assert.ok(source.startsWith('data:,'), source);
  return decodeURIComponent(source.slice('data:,'.length));
};
const unit = (config: Any, name: string): Any => config.systemd.units.find((u: Any) => u.name === name);

const specs: Array<{ name: string; cluster: KVMCluster }> = [
  { name: '1 master, 1 worker, nothing optional', cluster: kvmCluster() },
  {
    name: '3 masters, 2 workers with ssh users',
    cluster: kvmCluster({
      masters: 3,
      workers: 2,
      spec: {
        sshUsers: [
          { name: 'core', publicKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE8kL2 core@example' },
          { name: 'ops_1', publicKey: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ ops@example' },
        ],
      },
    }),
  },
  {
    name: 'workers with host volumes',
    cluster: kvmCluster({
      spec: {
        workers: [
          workerSpec('w1', {
            hostVolumes: [
              { mountTag: 'data', hostPath: '/srv/data' },
              { mountTag: 'logs-1', hostPath: '/srv/logs' },
            ],
          }),
          workerSpec('w2'),
        ],
      },
    }),
  },
  {
    name: 'pod and service CIDRs, a custom API port, a large VNI',
    cluster: kvmCluster({
      name: 'prod-eu',
      spec: {
        network: { vni: 16_777_215, podCIDR: '10.2.0.0/16', serviceCIDR: '172.31.0.0/16' },
        api: { domain: 'api.prod-eu.example.com', securePort: 6443 },
      },
    }),
  },
  {
    name: 'everything at once',
    cluster: kvmCluster({
      name: 'all',
      spec: {
        masters: [masterSpec('a'), masterSpec('b-2'), masterSpec('c')],
        workers: [workerSpec('d', { hostVolumes: [{ mountTag: 'x', hostPath: '/x' }] })],
        network: { vni: 4097, podCIDR: '192.168.0.0/17', serviceCIDR: '192.168.128.0/17' },
        sshUsers: [{ name: 'admin', publicKey: 'ssh-ed25519 AAAA admin' }],
        storage: { type: 'persistentVolume' },
      },
    }),
  },
];

describe('renderIgnition: every config passes the real ignition-validate', () => {
  for (const s of specs) {
    for (const { node, config } of configs(s.cluster)) {
      it(`${s.name}: ${node.role} ${node.id}`, () => {
        assert.equal(config.ignition.version, IGNITION_VERSION);
        const r = validate(config);
        assert.ok(r.ok, r.output);
        assert.equal(r.output, '', 'no warnings either');
      });
    }
  }

  const broken: Array<[string, (c: Any) => void]> = [
    ['a relative file path', (c) => (c.storage.files[0].path = 'etc/hostname')],
    ['an unknown spec version', (c) => (c.ignition.version = '9.9.9')],
    ['a file without a data URL', (c) => (c.storage.files[0].contents.source = 'not a url')],
  ];
  for (const [what, breakIt] of broken) {
    it(`refuses a config with ${what} (the check can fail)`, () => {
      const config = structuredClone(configs(kvmCluster())[0]?.config);
      breakIt(config);
      const r = validate(config);
      assert.equal(r.ok, false, r.output);
      assert.notEqual(r.output, '');
    });
  }
});

describe('renderIgnition: what the VM boots with', () => {
  const kc = kvmCluster({
    name: 'c1',
    masters: 1,
    workers: 1,
    spec: {
      network: { vni: 7, podCIDR: '10.2.0.0/16', serviceCIDR: '172.31.0.0/16' },
      sshUsers: [{ name: 'core', publicKey: 'ssh-ed25519 AAAA core' }],
      workers: [workerSpec('w1', { hostVolumes: [{ mountTag: 'data', hostPath: '/srv/data' }] })],
    },
  });
  const [master, worker] = configs(kc);
  assert.ok(master && worker);

  it("the hostname is the VM pod's name, handed over through fw_cfg at boot (no fixed /etc/hostname)", () => {
    for (const c of [master.config, worker.config]) {
      const cfg = c as {
        storage: { files: Array<{ path: string }> };
        systemd: { units: Array<{ name: string; contents: string }> };
      };
      assert.ok(!cfg.storage.files.some((f) => f.path === '/etc/hostname'));
      const unit = cfg.systemd.units.find((u) => u.name === 'hostname-from-pod.service');
      assert.ok(unit, 'the unit that sets the hostname');
      assert.match(unit.contents, /qemu_fw_cfg\/by_name\/opt\/io\.nodewarden\/hostname\/raw/);
      assert.match(unit.contents, /^Before=kubelet\.service$/m);
    }
  });

  it("writes no network config: the VM takes its pod's address by DHCP", () => {
    for (const c of [worker.config, master.config]) {
      const paths = (c as { storage: { files: Array<{ path: string }> } }).storage.files.map((f) => f.path);
      assert.deepEqual(
        paths.filter((p) => p.startsWith('/etc/systemd/network/')),
        [],
      );
    }
  });

  it('the node env names the cluster, node, release and CIDRs', () => {
    const env = file(master.config, '/etc/kubernetes/node.env');
    for (const line of [
      'CLUSTER_ID=c1',
      'NODE_ID=m1',
      'NODE_ROLE=master',
      'NODE_INDEX=1',
      'KUBERNETES_VERSION=v1.37.1',
      'RELEASE_VERSION=20.1.0',
      'POD_CIDR=10.2.0.0/16',
      'SERVICE_CIDR=172.31.0.0/16',
      'API_SECURE_PORT=443',
    ]) {
      assert.ok(env.split('\n').includes(line), line);
    }
    const f = master.config.storage.files.find((x: Any) => x.path === '/etc/kubernetes/node.env');
    assert.equal(f.mode, 0o600);
  });

  it('no CIDR lines when the spec has none', () => {
    const [m] = configs(kvmCluster());
    assert.ok(m);
    assert.doesNotMatch(file(m.config, '/etc/kubernetes/node.env'), /CIDR/);
  });

  it('the etcd share (9p, msize 512000, mappable) on masters only', () => {
    const etcd = unit(master.config, 'var-lib-etcd.mount');
    assert.ok(etcd);
    assert.match(etcd.contents, /^What=etcdshare$/m);
    assert.match(etcd.contents, /^Type=9p$/m);
    assert.match(etcd.contents, /^Options=.*\bmsize=512000\b/m);
    // bbolt maps its file shared while open for writing: 9p allows that only with a cache mode.
    assert.match(etcd.contents, /^Options=.*\bcache=mmap\b/m);
    assert.equal(unit(worker.config, 'var-lib-etcd.mount'), undefined);
  });

  it('host volumes on workers, each a 9p mount under /mnt', () => {
    const data = unit(worker.config, 'mnt-data.mount');
    assert.ok(data);
    assert.match(data.contents, /^What=data$/m);
    assert.match(data.contents, /^Where=\/mnt\/data$/m);
    assert.equal(
      master.config.systemd.units.filter((u: Any) => u.name.startsWith('mnt-')).length,
      0,
      'none on masters',
    );
  });

  it('the container-runtime and kubelet disks formatted and mounted on every node', () => {
    for (const { config } of [master, worker]) {
      assert.deepEqual(
        config.storage.filesystems.map((f: Any) => [f.device, f.format, f.label]),
        [
          ['/dev/disk/by-id/virtio-dockerfs', 'xfs', 'containerd'],
          ['/dev/disk/by-id/virtio-kubeletfs', 'xfs', 'kubelet'],
        ],
      );
      assert.ok(unit(config, 'var-lib-containerd.mount'));
      assert.ok(unit(config, 'var-lib-kubelet.mount'));
    }
  });

  it('ssh users with their keys', () => {
    assert.deepEqual(
      master.config.passwd.users.map((u: Any) => [u.name, u.sshAuthorizedKeys]),
      [['core', ['ssh-ed25519 AAAA core']]],
    );
    const [m] = configs(kvmCluster());
    assert.deepEqual(m?.config.passwd.users, []);
  });

  it('encodes the same config to the same user data', () => {
    const input = { cluster: 'c1', spec: kc.spec, node: master.node, index: 1, pki: clusterPki(kc) };
    assert.equal(encodeUserData(renderIgnition(input)), encodeUserData(renderIgnition(input)));
  });
});

describe('mount unit names follow systemd path escaping', () => {
  // Expected names as `systemd-escape --path --suffix=mount /mnt/<tag>` prints them. Tags needing
  // more escaping (spaces, non-ASCII) are refused by the CRD's pattern (kvm-crd.test.ts).
  const cases: Array<[string, string]> = [
    ['data', 'mnt-data.mount'],
    ['logs-1', 'mnt-logs\\x2d1.mount'],
    ['a.b_c', 'mnt-a.b_c.mount'],
  ];
  for (const [tag, want] of cases) {
    it(`mountTag ${JSON.stringify(tag)} → ${want}`, () => {
      const kc = kvmCluster({
        spec: { workers: [workerSpec('w1', { hostVolumes: [{ mountTag: tag, hostPath: '/x' }] })] },
      });
      const w = configs(kc).find((c) => c.node.id === 'w1');
      const names = w?.config.systemd.units.map((u: Any) => u.name) ?? [];
      assert.ok(names.includes(want), names.join(' '));
    });
  }
});
