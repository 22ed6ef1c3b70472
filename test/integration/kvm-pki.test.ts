// A workload cluster's PKI and master config against the real thing: the
// operator's PKI is kept in the run's (management) cluster for a real
// KVMCluster; a master's Ignition is rendered from it and its files laid out
// in a folder; the real etcd, kube-apiserver and kube-controller-manager run
// with the args of the master's static pods (paths moved into that folder,
// ports onto free loopback ones — nothing else changed). Then: the operator's
// kubeconfig step probes the API server under the master Service's name with
// the cluster's CA and writes <id>-kubeconfig; through it the workload
// cluster answers as admin; a kubelet's TLS bootstrap (the bootstrap token
// from the config, a CSR for a node named as a VM pod) is approved and signed
// by the cluster's CA; and deleting the KVMCluster takes every Secret with it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { parse, stringify } from 'yaml';
import { type KVMCluster, KVMClusters } from '../../src/api/kvm.ts';
import { KUBECONFIG_KEY, USER_DATA_KEY } from '../../src/api/vm-image.ts';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { PkiKeeper } from '../../src/kvm/act/pki.ts';
import { KubeconfigWriter } from '../../src/kvm/act/workload-kubeconfig.ts';
import { desiredCluster } from '../../src/kvm/plan/desired.ts';
import type { ClusterPki } from '../../src/kvm/plan/pki.ts';
import type { KVMClusterObject } from '../../src/kvm/plan/views.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { KubeConfig } from '../../src/runtime/kubeconfig.ts';
import { builtInKind, type K8sObject, Namespaces, Secrets } from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';

const mc = KubeClient.fromKubeConfig(testKubeConfig());
const ID = `pki${Date.now().toString(36)}`;
const CSRs = builtInKind(
  'certificates.k8s.io',
  'v1',
  'CertificateSigningRequest',
  'certificatesigningrequests',
  false,
);
const ClusterRoleBindings = builtInKind(
  'rbac.authorization.k8s.io',
  'v1',
  'ClusterRoleBinding',
  'clusterrolebindings',
  false,
);

// biome-ignore lint/suspicious/noExplicitAny: reading into a generated config
type Any = any;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The master's files as the VM would write them, under `root`. */
function layOut(userData: string, root: string): Map<string, string> {
  const config = JSON.parse(gunzipSync(Buffer.from(userData, 'base64')).toString('utf8'));
  const files = new Map<string, string>();
  for (const f of config.storage.files as Any[]) {
    const text = decodeURIComponent(f.contents.source.slice('data:,'.length));
    files.set(f.path, text);
    mkdirSync(dirname(join(root, f.path)), { recursive: true });
    writeFileSync(join(root, f.path), text, { mode: f.mode });
  }
  return files;
}

