import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import {
  CertDirWatcher,
  DAY_MS,
  ensureCaBundle,
  ensureWebhookCerts,
  generateCa,
  ipBytes,
  issueServingCert,
  needsRotation,
  pkiFromSecret,
  planPki,
  SecretCertSource,
  serviceDnsNames,
  splitPem,
  YEAR_MS,
} from '../../../src/runtime/certs.ts';
import { KubeClient } from '../../../src/runtime/client.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import { Secrets, ValidatingWebhookConfigurations } from '../../../src/runtime/resources.ts';
import { FakeApiServer } from './fake-apiserver.ts';

const DNS = serviceDnsNames('nodewarden-webhook', 'nodewarden-system');
const T0 = new Date('2026-03-01T00:00:00Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const quiet = createLogger({ level: 'silent' });

let hasOpenssl = true;
try {
  execFileSync('openssl', ['version'], { stdio: 'ignore' });
} catch {
  hasOpenssl = false;
}

describe('generateCa and issueServingCert', () => {
  const ca = generateCa({ now: T0 });
  const serving = issueServingCert(ca, { dnsNames: DNS, ips: ['127.0.0.1', '::1'], now: T0 });
  const caCert = new X509Certificate(ca.cert);
  const cert = new X509Certificate(serving.cert);

  it('makes a self-signed CA valid for ten years', () => {
    assert.equal(caCert.ca, true);
    assert.ok(caCert.verify(caCert.publicKey));
    assert.ok(caCert.checkIssued(caCert));
    assert.ok(Math.abs(caCert.validToDate.getTime() - at(10 * YEAR_MS).getTime()) < 1000);
  });

  it('signs a one-year serving certificate with the CA, for every DNS name and IP', () => {
    assert.equal(cert.ca, false);
    assert.ok(cert.verify(caCert.publicKey));
    assert.ok(cert.checkIssued(caCert));
    assert.equal(cert.issuer, caCert.subject);
    for (const n of DNS) assert.equal(cert.checkHost(n, { wildcards: false, subject: 'never' }), n);
    assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
    assert.equal(cert.checkIP('::1'), '::1');
    assert.equal(cert.checkHost('other.svc'), undefined);
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']); // serverAuth
    assert.ok(Math.abs(cert.validToDate.getTime() - at(YEAR_MS).getTime()) < 1000);
  });

  it('never outlives its CA', () => {
    const shortCa = generateCa({ now: T0, validityMs: 30 * DAY_MS });
    const s = new X509Certificate(issueServingCert(shortCa, { dnsNames: DNS, now: T0 }).cert);
    assert.ok(s.validToDate <= new X509Certificate(shortCa.cert).validToDate);
  });

  it('is accepted by openssl verify as a TLS server certificate', {
    skip: !hasOpenssl && 'no openssl',
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'nw-certs-'));
    try {
      writeFileSync(join(dir, 'ca.crt'), ca.cert);
      writeFileSync(join(dir, 'tls.crt'), serving.cert);
      const out = execFileSync(
        'openssl',
        [
          'verify',
          '-attime',
          String(T0.getTime() / 1000 + 60),
          '-purpose',
          'sslserver',
          '-CAfile',
          'ca.crt',
          'tls.crt',
        ],
        { cwd: dir, encoding: 'utf8' },
      );
      assert.match(out, /tls\.crt: OK/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('encodes IPv4, IPv6 and IPv4-mapped addresses as SAN bytes', () => {
    assert.deepEqual([...ipBytes('10.0.0.1')], [10, 0, 0, 1]);
    assert.equal(ipBytes('fe80::1:2').toString('hex'), 'fe800000000000000000000000010002');
    assert.equal(ipBytes('::ffff:1.2.3.4').toString('hex'), '00000000000000000000ffff01020304');
    assert.throws(() => ipBytes('nope'), /not an IP/);
  });
});

describe('needsRotation', () => {
  const ca = generateCa({ now: T0 });
  const { cert } = issueServingCert(ca, { dnsNames: DNS, now: T0 });
  const c = new X509Certificate(cert);
  const life = c.validToDate.getTime() - c.validFromDate.getTime();
  const twoThirds = c.validFromDate.getTime() + (2 * life) / 3;

  it('says no until two thirds of the lifetime have passed, then yes', () => {
    assert.equal(needsRotation(cert, T0), false);
    assert.equal(needsRotation(cert, new Date(twoThirds - DAY_MS)), false);
    assert.equal(needsRotation(cert, new Date(twoThirds + DAY_MS)), true);
  });
  it('says yes for something that is not a certificate', () => {
    assert.equal(needsRotation('garbage', T0), true);
  });
});

describe('planPki', () => {
  const want = { dnsNames: DNS };
  const first = planPki(undefined, want, T0)!;

  it('mints a CA and a serving certificate when there is nothing', () => {
    assert.equal(splitPem(first.caBundle).length, 1);
    assert.ok(new X509Certificate(first.serving.cert).verify(new X509Certificate(first.ca.cert).publicKey));
  });
  it('changes nothing while all is valid', () => {
    assert.equal(planPki(first, want, at(100 * DAY_MS)), undefined);
  });
  it('reissues the serving certificate at two thirds of its life, keeping the CA', () => {
    const next = planPki(first, want, at(250 * DAY_MS))!;
    assert.equal(next.ca.cert, first.ca.cert);
    assert.notEqual(next.serving.cert, first.serving.cert);
  });
  it('reissues when a DNS name is missing or the key does not match', () => {
    assert.ok(planPki(first, { dnsNames: [...DNS, 'extra.example'] }, T0));
    const other = issueServingCert(first.ca, { dnsNames: DNS, now: T0 });
    assert.ok(planPki({ ...first, serving: { cert: first.serving.cert, key: other.key } }, want, T0));
  });
  it('replaces a CA with under a year left and keeps the old one in the bundle until it expires', () => {
    const ageing = at(9.5 * YEAR_MS);
    const next = planPki(first, want, ageing)!;
    assert.notEqual(next.ca.cert, first.ca.cert);
    assert.deepEqual(splitPem(next.caBundle), [next.ca.cert, first.ca.cert]);
    assert.ok(new X509Certificate(next.serving.cert).verify(new X509Certificate(next.ca.cert).publicKey));
    const later = planPki(next, want, at(10.1 * YEAR_MS))!;
    assert.deepEqual(splitPem(later.caBundle), [next.ca.cert]);
  });
});

describe('the PKI Secret', () => {
  let fake: FakeApiServer;
  let client: KubeClient;
  beforeEach(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0 });
  });
  afterEach(async () => {
    client.close();
    await fake.stop();
  });
  const opts = { namespace: 'ns', secretName: 'webhook-certs', dnsNames: DNS, now: () => T0 };

  it('creates the Secret once and reads the same PKI back', async () => {
    const a = await ensureWebhookCerts(client, opts);
    assert.equal(a.action, 'created');
    const secret = fake.get(Secrets, 'webhook-certs', 'ns')!;
    assert.equal(secret.type, 'kubernetes.io/tls');
    assert.deepEqual(Object.keys(secret.data as object).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    assert.deepEqual(pkiFromSecret(secret), a.pki);
    const b = await ensureWebhookCerts(client, opts);
    assert.deepEqual(b, { pki: a.pki, action: 'unchanged' });
  });

  it('lets racing replicas agree on one PKI', async () => {
    const results = await Promise.all([1, 2, 3].map(() => ensureWebhookCerts(client, opts)));
    assert.equal(results.filter((r) => r.action === 'created').length, 1);
    for (const r of results) assert.equal(r.pki.serving.cert, results[0]?.pki.serving.cert);
  });

  it('rotates in place when the serving certificate is due', async () => {
    const a = await ensureWebhookCerts(client, opts);
    const b = await ensureWebhookCerts(client, { ...opts, now: () => at(250 * DAY_MS) });
    assert.equal(b.action, 'rotated');
    assert.notEqual(b.pki.serving.cert, a.pki.serving.cert);
    assert.deepEqual(pkiFromSecret(fake.get(Secrets, 'webhook-certs', 'ns')!), b.pki);
  });

  it('ensureCaBundle fills every webhook of the configuration, once', async () => {
    fake.upsert(ValidatingWebhookConfigurations, {
      metadata: { name: 'cfg' },
      webhooks: [
        { name: 'a.x.dev', clientConfig: {} },
        { name: 'b.x.dev', clientConfig: { caBundle: 'b2xk' } },
      ],
    });
    assert.equal(await ensureCaBundle(client, 'cfg', 'PEM'), true);
    const hooks = fake.get(ValidatingWebhookConfigurations, 'cfg')?.webhooks as {
      clientConfig: { caBundle: string };
    }[];
    assert.deepEqual(
      hooks.map((h) => h.clientConfig.caBundle),
      [Buffer.from('PEM').toString('base64'), Buffer.from('PEM').toString('base64')],
    );
    assert.equal(await ensureCaBundle(client, 'cfg', 'PEM'), false);
  });

  it('SecretCertSource reports a pair another replica rotated, and tolerates a missing configuration', async () => {
    const seen: string[] = [];
    const source = new SecretCertSource(client, {
      ...opts,
      webhookConfigurations: ['absent'],
      log: quiet,
      onChange: (pair) => seen.push(pair.cert),
    });
    const first = await source.start();
    source.stop();
    assert.deepEqual(seen, []);
    const other = await ensureWebhookCerts(client, { ...opts, now: () => at(250 * DAY_MS) });
    await source.sync();
    assert.deepEqual(seen, [other.pki.serving.cert]);
    assert.notEqual(first.serving.cert, other.pki.serving.cert);
  });
});

describe('CertDirWatcher (provided certificates)', () => {
  let dir: string;
  const write = (pair: { cert: string; key: string }) => {
    writeFileSync(join(dir, 'tls.crt'), pair.cert);
    writeFileSync(join(dir, 'tls.key'), pair.key);
  };
  const ca = generateCa();
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'nw-certdir-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('loads the pair, reloads it when it changes, and skips a half-written one', () => {
    const p1 = issueServingCert(ca, { dnsNames: DNS });
    const p2 = issueServingCert(ca, { dnsNames: DNS });
    write(p1);
    const seen: string[] = [];
    const w = new CertDirWatcher(dir, { onChange: (p) => seen.push(p.cert) });
    try {
      assert.deepEqual(w.start(), p1);
      assert.equal(w.poll(), false);
      write({ cert: p2.cert, key: p1.key }); // mid-update: new cert, old key
      assert.equal(w.poll(), false);
      write(p2);
      assert.equal(w.poll(), true);
      assert.deepEqual(seen, [p2.cert]);
    } finally {
      w.stop();
    }
  });
});
