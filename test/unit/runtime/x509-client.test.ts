import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type CertKeyPair,
  generateCa,
  issueClientCert,
  issueServingCert,
  subjectKeyId,
} from '../../../src/runtime/x509.ts';

// openssl is the referee nobody here wrote: what it accepts, Go's verifier and the API server accept too.
const OPENSSL = spawnSync('openssl', ['version']).status === 0;
const NO_OPENSSL = OPENSSL ? false : 'openssl is not installed: the independent verification is skipped';

let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'nw-x509-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function file(content: string): string {
  const path = join(dir, `f${files++}.pem`);
  writeFileSync(path, content);
  return path;
}

/** `openssl verify` of `cert` against `ca` for a purpose; its output, and whether it said OK. */
function opensslVerify(ca: CertKeyPair, cert: string, purpose: 'sslclient' | 'sslserver') {
  const r = spawnSync('openssl', ['verify', '-purpose', purpose, '-CAfile', file(ca.cert), file(cert)], {
    encoding: 'utf8',
  });
  return { ok: r.status === 0 && /: OK\s*$/.test(r.stdout), text: `${r.stdout}${r.stderr}` };
}

const openssl = (...args: string[]) => execFileSync('openssl', args, { encoding: 'utf8' });

/** A CA made by openssl, as another tool (kwokctl) makes it: its own key encoding, its own key identifier. */
function opensslCa(keyArgs: (out: string) => string[]): CertKeyPair {
  const key = join(dir, `ca-${files++}.key`);
  const cert = join(dir, `ca-${files++}.crt`);
  openssl(...keyArgs(key));
  openssl('req', '-x509', '-new', '-key', key, '-subj', '/CN=kwok-ca', '-days', '365', '-out', cert);
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
}

const cas: [string, () => CertKeyPair][] = [
  ['our ECDSA CA', () => generateCa({ commonName: 'ecdsa-ca' })],
  ['our RSA CA', () => generateCa({ commonName: 'rsa-ca', keyType: 'rsa' })],
];
if (OPENSSL)
  cas.push(
    [
      "openssl's RSA CA with a PKCS#1 key",
      () => opensslCa((out) => ['genrsa', '-traditional', '-out', out, '2048']),
    ],
    [
      "openssl's ECDSA P-384 CA with a SEC1 key",
      () => opensslCa((out) => ['ecparam', '-genkey', '-name', 'secp384r1', '-out', out]),
    ],
  );

