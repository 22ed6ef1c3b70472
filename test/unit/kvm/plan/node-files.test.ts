// What makes a VM a Kubernetes node, read back from the Ignition config as the
// VM gets it (user_data: base64 → gunzip → JSON): every file and unit a master
// and a worker need, the control plane's static pods and what they point at,
// the kubelet joining through the master Service, and the config's size.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { parse } from 'yaml';
import { GUEST_IMAGES_UNIT, USER_DATA_KEY } from '../../../../src/api/vm-image.ts';
import { workloadImage } from '../../../../src/api/workload-images.ts';
import { desiredCluster } from '../../../../src/kvm/plan/desired.ts';
import { KUBELET_BIN } from '../../../../src/kvm/plan/node-files.ts';
import { clusterNodes } from '../../../../src/kvm/plan/spec.ts';
import { clusterPki, firstIndexes, kvmCluster } from '../fixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: reading into a generated config
type Any = any;

function rendered(kc = kvmCluster({ name: 'c1', masters: 1, workers: 1 })) {
  const d = desiredCluster(kc, firstIndexes(kc), clusterPki(kc));
  return d.nodes.map((n) => {
    const userData = (n.configMap as Any).data[USER_DATA_KEY] as string;
    const config = JSON.parse(gunzipSync(Buffer.from(userData, 'base64')).toString('utf8'));
    const files = new Map<string, { mode: number; text: string }>(
      config.storage.files.map((f: Any) => [
        f.path,
        { mode: f.mode, text: decodeURIComponent(f.contents.source.slice('data:,'.length)) },
      ]),
    );
    const units = new Map<string, Any>(config.systemd.units.map((u: Any) => [u.name, u]));
    return { node: n.node, userData, config, files, units };
  });
}

const [master, worker] = rendered();
if (!master || !worker) throw new Error('a master and a worker');

const MASTER_ONLY = [
  ['/etc/kubernetes/pki/ca.key', 0o600],
  ['/etc/kubernetes/pki/etcd/ca.crt', 0o644],
  ['/etc/kubernetes/pki/apiserver.crt', 0o644],
  ['/etc/kubernetes/pki/apiserver.key', 0o600],
  ['/etc/kubernetes/pki/apiserver-kubelet-client.crt', 0o644],
  ['/etc/kubernetes/pki/apiserver-kubelet-client.key', 0o600],
  ['/etc/kubernetes/pki/apiserver-etcd-client.crt', 0o644],
  ['/etc/kubernetes/pki/apiserver-etcd-client.key', 0o600],
  ['/etc/kubernetes/pki/etcd/server.crt', 0o644],
  ['/etc/kubernetes/pki/etcd/server.key', 0o600],
  ['/etc/kubernetes/pki/etcd/peer.crt', 0o644],
  ['/etc/kubernetes/pki/etcd/peer.key', 0o600],
  ['/etc/kubernetes/pki/sa.key', 0o600],
  ['/etc/kubernetes/pki/sa.pub', 0o644],
  ['/etc/kubernetes/pki/bootstrap-tokens.csv', 0o600],
  ['/etc/kubernetes/controller-manager.conf', 0o600],
  ['/etc/kubernetes/scheduler.conf', 0o600],
  ['/etc/kubernetes/admin.conf', 0o600],
  ['/etc/kubernetes/manifests/etcd.yaml', 0o644],
  ['/etc/kubernetes/manifests/kube-apiserver.yaml', 0o644],
  ['/etc/kubernetes/manifests/kube-controller-manager.yaml', 0o644],
  ['/etc/kubernetes/manifests/kube-scheduler.yaml', 0o644],
] as const;

const EVERY_NODE = [
  ['/etc/kubernetes/pki/ca.crt', 0o644],
  ['/etc/kubernetes/bootstrap-kubelet.conf', 0o600],
  ['/etc/kubernetes/kubelet.yaml', 0o644],
  ['/etc/containerd/config.toml', 0o644],
  ['/etc/cni/net.d/10-nodewarden.conflist', 0o644],
  ['/etc/modules-load.d/kubernetes.conf', 0o644],
  ['/etc/sysctl.d/80-kubernetes.conf', 0o644],
  ['/etc/kubernetes/node.env', 0o600],
] as const;