describe('KVM PKI and master config: real etcd, kube-apiserver and kube-controller-manager', () => {
  const ns = useNamespace('kvm-pki');
  const root = mkdtempSync(join(tmpdir(), 'kvm-master-'));
  let apiPort = 0;
  let kc: KVMClusterObject;
  let pki: ClusterPki;
  let files: Map<string, string>;

  /** A static pod's args, moved into the folder and onto this run's ports. */
  let ports: Record<string, number> = {};
  const moved = (args: string[]) =>
    args.map((a) =>
      a
        .replaceAll('$(POD_IP)', '127.0.0.1')
        .replaceAll('0.0.0.0', '127.0.0.1')
        .replaceAll(':2379', `:${ports.etcd}`)
        .replaceAll(':2380', `:${ports.peer}`)
        .replaceAll(':2381', `:${ports.metrics}`)
        .replaceAll('=/etc/kubernetes', `=${root}/etc/kubernetes`)
        .replaceAll('=/var/lib/etcd', `=${root}/var/lib/etcd`),
    );
  const podArgs = (file: string): string[] =>
    parse(files.get(`/etc/kubernetes/manifests/${file}`) ?? '').spec.containers[0].args;
  /**
   * Runs a component as the kubelet runs a static pod: started again when it
   * exits (restartPolicy Always), as the controller-manager does when it starts
   * before the API server has made its default RBAC — kubeadm's masters live
   * with the same race.
   */
  const running = new Map<string, ChildProcess>();
  let stopping = false;
  const restarts: Record<string, number> = {};
  const run = (bin: string, args: string[], name: string) => {
    const log = createWriteStream(join(root, `${name}.log`), { flags: 'a' });
    const p = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout?.pipe(log);
    p.stderr?.pipe(log);
    running.set(name, p);
    p.once('exit', () => {
      if (stopping) return;
      restarts[name] = (restarts[name] ?? 0) + 1;
      setTimeout(() => !stopping && run(bin, args, name), 1000);
    });
  };
  /** Stops one (SIGTERM, then SIGKILL after 10 s). */
  const stop = async (name: string) => {
    const p = running.get(name);
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    const timer = setTimeout(() => p.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
  };

  before(async () => {
    const bins = await controlPlaneBinaries({ quiet: true });
    apiPort = await freePort();
    ports = {
      etcd: await freePort(),
      peer: await freePort(),
      metrics: await freePort(),
      kcm: await freePort(),
    };
    const created = await mc.create<KVMCluster & K8sObject>(KVMClusters.type, {
      apiVersion: 'kvm.nodewarden.dev/v1alpha1',
      kind: 'KVMCluster',
      metadata: { name: ID, namespace: ns() },
      spec: {
        masters: [{ id: 'm1', cpus: 1, memory: '1G' }],
        workers: [{ id: 'w1', cpus: 1, memory: '1G' }],
        release: { version: '1.0.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' },
        network: { vni: 4321 },
        api: { domain: `api.${ID}.example.com`, securePort: apiPort },
      },
    } as KVMCluster & K8sObject);
    kc = created as KVMClusterObject;
    pki = (await new PkiKeeper(mc).ensure(kc, Date.now())).pki;
    const master = desiredCluster(kc, { m1: 1, w1: 2 }, pki).nodes.find((n) => n.node.role === 'master');
    if (!master) throw new Error('no master rendered');
    files = layOut((master.configMap as Any).data[USER_DATA_KEY], root);

    run(bins.etcd, moved(podArgs('etcd.yaml')), 'etcd');
    // Loopback only (the rule for servers tests start), and so no `kubernetes` Service endpoint: the API
    // server refuses a loopback one. In the VM the pod's address is advertised and both stay as rendered.
    run(
      bins['kube-apiserver'],
      [
        ...moved(podArgs('kube-apiserver.yaml')),
        '--bind-address=127.0.0.1',
        '--endpoint-reconciler-type=none',
      ],
      'apiserver',
    );
    run(
      bins['kube-controller-manager'],
      [...moved(podArgs('kube-controller-manager.yaml')), `--secure-port=${ports.kcm}`],
      'controller-manager',
    );
  });

  after(async () => {
    stopping = true;
    // Clients first, etcd last: an API server whose etcd is gone takes long to stop.
    for (const name of ['controller-manager', 'apiserver', 'etcd']) await stop(name);
    process.stderr.write(`[kvm-pki] restarts: ${JSON.stringify(restarts)}\n`);
    rmSync(root, { recursive: true, force: true });
    mc.close();
  });

  const log = (name: string) => {
    try {
      return readFileSync(join(root, `${name}.log`), 'utf8')
        .split('\n')
        .slice(-15)
        .join('\n');
    } catch {
      return '';
    }
  };
  /** On failure: the error with the last lines of each component's log. */
  const withLogs =
    (...names: string[]) =>
    (err: unknown): never => {
      throw new Error(`${String(err)}\n${names.map((n) => `--- ${n}:\n${log(n)}`).join('\n')}`);
    };

  it('the PKI is two Secrets next to the KVMCluster, owned by it', async () => {
    for (const name of [`${ID}-ca`, `${ID}-certificates`]) {
      const s = await mc.get<K8sObject>(Secrets, name, ns());
      assert.deepEqual(
        s.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
        [['KVMCluster', ID, kc.metadata.uid]],
      );
    }
  });

  it('the operator writes <id>-kubeconfig once the API server answers under the master Service name', async () => {
    const writer = new KubeconfigWriter(mc, () => ({
      url: `https://127.0.0.1:${apiPort}`,
      serverName: `master.${ID}.svc`,
    }));
    const began = Date.now();
    await eventually(
      'the API server to answer',
      async () => ((await writer.ensure(kc, pki)) === 'written' ? true : undefined),
      90_000,
      500,
    ).catch(withLogs('apiserver', 'etcd'));
    process.stderr.write(
      `[kvm-pki] API server answered and kubeconfig written after ${Date.now() - began} ms\n`,
    );
    assert.equal(await writer.ensure(kc, pki), 'upToDate');
  });

  let wc: KubeClient;
  it('through that kubeconfig the workload cluster answers as admin, the bootstrap bindings in place', async () => {
    const s = await mc.get<{ data?: Record<string, string> }>(Secrets, `${ID}-kubeconfig`, ns());
    const config = new KubeConfig();
    config.loadFromString(Buffer.from(s.data?.[KUBECONFIG_KEY] ?? '', 'base64').toString());
    wc = KubeClient.fromKubeConfig(config);
    const names = (await wc.list(Namespaces)).items.map((n) => n.metadata?.name);
    assert.ok(names.includes('kube-system'), String(names));
    const crbs = (await wc.list(ClusterRoleBindings)).items.map((b) => b.metadata?.name);
    for (const want of ['nodewarden:kubelet-bootstrap', 'nodewarden:node-autoapprove-bootstrap'])
      assert.ok(crbs.includes(want), want);
  });

  it("a kubelet's TLS bootstrap: its CSR, sent with the config's bootstrap token, is approved and signed by the cluster CA", async () => {
    const node = `master-m1-7d9f6c-x2k4p`; // named as a VM pod: unknown when the config was rendered
    const key = join(root, 'kubelet.key');
    const csr = join(root, 'kubelet.csr');
    const gen = spawnSync('openssl', [
      'genpkey',
      '-algorithm',
      'EC',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-out',
      key,
    ]);
    assert.equal(gen.status, 0, String(gen.stderr));
    const req = spawnSync('openssl', [
      'req',
      '-new',
      '-key',
      key,
      '-subj',
      `/O=system:nodes/CN=system:node:${node}`,
      '-out',
      csr,
    ]);
    assert.equal(req.status, 0, String(req.stderr));
    // The bootstrap kubeconfig a worker gets, pointed at this API server under the master Service's name.
    const boot = parse(files.get('/etc/kubernetes/bootstrap-kubelet.conf') ?? '');
    boot.clusters[0].cluster.server = `https://127.0.0.1:${apiPort}`;
    boot.clusters[0].cluster['tls-server-name'] = `master.${ID}.svc.cluster.local`;
    const bc = new KubeConfig();
    bc.loadFromString(stringify(boot));
    const bootstrapper = KubeClient.fromKubeConfig(bc);
    const name = `node-csr-${Date.now().toString(36)}`;
    try {
      await bootstrapper.create(CSRs, {
        apiVersion: 'certificates.k8s.io/v1',
        kind: 'CertificateSigningRequest',
        metadata: { name },
        spec: {
          request: readFileSync(csr).toString('base64'),
          signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
          usages: ['digital signature', 'client auth'],
        },
      } as K8sObject);
    } finally {
      bootstrapper.close();
    }
    const issued = await eventually(
      'the CSR signed',
      async () => {
        const got = await wc.get<
          K8sObject & { status?: { certificate?: string; conditions?: Array<{ type: string }> } }
        >(CSRs, name);
        return got.status?.certificate ? got : undefined;
      },
      60_000,
      500,
    ).catch(withLogs('controller-manager'));
    assert.ok(issued.status?.conditions?.some((c) => c.type === 'Approved'));
    const cert = new X509Certificate(Buffer.from(issued.status?.certificate ?? '', 'base64'));
    assert.equal(cert.subject, `O=system:nodes\nCN=system:node:${node}`);
    assert.ok(cert.checkIssued(new X509Certificate(pki.ca.certPem)));
    assert.equal(cert.checkIssued(new X509Certificate(pki.etcdCa.certPem)), false);
  });

  it('deleting the KVMCluster takes its PKI and kubeconfig Secrets with it (owner references)', async () => {
    wc?.close();
    await mc.delete(KVMClusters.type, ID, ns());
    for (const name of [`${ID}-ca`, `${ID}-certificates`, `${ID}-kubeconfig`]) {
      await eventually(
        `${name} collected`,
        async () => {
          try {
            await mc.get(Secrets, name, ns());
            return undefined;
          } catch (err) {
            return isNotFound(err) ? true : undefined;
          }
        },
        60_000,
        500,
      );
    }
  });
});
