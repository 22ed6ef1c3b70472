// X.509 for the webhook PKI and the real nodes' identities: the few DER
// (X.690) structures a certificate needs, and minting a self-signed CA,
// CA-signed serving certificates and client certificates (keys ECDSA P-256,
// signed with node:crypto by a CA whose key is ECDSA, RSA or Ed25519 — kwokctl's
// CA is not ours; no dependency and no openssl). The webhook PKI's lifecycle
// (Secret, rotation, reloading) is in certs.ts.
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

/** A certificate and its private key, both PEM. */
export interface CertKeyPair {
  cert: string;
  key: string;
}

export const DAY_MS = 24 * 3600 * 1000;
export const YEAR_MS = 365 * DAY_MS;

// ---- DER, just enough for an X.509 v3 certificate (X.690) ----

function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const len: number[] = [];
  for (let n = body.length; n > 0; n = Math.floor(n / 256)) len.unshift(n % 256);
  const head = body.length < 0x80 ? [body.length] : [0x80 | len.length, ...len];
  return Buffer.concat([Buffer.from([tag, ...head]), body]);
}
const seq = (...p: Buffer[]) => der(0x30, ...p);
const octets = (b: Buffer) => der(0x04, b);
const TRUE = der(0x01, Buffer.from([0xff]));
function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const out = [40 * a + b];
  for (const arc of rest) {
    const groups = [arc & 0x7f];
    for (let v = arc >>> 7; v > 0; v >>>= 7) groups.unshift((v & 0x7f) | 0x80);
    out.push(...groups);
  }
  return der(0x06, Buffer.from(out));
}
function time(d: Date): Buffer {
  const digits = d.toISOString().slice(0, 19).replace(/[-T:]/g, '');
  // RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050 on.
  return d.getUTCFullYear() < 2050
    ? der(0x17, Buffer.from(`${digits.slice(2)}Z`))
    : der(0x18, Buffer.from(`${digits}Z`));
}
const utf8 = (text: string) => der(0x0c, Buffer.from(text));
/** A distinguished name: one RDN per Organization, then the CommonName (Go's order). */
const name = (cn: string, organizations: readonly string[] = []) =>
  seq(
    ...organizations.map((o) => der(0x31, seq(oid('2.5.4.10'), utf8(o)))),
    der(0x31, seq(oid('2.5.4.3'), utf8(cn))),
  );
const ext = (id: string, critical: boolean, value: Buffer) =>
  seq(oid(id), ...(critical ? [TRUE] : []), octets(value));
function keyUsage(flags: number): Buffer {
  let unused = 0;
  while (unused < 7 && !(flags & (1 << unused))) unused++;
  return der(0x03, Buffer.from([unused, flags]));
}

/** The 4 or 16 bytes of an IP address, as an iPAddress SAN holds them. */
export function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`not an IP address: ${ip}`);
  const s = ip
    .replace(/%.*$/, '')
    .replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a, b, c, d) =>
      [(+a << 8) | +b, (+c << 8) | +d].map((n) => n.toString(16)).join(':'),
    );
  const [head = '', tail] = s.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.concat(groups.map((g) => Buffer.from(g.padStart(4, '0'), 'hex')));
}

/** The signatureAlgorithm a key signs with (it must name the signer's key type) and the hash to sign. */
function signatureAlgorithm(key: KeyObject): { id: Buffer; hash: string | null } {
  switch (key.asymmetricKeyType) {
    case 'ec':
      return { id: seq(oid('1.2.840.10045.4.3.2')), hash: 'sha256' }; // ecdsa-with-SHA256
    case 'rsa':
      return { id: seq(oid('1.2.840.113549.1.1.11'), der(0x05)), hash: 'sha256' }; // sha256WithRSAEncryption, NULL
    case 'ed25519':
      return { id: seq(oid('1.3.101.112')), hash: null }; // Ed25519 hashes itself
    default:
      throw new Error(`cannot sign certificates with a ${key.asymmetricKeyType ?? 'secret'} key`);
  }
}
// RFC 5280 lets the key identifier be any unique value; a truncated SHA-256 of the SPKI is one.
const keyId = (pub: KeyObject) =>
  createHash('sha256')
    .update(pub.export({ type: 'spki', format: 'der' }))
    .digest()
    .subarray(0, 20);

interface Issue {
  subject: string;
  organizations?: readonly string[];
  notBefore: Date;
  notAfter: Date;
  extensions: Buffer[];
  signer?: { cert: X509Certificate; key: KeyObject };
  /** The new certificate's own key pair (default: a fresh ECDSA P-256 one). */
  keyPair?: { publicKey: KeyObject; privateKey: KeyObject };
}

