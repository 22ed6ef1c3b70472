// The operator's kubeconfig step against a TLS server on loopback that
// presents the cluster's API server certificate and asks for a client
// certificate from its CA, as kube-apiserver does: the probe trusts only the
// cluster's CA and the master Service's name; the Secret is written once,
// owned by the KVMCluster, and the kubeconfig in it reaches the server (the
// bootstrap bindings are applied through it). The management cluster is a fake.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { issueClusterPki } from '../../../../src/kvm/act/pki.ts';
import {
  bootstrapBindings,
  KubeconfigWriter,
  probeApiServer,
} from '../../../../src/kvm/act/workload-kubeconfig.ts';
import type { ClusterPki } from '../../../../src/kvm/plan/pki.ts';
import type { KVMClusterObject } from '../../../../src/kvm/plan/views.ts';
import {
  decideKubeconfig,
  type MasterEndpoint,
  masterServiceEndpoint,
  workloadKubeconfig,
} from '../../../../src/kvm/plan/workload-kubeconfig.ts';
import type { KubeClient } from '../../../../src/runtime/client.ts';
import { ApiError } from '../../../../src/runtime/errors.ts';
import { kvmCluster } from '../fixtures.ts';

const kc = {
  ...kvmCluster({ name: 'c1', namespace: 'team', masters: 1, workers: 1 }),
  metadata: { name: 'c1', namespace: 'team', uid: 'uid-1' },
} as KVMClusterObject;
const pki = issueClusterPki('c1', kc.spec, Date.now());
const stranger = issueClusterPki('c2', kvmCluster({ name: 'c2' }).spec, Date.now());

/** An API server stand-in: the cluster's serving certificate, client certificates from its CA required. */
function apiServer(serving: ClusterPki, applied: string[]): Promise<Server> {
  const server = createServer(
    {
      cert: serving.certs.apiserver?.certPem,
      key: serving.certs.apiserver?.keyPem,
      ca: serving.ca.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      if (req.url === '/readyz') {
        res.end('ok');
        return;
      }
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        applied.push(`${req.method} ${req.url}`);
        res.setHeader('content-type', 'application/json');
        res.end(body || '{}');
      });
    },
  );
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const at = (s: Server, serverName = 'master.c1.svc'): MasterEndpoint => ({
  url: `https://127.0.0.1:${(s.address() as AddressInfo).port}`,
  serverName,
});

describe('decideKubeconfig', () => {
  const table: Array<[string, Parameters<typeof decideKubeconfig>[0], string]> = [
    ['no Secret yet', undefined, 'probeThenWrite'],
    [
      'written by a VM runtime (the simulated hypervisor)',
      { managedBy: 'nodewarden-simulated-hypervisor', kubeconfig: 'x' },
      'foreign',
    ],
    ['written by no one we know', { kubeconfig: 'x' }, 'foreign'],
    ['ours, the same', { managedBy: 'nodewarden', kubeconfig: 'WANT' }, 'upToDate'],
    [
      'ours, stale (the admin certificate was renewed)',
      { managedBy: 'nodewarden', kubeconfig: 'OLD' },
      'probeThenWrite',
    ],
  ];
  for (const [name, found, want] of table)
    it(`${name}: ${want}`, () => assert.equal(decideKubeconfig(found, 'WANT'), want));

  it('the master Service by its DNS name, checked for that name', () => {
    assert.deepEqual(masterServiceEndpoint('c1', 6443), {
      url: 'https://master.c1.svc:6443',
      serverName: 'master.c1.svc',
    });
  });
});

describe('probeApiServer: through the master Service, trusting only the cluster CA', () => {
  let server: Server;
  let other: Server;
  before(async () => {
    server = await apiServer(pki, []);
    other = await apiServer(stranger, []);
  });
  after(() => {
    server.close();
    other.close();
  });
  const admin = () => pki.certs.admin ?? { certPem: '', keyPem: '' };

  it("answers: the cluster's API server, checked for master.c1.svc", async () => {
    assert.equal(await probeApiServer(at(server), pki.ca.certPem, admin()), true);
  });
  it("refuses another cluster's API server at the same name", async () => {
    assert.equal(await probeApiServer(at(other), pki.ca.certPem, admin()), false);
  });
  it('refuses a name its certificate does not carry', async () => {
    assert.equal(await probeApiServer(at(server, 'master.c9.svc'), pki.ca.certPem, admin()), false);
  });
  it("is refused without a client certificate from the cluster's CA", async () => {
    const theirs = stranger.certs.admin ?? { certPem: '', keyPem: '' };
    assert.equal(await probeApiServer(at(server), pki.ca.certPem, theirs), false);
  });
  it('nothing listening: false, not an error', async () => {
    assert.equal(
      await probeApiServer(
        { url: 'https://127.0.0.1:1', serverName: 'master.c1.svc' },
        pki.ca.certPem,
        admin(),
      ),
      false,
    );
  });
});