describe('node configs: every file a master and a worker need', () => {
  for (const [path, mode] of [...EVERY_NODE, ...MASTER_ONLY]) {
    const masterOnly = MASTER_ONLY.some(([p]) => p === path);
    it(`${path} (${mode.toString(8)}) on ${masterOnly ? 'masters only' : 'every node'}`, () => {
      assert.equal(master.files.get(path)?.mode, mode, `master ${path}`);
      assert.ok(master.files.get(path)?.text, `master ${path} has contents`);
      if (masterOnly) assert.equal(worker.files.has(path), false, `no ${path} on a worker`);
      else assert.equal(worker.files.get(path)?.mode, mode, `worker ${path}`);
    });
  }

  it('nothing else: the lists above are the whole config', () => {
    assert.deepEqual([...master.files.keys()].sort(), [...EVERY_NODE, ...MASTER_ONLY].map(([p]) => p).sort());
    assert.deepEqual([...worker.files.keys()].sort(), EVERY_NODE.map(([p]) => p).sort());
  });

  it('no private key of the control plane on a worker', () => {
    for (const [path, f] of worker.files) assert.doesNotMatch(f.text, /PRIVATE KEY/, path);
  });
});

describe('node configs: every unit a master and a worker need', () => {
  const table: Array<[string, 'both' | 'master']> = [
    ['hostname-from-pod.service', 'both'],
    ['var-lib-containerd.mount', 'both'],
    ['var-lib-kubelet.mount', 'both'],
    ['var-lib-etcd.mount', 'master'],
    ['containerd.service', 'both'],
    ['kubelet.service', 'both'],
  ];
  for (const [name, where] of table) {
    it(`${name} on ${where === 'both' ? 'every node' : 'masters only'}, enabled`, () => {
      assert.equal(master.units.get(name)?.enabled, true);
      assert.equal(worker.units.get(name)?.enabled === true, where === 'both');
    });
  }

  it('containerd waits for its disk; the kubelet for containerd, its disks and its hostname', () => {
    assert.match(
      master.units.get('containerd.service').dropins[0].contents,
      /Requires=var-lib-containerd\.mount/,
    );
    const kubelet = (n: typeof master) => n.units.get('kubelet.service').contents as string;
    assert.match(
      kubelet(worker),
      /After=containerd\.service nodewarden-images\.service hostname-from-pod\.service var-lib-kubelet\.mount\n/,
    );
    assert.match(kubelet(master), /Requires=var-lib-kubelet\.mount var-lib-etcd\.mount/);
    assert.match(
      kubelet(worker),
      new RegExp(`ExecStart=${KUBELET_BIN} --config=/etc/kubernetes/kubelet.yaml`),
    );
    assert.match(
      kubelet(worker),
      /--node-labels=kvm\.nodewarden\.dev\/cluster=c1,kvm\.nodewarden\.dev\/role=worker,kvm\.nodewarden\.dev\/node-id=w1,/,
    );
    assert.match(kubelet(master), /--bootstrap-kubeconfig=\/etc\/kubernetes\/bootstrap-kubelet\.conf/);
  });

  it("the kubelet wants the OS image's images unit and starts after it: no registry to pull from", () => {
    for (const n of [master, worker]) {
      const text = n.units.get('kubelet.service').contents as string;
      const line = (key: string) => text.split('\n').find((l) => l.startsWith(`${key}=`)) ?? '';
      assert.ok(line('Wants').split(/[= ]/).includes(GUEST_IMAGES_UNIT), line('Wants'));
      assert.ok(line('After').split(/[= ]/).includes(GUEST_IMAGES_UNIT), line('After'));
      // Wants, not Requires: a node of an OS image without that unit (Flatcar) still starts its kubelet.
      assert.equal(line('Requires').includes(GUEST_IMAGES_UNIT), false);
    }
  });

  it('the kubelet runs from /opt/bin, where the OS image installs it (writable on Flatcar too)', () => {
    assert.equal(KUBELET_BIN, '/opt/bin/kubelet');
  });
});