function mint(o: Issue): CertKeyPair {
  const { publicKey, privateKey } = o.keyPair ?? generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const signerKey = o.signer?.key ?? privateKey;
  const algorithm = signatureAlgorithm(signerKey);
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40; // positive, minimal, never zero
  // The authority key identifier must be the CA's own subject key identifier, which
  // a CA made elsewhere computed its own way (openssl refuses a mismatch); a CA
  // without one gets none.
  const authorityKeyId = o.signer ? subjectKeyId(o.signer.cert) : keyId(publicKey);
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))), // v3
    der(0x02, serial),
    algorithm.id,
    o.signer ? Buffer.from(o.signer.cert.raw.subarray(...subjectRange(o.signer.cert))) : name(o.subject),
    seq(time(o.notBefore), time(o.notAfter)),
    name(o.subject, o.organizations),
    publicKey.export({ type: 'spki', format: 'der' }),
    der(
      0xa3,
      seq(
        ...o.extensions,
        ext('2.5.29.14', false, octets(keyId(publicKey))),
        ...(authorityKeyId ? [ext('2.5.29.35', false, seq(der(0x80, authorityKeyId)))] : []),
      ),
    ),
  );
  const signature = sign(algorithm.hash, tbs, signerKey);
  const certDer = seq(tbs, algorithm.id, der(0x03, Buffer.from([0]), signature));
  const cert = `-----BEGIN CERTIFICATE-----\n${certDer.toString('base64').replace(/.{1,64}/g, '$&\n')}-----END CERTIFICATE-----\n`;
  return { cert, key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

/**
 * The key identifier in a certificate's subjectKeyIdentifier extension, if it has
 * one: the extension's OID, an optional critical flag, then an OCTET STRING
 * wrapping the identifier's own OCTET STRING (short lengths: identifiers are ~20 bytes).
 */
export function subjectKeyId(cert: X509Certificate): Buffer | undefined {
  const raw = cert.raw;
  const at = raw.indexOf(Buffer.from([0x06, 0x03, 0x55, 0x1d, 0x0e]));
  if (at < 0) return undefined;
  let i = at + 5;
  if (raw[i] === 0x01) i += 3; // BOOLEAN critical
  if (raw[i] !== 0x04 || raw[i + 2] !== 0x04) return undefined;
  const len = raw[i + 3]!;
  return len < 0x80 ? Buffer.from(raw.subarray(i + 4, i + 4 + len)) : undefined;
}

// Issuer bytes must equal the CA's subject bytes exactly; re-encoding could differ, so copy them.
function subjectRange(cert: X509Certificate): [number, number] {
  let i = 0;
  const raw = cert.raw;
  const skip = (enter: boolean) => {
    const start = i;
    i++; // tag
    let len = raw[i++]!;
    if (len & 0x80) {
      const n = len & 0x7f;
      len = 0;
      for (let k = 0; k < n; k++) len = len * 256 + raw[i++]!;
    }
    if (!enter) i += len;
    return start;
  };
  skip(true); // Certificate
  skip(true); // TBSCertificate
  for (let f = 0; f < 5; f++) skip(false); // version, serial, signature, issuer, validity
  const start = skip(false);
  return [start, i];
}

export interface CaOptions {
  commonName?: string;
  validityMs?: number;
  now?: Date;
  /** The CA's key: ECDSA P-256 (the default) or RSA 2048, as kubeadm's and kwokctl's are. */
  keyType?: 'ecdsa' | 'rsa';
}

/** A self-signed CA, valid 10 years unless told otherwise. */
export function generateCa(opts: CaOptions = {}): CertKeyPair {
  const now = opts.now ?? new Date();
  return mint({
    ...(opts.keyType === 'rsa' ? { keyPair: generateKeyPairSync('rsa', { modulusLength: 2048 }) } : {}),
    subject: opts.commonName ?? 'nodewarden-webhook-ca',
    notBefore: new Date(now.getTime() - 3600_000), // an hour of slack for skewed clocks
    notAfter: new Date(now.getTime() + (opts.validityMs ?? 10 * YEAR_MS)),
    extensions: [
      ext('2.5.29.19', true, seq(TRUE, der(0x02, Buffer.from([0])))),
      ext('2.5.29.15', true, keyUsage(0x86)),
    ],
  });
}

export interface ServingCertOptions {
  dnsNames: string[];
  ips?: string[];
  validityMs?: number;
  now?: Date;
}

/** A serving certificate signed by `ca`, valid 1 year (never past the CA's own expiry). */
export function issueServingCert(ca: CertKeyPair, opts: ServingCertOptions): CertKeyPair {
  const now = opts.now ?? new Date();
  const caCert = new X509Certificate(ca.cert);
  const end = Math.min(now.getTime() + (opts.validityMs ?? YEAR_MS), caCert.validToDate.getTime());
  const san = seq(
    ...opts.dnsNames.map((n) => der(0x82, Buffer.from(n, 'ascii'))),
    ...(opts.ips ?? []).map((ip) => der(0x87, ipBytes(ip))),
  );
  return mint({
    subject: opts.dnsNames[0] ?? opts.ips?.[0] ?? 'nodewarden-webhook',
    notBefore: new Date(now.getTime() - 3600_000),
    notAfter: new Date(end),
    extensions: [
      ext('2.5.29.19', true, seq()),
      ext('2.5.29.15', true, keyUsage(0x80)), // digitalSignature
      ext('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // serverAuth
      ext('2.5.29.17', false, san),
    ],
    signer: { cert: caCert, key: createPrivateKey(ca.key) },
  });
}

export interface ClientCertOptions {
  /** The user the API server sees: `system:node:<node>`, `system:kube-proxy`. */
  commonName: string;
  /** Its groups: `system:nodes`. */
  organizations?: readonly string[];
  validityMs?: number;
  now?: Date;
}

/**
 * A client certificate signed by `ca` (clientAuth), valid 1 year (never past the CA's
 * own expiry). The API server reads the subject's CN as the user and each O as a group.
 */
export function issueClientCert(ca: CertKeyPair, opts: ClientCertOptions): CertKeyPair {
  const now = opts.now ?? new Date();
  const caCert = new X509Certificate(ca.cert);
  const end = Math.min(now.getTime() + (opts.validityMs ?? YEAR_MS), caCert.validToDate.getTime());
  return mint({
    subject: opts.commonName,
    organizations: opts.organizations ?? [],
    notBefore: new Date(now.getTime() - 3600_000),
    notAfter: new Date(end),
    extensions: [
      ext('2.5.29.19', true, seq()),
      ext('2.5.29.15', true, keyUsage(0x80)), // digitalSignature
      ext('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.2'))), // clientAuth
    ],
    signer: { cert: caCert, key: createPrivateKey(ca.key) },
  });
}