function fakeSecrets(initial?: { labels: Record<string, string>; kubeconfig: string }) {
  const writes: Array<{ metadata: Record<string, unknown>; data: Record<string, string> }> = [];
  let current: (typeof writes)[number] | undefined = initial
    ? {
        metadata: { labels: initial.labels },
        data: { kubeconfig: Buffer.from(initial.kubeconfig).toString('base64') },
      }
    : undefined;
  const client = {
    async get() {
      if (!current) throw new ApiError(404, 'not found', { reason: 'NotFound' });
      return structuredClone(current);
    },
    async patch(_t: unknown, _n: string, _ns: string, body: (typeof writes)[number]) {
      writes.push(body);
      current = structuredClone(body);
      return body;
    },
  };
  return { client: client as unknown as KubeClient, writes };
}

describe('KubeconfigWriter: the operator writes <id>-kubeconfig once the API server answers', () => {
  let server: Server;
  const applied: string[] = [];
  before(async () => {
    server = await apiServer(pki, applied);
  });
  after(() => server.close());

  it('writes it once, owned by the KVMCluster, after applying the bootstrap bindings through it', async () => {
    const f = fakeSecrets();
    const writer = new KubeconfigWriter(f.client, () => at(server));
    assert.equal(await writer.ensure(kc, pki), 'written');
    assert.equal(await writer.ensure(kc, pki), 'upToDate');
    assert.equal(f.writes.length, 1);
    const secret = f.writes[0];
    assert.deepEqual(secret?.metadata.ownerReferences, [
      { apiVersion: 'kvm.nodewarden.dev/v1alpha1', kind: 'KVMCluster', name: 'c1', uid: 'uid-1' },
    ]);
    assert.equal(secret?.metadata.name, 'c1-kubeconfig');
    const k = parse(Buffer.from(secret?.data.kubeconfig ?? '', 'base64').toString());
    assert.equal(k.clusters[0].cluster['tls-server-name'], 'master.c1.svc');
    assert.deepEqual(
      applied,
      bootstrapBindings().map(
        (b) =>
          `PATCH /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${encodeURIComponent(b.metadata?.name ?? '')}?fieldManager=nodewarden-kvm&force=true`,
      ),
    );
  });

  it('leaves a Secret a VM runtime wrote', async () => {
    const f = fakeSecrets({
      labels: { 'app.kubernetes.io/managed-by': 'nodewarden-simulated-hypervisor' },
      kubeconfig: 'sim',
    });
    const writer = new KubeconfigWriter(f.client, () => at(server));
    assert.equal(await writer.ensure(kc, pki), 'foreign');
    assert.equal(f.writes.length, 0);
  });

  it('writes nothing while the API server does not answer', async () => {
    const f = fakeSecrets();
    const writer = new KubeconfigWriter(f.client, () => ({
      url: 'https://127.0.0.1:1',
      serverName: 'master.c1.svc',
    }));
    assert.equal(await writer.ensure(kc, pki), 'unreachable');
    assert.equal(f.writes.length, 0);
  });

  it('rewrites ours when the admin certificate was renewed', async () => {
    const stale = workloadKubeconfig('c1', stranger, at(server));
    const f = fakeSecrets({ labels: { 'app.kubernetes.io/managed-by': 'nodewarden' }, kubeconfig: stale });
    const writer = new KubeconfigWriter(f.client, () => at(server));
    assert.equal(await writer.ensure(kc, pki), 'written');
  });

  it('with no way to the master Service (--kvm-workload-api none), does nothing at all', async () => {
    const f = fakeSecrets();
    const writer = new KubeconfigWriter(f.client, () => undefined);
    assert.equal(await writer.ensure(kc, pki), 'notProbed');
    assert.equal(f.writes.length, 0);
  });
});