describe('node configs: the kubelet joins with the bootstrap token', () => {
  const bootstrap = (n: typeof master) =>
    parse(n.files.get('/etc/kubernetes/bootstrap-kubelet.conf')?.text ?? '');
  const pki = clusterPki(kvmCluster({ name: 'c1', masters: 1, workers: 1 }));

  it('a worker through the master Service, a master through its own API server', () => {
    assert.equal(bootstrap(worker).clusters[0].cluster.server, 'https://master.c1.svc.cluster.local:443');
    assert.equal(bootstrap(master).clusters[0].cluster.server, 'https://127.0.0.1:443');
  });

  it("with the cluster's CA and token", () => {
    for (const n of [master, worker]) {
      const k = bootstrap(n);
      assert.equal(
        Buffer.from(k.clusters[0].cluster['certificate-authority-data'], 'base64').toString(),
        pki.ca.certPem,
      );
      assert.equal(k.users[0].user.token, pki.bootstrapToken);
    }
  });

  it("the API server knows the token as a bootstrapper's", () => {
    const id = pki.bootstrapToken.split('.')[0];
    assert.equal(
      master.files.get('/etc/kubernetes/pki/bootstrap-tokens.csv')?.text,
      `${pki.bootstrapToken},system:bootstrap:${id},system:bootstrap:${id},"system:bootstrappers"\n`,
    );
  });

  it('the kubelet config: client CA, systemd cgroups, cluster DNS, rotation; static pods and a taint on masters', () => {
    const cfg = (n: typeof master) => parse(n.files.get('/etc/kubernetes/kubelet.yaml')?.text ?? '');
    for (const n of [master, worker]) {
      const c = cfg(n);
      assert.equal(c.kind, 'KubeletConfiguration');
      assert.equal(c.authentication.x509.clientCAFile, '/etc/kubernetes/pki/ca.crt');
      assert.equal(c.authentication.anonymous.enabled, false);
      assert.equal(c.authorization.mode, 'Webhook');
      assert.equal(c.cgroupDriver, 'systemd');
      assert.deepEqual(c.clusterDNS, ['10.96.0.10']);
      assert.equal(c.rotateCertificates, true);
    }
    assert.equal(cfg(master).staticPodPath, '/etc/kubernetes/manifests');
    assert.deepEqual(cfg(master).registerWithTaints, [
      { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
    ]);
    assert.equal(cfg(worker).staticPodPath, undefined);
    assert.equal(cfg(worker).registerWithTaints, undefined);
  });

  it("containerd's sandbox image is the release's pause, and cgroups go through systemd", () => {
    const toml = worker.files.get('/etc/containerd/config.toml')?.text ?? '';
    assert.match(toml, /sandbox_image = "localhost\/nodewarden-pause:v1\.37\.1"/);
    assert.match(toml, /SystemdCgroup = true/);
  });
});

describe("node configs: the pod network (Debian's CNI plugins, a bridge per VM)", () => {
  const conflist = (n: typeof master) =>
    JSON.parse(n.files.get('/etc/cni/net.d/10-nodewarden.conflist')?.text ?? '{}');
  const subnet = (n: typeof master) => conflist(n).plugins[0].ipam.ranges[0][0].subnet as string;

  it('a bridge with host-local addresses, the gateway for its pods, masqueraded out through the VM', () => {
    for (const n of [master, worker]) {
      const c = conflist(n);
      assert.equal(c.cniVersion, '1.0.0');
      assert.deepEqual(
        c.plugins.map((p: Any) => p.type),
        ['bridge'],
      );
      const [bridge] = c.plugins;
      assert.equal(bridge.bridge, 'cni0');
      assert.equal(bridge.isGateway, true);
      assert.equal(bridge.ipMasq, true);
      assert.equal(bridge.ipam.type, 'host-local');
      assert.deepEqual(bridge.ipam.routes, [{ dst: '0.0.0.0/0' }]);
    }
  });

  // Each node's /25 is the one its index (masters first, from 1) numbers in the spec's pod range.
  const table: Array<[string, string | undefined, { masters: number; workers: number }, string[]]> = [
    ['the default range', undefined, { masters: 1, workers: 1 }, ['10.200.0.128/25', '10.200.1.0/25']],
    [
      '10.2.0.0/16',
      '10.2.0.0/16',
      { masters: 1, workers: 2 },
      ['10.2.0.128/25', '10.2.1.0/25', '10.2.1.128/25'],
    ],
    [
      '192.168.0.0/16, 3 masters',
      '192.168.0.0/16',
      { masters: 3, workers: 1 },
      ['192.168.0.128/25', '192.168.1.0/25', '192.168.1.128/25', '192.168.2.0/25'],
    ],
  ];
  for (const [name, podCIDR, size, want] of table) {
    it(`${name}: ${want.join(', ')}`, () => {
      const kc = kvmCluster({
        name: 'c1',
        ...size,
        ...(podCIDR ? { spec: { network: { vni: 3, podCIDR } } } : {}),
      });
      const nodes = rendered(kc);
      assert.deepEqual(
        nodes.map((n) => n.node.id),
        clusterNodes(kc.spec).map((n) => n.id),
      );
      assert.deepEqual(nodes.map(subnet), want);
    });
  }

  it("the default is outside the management cluster's pod range (10.244.0.0/16) and the service range", () => {
    for (const n of [master, worker]) {
      assert.match(subnet(n), /^10\.200\./);
      assert.doesNotMatch(subnet(n), /^10\.244\./);
    }
  });

  it("containerd finds the plugins where Debian's package puts them, the config where we write it", () => {
    const toml = worker.files.get('/etc/containerd/config.toml')?.text ?? '';
    const cni = toml.split('[plugins."io.containerd.grpc.v1.cri".cni]\n')[1]?.split('\n[')[0] ?? '';
    assert.match(cni, /^ {2}bin_dir = "\/usr\/lib\/cni"$/m);
    assert.match(cni, /^ {2}conf_dir = "\/etc\/cni\/net\.d"$/m);
  });
});

describe('node configs: the control plane as static pods', () => {
  const pod = (file: string) => parse(master.files.get(`/etc/kubernetes/manifests/${file}`)?.text ?? '');
  const table: Array<[string, Parameters<typeof workloadImage>[0]]> = [
    ['etcd.yaml', 'etcd'],
    ['kube-apiserver.yaml', 'kube-apiserver'],
    ['kube-controller-manager.yaml', 'kube-controller-manager'],
    ['kube-scheduler.yaml', 'kube-scheduler'],
  ];
  for (const [file, component] of table) {
    it(`${file}: ${workloadImage(component, 'v1.37.1')}, host network, critical, every file it names is in the config`, () => {
      const p = pod(file);
      const c = p.spec.containers[0];
      assert.equal(c.image, workloadImage(component, 'v1.37.1'));
      assert.deepEqual(c.command, [`/${component}`]);
      assert.equal(p.spec.hostNetwork, true);
      assert.equal(p.spec.priorityClassName, 'system-node-critical');
      for (const arg of c.args as string[]) {
        const path = /=(\/etc\/kubernetes\/[^,]+)$/.exec(arg)?.[1];
        if (path) assert.ok(master.files.has(path), `${file} ${arg}: ${path} is written`);
      }
      // Each file it names is inside a host path it mounts.
      const mounted = (p.spec.volumes as Any[]).map((v) => v.hostPath.path as string);
      for (const arg of c.args as string[]) {
        const path = /=(\/etc\/kubernetes\/[^,]+)$/.exec(arg)?.[1];
        if (path)
          assert.ok(
            mounted.some((m) => path === m || path.startsWith(`${m}/`)),
            `${file} mounts ${path}`,
          );
      }
    });
  }

  it("the images follow the release's Kubernetes version", () => {
    const kc = kvmCluster({
      name: 'c1',
      spec: { release: { version: '21.0.0', kubernetesVersion: '1.38.0', osVersion: '1' } },
    });
    const [m] = rendered(kc);
    const api = parse(m?.files.get('/etc/kubernetes/manifests/kube-apiserver.yaml')?.text ?? '');
    assert.equal(api.spec.containers[0].image, 'localhost/nodewarden-kube-apiserver:v1.38.0');
  });

  it('the API server: its port, RBAC with the node authorizer, the token file, etcd over TLS', () => {
    const args = pod('kube-apiserver.yaml').spec.containers[0].args as string[];
    for (const want of [
      '--secure-port=443',
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      '--etcd-servers=https://127.0.0.1:2379',
      '--service-cluster-ip-range=10.96.0.0/12',
      '--token-auth-file=/etc/kubernetes/pki/bootstrap-tokens.csv',
    ])
      assert.ok(args.includes(want), want);
  });

  // Upstream's 10 s renew deadline lost the lease again and again on a master under TCG.
  it('the controller-manager and the scheduler renew their leases within 45 s of a 60 s lease', () => {
    for (const file of ['kube-controller-manager.yaml', 'kube-scheduler.yaml']) {
      const args = pod(file).spec.containers[0].args as string[];
      for (const want of [
        '--leader-elect=true',
        '--leader-elect-lease-duration=60s',
        '--leader-elect-renew-deadline=45s',
        '--leader-elect-retry-period=5s',
      ])
        assert.ok(args.includes(want), `${file}: ${want}`);
    }
  });

  it('the controller-manager signs kubelet CSRs with the cluster CA; pod CIDRs only when given', () => {
    const args = pod('kube-controller-manager.yaml').spec.containers[0].args as string[];
    assert.ok(args.includes('--cluster-signing-key-file=/etc/kubernetes/pki/ca.key'));
    assert.equal(
      args.some((a) => a.startsWith('--cluster-cidr')),
      false,
    );
    const kc = kvmCluster({ name: 'c1', spec: { network: { vni: 3, podCIDR: '10.2.0.0/16' } } });
    const [m] = rendered(kc);
    const cm = parse(m?.files.get('/etc/kubernetes/manifests/kube-controller-manager.yaml')?.text ?? '');
    assert.ok(cm.spec.containers[0].args.includes('--cluster-cidr=10.2.0.0/16'));
  });

  it("etcd: this master's member, client and peer TLS with its own CA, data on the share", () => {
    const args = pod('etcd.yaml').spec.containers[0].args as string[];
    assert.ok(args.includes('--name=m1'));
    assert.ok(args.includes('--initial-cluster=m1=https://$(POD_IP):2380'));
    assert.ok(args.includes('--client-cert-auth=true'));
    assert.ok(args.includes('--peer-client-cert-auth=true'));
    assert.ok(args.includes('--data-dir=/var/lib/etcd'));
    const server = new X509Certificate(master.files.get('/etc/kubernetes/pki/etcd/server.crt')?.text ?? '');
    const etcdCa = new X509Certificate(master.files.get('/etc/kubernetes/pki/etcd/ca.crt')?.text ?? '');
    const ca = new X509Certificate(master.files.get('/etc/kubernetes/pki/ca.crt')?.text ?? '');
    assert.ok(server.checkIssued(etcdCa));
    assert.equal(server.checkIssued(ca), false);
  });

  it('kubeconfigs: the controller-manager, scheduler and admin on the local API server, as themselves', () => {
    const table: Array<[string, string]> = [
      ['/etc/kubernetes/controller-manager.conf', 'CN=system:kube-controller-manager'],
      ['/etc/kubernetes/scheduler.conf', 'CN=system:kube-scheduler'],
      ['/etc/kubernetes/admin.conf', 'O=system:masters\nCN=nodewarden-admin'],
    ];
    for (const [path, subject] of table) {
      const k: Any = parse(master.files.get(path)?.text ?? '');
      assert.equal(k.clusters[0].cluster.server, 'https://127.0.0.1:443');
      const cert = Buffer.from(k.users[0].user['client-certificate-data'], 'base64').toString();
      assert.equal(new X509Certificate(cert).subject, subject, path);
    }
  });

  it('each master carries only its own etcd certificates', () => {
    const kc = kvmCluster({ name: 'c1', masters: 3, workers: 0 });
    const pki = clusterPki(kc);
    for (const m of rendered(kc)) {
      const crt = m.files.get('/etc/kubernetes/pki/etcd/server.crt')?.text;
      assert.equal(crt, pki.certs[`etcd-server-${m.node.id}`]?.certPem, m.node.id);
    }
  });
});

describe('node configs: size (a ConfigMap holds 1 MiB; QEMU takes fw_cfg files far larger)', () => {
  it('a master of a 3-master cluster and a worker stay far under the ConfigMap limit', (t) => {
    const all = rendered(kvmCluster({ name: 'c1', masters: 3, workers: 1 }));
    for (const n of all) {
      const json = JSON.stringify(n.config).length;
      t.diagnostic(
        `${n.node.role} ${n.node.id}: Ignition ${json} bytes, user_data ${n.userData.length} bytes`,
      );
      assert.ok(n.userData.length < 64 * 1024, `${n.node.id}: ${n.userData.length}`);
      assert.ok(json < 256 * 1024, `${n.node.id}: ${json}`);
    }
  });
});
