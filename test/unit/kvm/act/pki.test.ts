// The PKI as the operator issues and keeps it: every certificate checked by
// Node's X509Certificate and by openssl (a verifier we did not write), and
// the Secrets written through a fake client — once, then never again while
// nothing is due, and renewed when the clock passes two thirds of a life.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { heldCertificate, issueClusterPki, PkiKeeper } from '../../../../src/kvm/act/pki.ts';
import { issueCertificate } from '../../../../src/kvm/act/x509.ts';
import { desiredCertificates, LEAF_LIFETIME_MS, renewalAt } from '../../../../src/kvm/plan/pki.ts';
import type { KVMClusterObject } from '../../../../src/kvm/plan/views.ts';
import type { KubeClient } from '../../../../src/runtime/client.ts';
import { ApiError } from '../../../../src/runtime/errors.ts';
import { kvmCluster } from '../fixtures.ts';

const OPENSSL = '/usr/bin/openssl';
const dir = mkdtempSync(join(tmpdir(), 'kvm-pki-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const T0 = Date.parse('2026-03-01T00:00:00Z');
const DAY = 24 * 3600 * 1000;

function openssl(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync(OPENSSL, args, { encoding: 'utf8' });
  if (r.error) throw r.error;
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
}

describe('issueClusterPki: certificates a TLS stack accepts', () => {
  const kc = kvmCluster({ name: 'c1', masters: 2, workers: 1 });
  const pki = issueClusterPki('c1', kc.spec, Date.now());
  const desired = desiredCertificates('c1', kc.spec);
  writeFileSync(join(dir, 'ca.crt'), pki.ca.certPem);
  writeFileSync(join(dir, 'etcd-ca.crt'), pki.etcdCa.certPem);

  for (const want of desired) {
    it(`${want.name}: openssl verifies it against ${want.issuer} and only that CA`, () => {
      const path = join(dir, `${want.name}.crt`);
      writeFileSync(path, pki.certs[want.name]?.certPem ?? '');
      const purpose = want.usages.includes('serverAuth') ? 'sslserver' : 'sslclient';
      const own = openssl(['verify', '-purpose', purpose, '-CAfile', join(dir, `${want.issuer}.crt`), path]);
      assert.ok(own.ok, own.out);
      const other = want.issuer === 'ca' ? 'etcd-ca' : 'ca';
      assert.equal(openssl(['verify', '-CAfile', join(dir, `${other}.crt`), path]).ok, false);
    });
  }

  it('each key belongs to its certificate', () => {
    for (const want of desired) {
      const pair = pki.certs[want.name];
      const cert = new X509Certificate(pair?.certPem ?? '');
      assert.ok(cert.checkPrivateKey(createPrivateKey(pair?.keyPem ?? '')), want.name);
    }
  });

  it('reads back as the planner wants it (subject, groups, SANs, issuer, a year)', () => {
    const cas = {
      ca: new X509Certificate(pki.ca.certPem),
      'etcd-ca': new X509Certificate(pki.etcdCa.certPem),
    };
    for (const want of desired) {
      const h = heldCertificate(want.name, pki.certs[want.name]?.certPem ?? '', cas);
      assert.equal(h.commonName, want.commonName);
      assert.deepEqual(h.organizations, want.organizations);
      assert.deepEqual(h.dnsNames, want.dnsNames);
      assert.deepEqual(h.ipAddresses, want.ipAddresses);
      assert.equal(h.issuedBy, want.issuer);
      // X.509 keeps seconds; the lifetime is a year from 5 minutes ago.
      assert.equal(Math.round((h.notAfter - h.notBefore) / 1000), (LEAF_LIFETIME_MS + 5 * 60 * 1000) / 1000);
    }
  });

  it('the CAs are CAs; leaves are not', () => {
    assert.equal(new X509Certificate(pki.ca.certPem).ca, true);
    assert.equal(new X509Certificate(pki.etcdCa.certPem).ca, true);
    assert.equal(new X509Certificate(pki.certs.apiserver?.certPem ?? '').ca, false);
  });

  it("a bootstrap token in kubeadm's format, and service-account keys", () => {
    assert.match(pki.bootstrapToken, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    assert.match(pki.serviceAccount.pubPem, /BEGIN PUBLIC KEY/);
  });

  it('dates past 2049 are GeneralizedTime (RFC 5280) and read back right', () => {
    const c = issueCertificate({
      commonName: 'far',
      keyUsages: ['digitalSignature'],
      notBefore: new Date('2049-12-31T23:00:00Z'),
      notAfter: new Date('2051-06-01T00:00:00Z'),
    });
    const x = new X509Certificate(c.certPem);
    assert.equal(Date.parse(x.validTo), Date.parse('2051-06-01T00:00:00Z'));
    assert.equal(Date.parse(x.validFrom), Date.parse('2049-12-31T23:00:00Z'));
  });
});

/** A management cluster of Secrets: get and server-side apply, counted. */
function fakeSecrets() {
  const store = new Map<string, { metadata: Record<string, unknown>; data: Record<string, string> }>();
  const writes: string[] = [];
  const client = {
    async get(_t: unknown, name: string, ns: string) {
      const s = store.get(`${ns}/${name}`);
      if (!s) throw new ApiError(404, `secrets "${name}" not found`, { reason: 'NotFound' });
      return structuredClone(s);
    },
    async patch(
      _t: unknown,
      name: string,
      ns: string,
      body: { metadata: Record<string, unknown>; data: Record<string, string> },
    ) {
      writes.push(name);
      store.set(`${ns}/${name}`, structuredClone(body));
      return body;
    },
  };
  return { client: client as unknown as KubeClient, store, writes };
}

describe('PkiKeeper: Secrets written once, owned by the cluster, renewed when due', () => {
  const kc = {
    ...kvmCluster({ name: 'c1', namespace: 'team', masters: 1, workers: 2 }),
    metadata: { name: 'c1', namespace: 'team', uid: 'uid-1' },
  } as KVMClusterObject;

  it('first pass: the CA Secret and the certificates Secret, each owned by the KVMCluster', async () => {
    const f = fakeSecrets();
    const keeper = new PkiKeeper(f.client);
    const { plan, pki } = await keeper.ensure(kc, T0);
    assert.deepEqual(f.writes, ['c1-ca', 'c1-certificates']);
    assert.equal(plan.issueCas.length, 2);
    for (const name of ['c1-ca', 'c1-certificates']) {
      const s = f.store.get(`team/${name}`);
      assert.deepEqual(s?.metadata.ownerReferences, [
        { apiVersion: 'kvm.nodewarden.dev/v1alpha1', kind: 'KVMCluster', name: 'c1', uid: 'uid-1' },
      ]);
    }
    assert.deepEqual(Object.keys(f.store.get('team/c1-ca')?.data ?? {}).sort(), [
      'bootstrap-token',
      'ca.crt',
      'ca.key',
      'etcd-ca.crt',
      'etcd-ca.key',
      'sa.key',
      'sa.pub',
    ]);
    assert.ok(pki.certs.apiserver?.certPem.includes('BEGIN CERTIFICATE'));
  });

  it('later passes write nothing and hand out the same material', async () => {
    const f = fakeSecrets();
    const keeper = new PkiKeeper(f.client);
    const first = await keeper.ensure(kc, T0);
    const second = await keeper.ensure(kc, T0 + 10 * DAY);
    assert.deepEqual(f.writes, ['c1-ca', 'c1-certificates']);
    assert.deepEqual(second.pki, first.pki);
    assert.deepEqual(second.plan.issue, []);
  });

  it('at two thirds of a life every leaf is renewed; the CAs, keys and token stay', async () => {
    const f = fakeSecrets();
    const keeper = new PkiKeeper(f.client);
    // Issued "now" so that the real clock and T0 agree on validity: renewal is reckoned from the certificate.
    const now = Date.now();
    const first = await keeper.ensure(kc, now);
    const due = renewalAt({ notBefore: now - 5 * 60 * 1000, notAfter: now + LEAF_LIFETIME_MS });
    const renewed = await keeper.ensure(kc, due + 1000);
    assert.deepEqual(f.writes, ['c1-ca', 'c1-certificates', 'c1-certificates']);
    assert.ok(renewed.plan.issue.every((i) => i.cause === 'renewal'));
    assert.equal(renewed.pki.ca.certPem, first.pki.ca.certPem);
    assert.equal(renewed.pki.bootstrapToken, first.pki.bootstrapToken);
    assert.notEqual(renewed.pki.certs.apiserver?.certPem, first.pki.certs.apiserver?.certPem);
  });

  it('a master added: only its etcd certificates are issued', async () => {
    const f = fakeSecrets();
    const keeper = new PkiKeeper(f.client);
    await keeper.ensure(kc, T0);
    const bigger = {
      ...kc,
      spec: kvmCluster({ name: 'c1', masters: 2, workers: 2 }).spec,
    } as KVMClusterObject;
    const { plan } = await keeper.ensure(bigger, T0 + DAY);
    assert.deepEqual(
      plan.issue.map((i) => [i.name, i.cause]),
      [
        ['etcd-server-m2', 'missing'],
        ['etcd-peer-m2', 'missing'],
      ],
    );
  });
});