for (const [what, makeCa] of cas) {
  describe(`certificates signed by ${what}`, () => {
    let ca: CertKeyPair;
    let kubelet: CertKeyPair;
    let proxy: CertKeyPair;
    let serving: CertKeyPair;
    before(() => {
      ca = makeCa();
      kubelet = issueClientCert(ca, { commonName: 'system:node:node-1', organizations: ['system:nodes'] });
      proxy = issueClientCert(ca, { commonName: 'system:kube-proxy' });
      serving = issueServingCert(ca, { dnsNames: ['node-1'], ips: ['172.30.0.2'] });
    });
    const caCert = () => new X509Certificate(ca.cert);

    it("a kubelet's client certificate: issued and signed by the CA, CN the node's user, O its group", () => {
      const cert = new X509Certificate(kubelet.cert);
      assert.ok(cert.checkIssued(caCert()), 'issued by the CA');
      assert.ok(cert.verify(caCert().publicKey), "the CA's signature verifies");
      assert.equal(cert.subject, 'O=system:nodes\nCN=system:node:node-1');
      assert.equal(cert.issuer, caCert().subject);
      assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.2']); // clientAuth only
      assert.equal(cert.ca, false);
      assert.ok(cert.checkPrivateKey(createPrivateKey(kubelet.key)), 'the key is the certificate’s');
    });

    it("the authority key identifier is the CA's own subject key identifier", { skip: NO_OPENSSL }, () => {
      const keyIdOf = (pem: string, ext: string) =>
        /\n\s+([0-9A-F:]{20,})/
          .exec(openssl('x509', '-noout', '-ext', ext, '-in', file(pem)))?.[1]
          ?.replaceAll(':', '');
      const ski = keyIdOf(ca.cert, 'subjectKeyIdentifier');
      assert.ok(ski, 'the CA has one');
      assert.equal(subjectKeyId(caCert())?.toString('hex').toUpperCase(), ski, 'read as openssl reads it');
      for (const c of [kubelet, proxy, serving]) assert.equal(keyIdOf(c.cert, 'authorityKeyIdentifier'), ski);
    });

    it("kube-proxy's client certificate: CN only", () => {
      const cert = new X509Certificate(proxy.cert);
      assert.ok(cert.verify(caCert().publicKey));
      assert.equal(cert.subject, 'CN=system:kube-proxy');
    });

    it("kubelet's serving certificate: the node's name and IP, serverAuth", () => {
      const cert = new X509Certificate(serving.cert);
      assert.ok(cert.verify(caCert().publicKey));
      assert.equal(cert.checkHost('node-1'), 'node-1');
      assert.equal(cert.checkIP('172.30.0.2'), '172.30.0.2');
      assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']);
    });

    it('a certificate of another CA does not verify against this one', () => {
      const other = issueClientCert(generateCa(), { commonName: 'system:node:node-1' });
      assert.equal(new X509Certificate(other.cert).verify(caCert().publicKey), false);
      if (OPENSSL) assert.equal(opensslVerify(ca, other.cert, 'sslclient').ok, false);
    });

    it('openssl verifies the client certificates for client use, and reads their subjects', {
      skip: NO_OPENSSL,
    }, () => {
      for (const c of [kubelet, proxy]) {
        const v = opensslVerify(ca, c.cert, 'sslclient');
        assert.ok(v.ok, v.text);
      }
      assert.equal(
        openssl('x509', '-noout', '-subject', '-in', file(kubelet.cert)).trim(),
        'subject=O = system:nodes, CN = system:node:node-1',
      );
      assert.equal(
        openssl('x509', '-noout', '-subject', '-in', file(proxy.cert)).trim(),
        'subject=CN = system:kube-proxy',
      );
      // A client certificate is no server's: the referee must be able to say no.
      assert.equal(opensslVerify(ca, kubelet.cert, 'sslserver').ok, false);
    });

    it('openssl verifies the serving certificate for server use, with its SANs', { skip: NO_OPENSSL }, () => {
      const v = opensslVerify(ca, serving.cert, 'sslserver');
      assert.ok(v.ok, v.text);
      const san = openssl('x509', '-noout', '-ext', 'subjectAltName', '-in', file(serving.cert));
      assert.match(san, /DNS:node-1, IP Address:172\.30\.0\.2/);
    });
  });
}

describe('subjectKeyId', () => {
  it('is undefined for a certificate without one', { skip: NO_OPENSSL }, () => {
    const key = join(dir, 'noski.key');
    const cert = join(dir, 'noski.crt');
    openssl('ecparam', '-genkey', '-name', 'prime256v1', '-out', key);
    const conf = file(
      '[req]\ndistinguished_name=dn\n[dn]\n[v3]\nbasicConstraints=critical,CA:TRUE\nsubjectKeyIdentifier=none\nauthorityKeyIdentifier=none\n',
    );
    openssl(
      'req',
      '-x509',
      '-new',
      '-key',
      key,
      '-subj',
      '/CN=bare',
      '-config',
      conf,
      '-extensions',
      'v3',
      '-days',
      '1',
      '-out',
      cert,
    );
    const ca = { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
    assert.equal(subjectKeyId(new X509Certificate(ca.cert)), undefined);
    // Without a key identifier to name, the client certificate has none, and still verifies.
    const client = issueClientCert(ca, { commonName: 'system:kube-proxy' });
    const v = opensslVerify(ca, client.cert, 'sslclient');
    assert.ok(v.ok, v.text);
  });
});
