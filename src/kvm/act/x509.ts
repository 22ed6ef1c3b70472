// Issuing X.509 certificates for a workload cluster's PKI: ECDSA P-256 keys,
// certificates signed with ECDSA-SHA256. Node's crypto generates the keys,
// exports the public key as a ready SubjectPublicKeyInfo, signs, and parses
// certificates back (X509Certificate); all that is left is DER-encoding one
// structure, the TBSCertificate, which is what this file does. Written here
// rather than taken from an X.509 package: the one that fits (@peculiar/x509)
// brings six transitive packages and async WebCrypto into a lockfile every
// capability shares, for the ~100 lines below; the tests check every
// certificate with Node's X509Certificate and with openssl.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
} from 'node:crypto';
import { isIPv4 } from 'node:net';

export type KeyUsage = 'digitalSignature' | 'keyEncipherment' | 'keyCertSign';
export type ExtKeyUsage = 'serverAuth' | 'clientAuth';

export interface CertificateRequest {
  commonName: string;
  organizations?: readonly string[];
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
  isCA?: boolean;
  keyUsages: readonly KeyUsage[];
  extKeyUsages?: readonly ExtKeyUsage[];
  notBefore: Date;
  notAfter: Date;
}

export interface KeyPair {
  certPem: string;
  keyPem: string;
}

// --- DER: tag, length, contents ---
function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const n = body.length;
  const len =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 255]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}
const seq = (...p: Buffer[]) => der(0x30, ...p);
const set = (...p: Buffer[]) => der(0x31, ...p);
const octets = (b: Buffer) => der(0x04, b);
const bitString = (b: Buffer) => der(0x03, Buffer.from([0]), b);
const utf8 = (s: string) => der(0x0c, Buffer.from(s, 'utf8'));
const bool = (v: boolean) => der(0x01, Buffer.from([v ? 0xff : 0]));
const explicit = (n: number, b: Buffer) => der(0xa0 + n, b);

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * a + b];
  for (const v of rest) {
    const chunk = [v & 0x7f];
    for (let x = v >>> 7; x > 0; x >>>= 7) chunk.unshift((x & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

/** A positive INTEGER from unsigned big-endian bytes. */
function uint(bytes: Buffer): Buffer {
  return der(
    0x02,
    bytes[0] !== undefined && bytes[0] >= 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes,
  );
}

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050
    ? der(0x17, Buffer.from(`${iso.slice(2)}Z`))
    : der(0x18, Buffer.from(`${iso}Z`));
}

const OID = {
  ecdsaWithSHA256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  subjectKeyId: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyId: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** Kubernetes reads users' groups from O, their names from CN. */
function name(commonName: string, organizations: readonly string[] = []): Buffer {
  const rdn = (type: string, value: string) => set(seq(oid(type), utf8(value)));
  return seq(...organizations.map((o) => rdn(OID.organization, o)), rdn(OID.commonName, commonName));
}

const KEY_USAGE_BITS: Record<KeyUsage, number> = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5 };

function keyUsage(usages: readonly KeyUsage[]): Buffer {
  let bits = 0;
  for (const u of usages) bits |= 0x80 >> KEY_USAGE_BITS[u];
  const unused = bits === 0 ? 0 : Math.min(7, Math.log2(bits & -bits));
  return der(0x03, Buffer.from([unused, bits]));
}

function subjectAltName(dnsNames: readonly string[], ips: readonly string[]): Buffer {
  const dns = dnsNames.map((n) => der(0x82, Buffer.from(n, 'ascii')));
  const ip = ips.map((a) => {
    if (!isIPv4(a)) throw new RangeError(`only IPv4 addresses are issued, not "${a}"`);
    return der(0x87, Buffer.from(a.split('.').map(Number)));
  });
  return seq(...dns, ...ip);
}

const extension = (id: string, critical: boolean, value: Buffer) =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

function keyId(spki: Buffer): Buffer {
  return createHash('sha1').update(spki).digest();
}

function extensions(req: CertificateRequest, spki: Buffer, issuerSpki: Buffer): Buffer {
  const list = [
    extension(OID.keyUsage, true, keyUsage(req.keyUsages)),
    extension(OID.basicConstraints, true, seq(...(req.isCA ? [bool(true)] : []))),
    extension(OID.subjectKeyId, false, octets(keyId(spki))),
    extension(OID.authorityKeyId, false, seq(der(0x80, keyId(issuerSpki)))),
  ];
  if (req.extKeyUsages?.length) {
    list.push(extension(OID.extKeyUsage, false, seq(...req.extKeyUsages.map((u) => oid(OID[u])))));
  }
  if (req.dnsNames?.length || req.ipAddresses?.length) {
    list.push(
      extension(OID.subjectAltName, false, subjectAltName(req.dnsNames ?? [], req.ipAddresses ?? [])),
    );
  }
  return explicit(3, seq(...list));
}

/** The PEM of a DER certificate. */
function pem(label: string, body: Buffer): string {
  const lines = body.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

export interface Issuer {
  certPem: string;
  keyPem: string;
}

/**
 * A new key and a certificate for it, signed by `issuer` (self-signed when
 * absent: the CA). The serial is 16 random bytes (RFC 5280 allows up to 20).
 */
export function issueCertificate(req: CertificateRequest, issuer?: Issuer): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const signer: KeyObject = issuer ? createPrivateKey(issuer.keyPem) : privateKey;
  const issuerSpki = issuer
    ? (publicKeyOf(issuer.keyPem).export({ type: 'spki', format: 'der' }) as Buffer)
    : spki;
  const issuerName = issuer ? issuerNameDer(issuer.certPem) : name(req.commonName, req.organizations);
  const serial = randomBytes(16);
  // Positive, and its first byte never 0: DER wants the shortest encoding, and openssl refuses any other.
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40;
  const algorithm = seq(oid(OID.ecdsaWithSHA256));
  const tbs = seq(
    explicit(0, der(0x02, Buffer.from([2]))),
    uint(serial),
    algorithm,
    issuerName,
    seq(time(req.notBefore), time(req.notAfter)),
    name(req.commonName, req.organizations),
    spki,
    extensions(req, spki, issuerSpki),
  );
  const signature = sign('sha256', tbs, signer);
  const cert = seq(tbs, algorithm, bitString(signature));
  return {
    certPem: pem('CERTIFICATE', cert),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

function publicKeyOf(keyPem: string): KeyObject {
  return createPublicKey(createPrivateKey(keyPem));
}

/**
 * The issuer's subject exactly as encoded in its certificate (a client matches
 * issuer and subject byte for byte): the second SEQUENCE after the validity
 * in its TBSCertificate, read with a minimal DER walker.
 */
function issuerNameDer(certPem: string): Buffer {
  const body = Buffer.from(certPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const tbs = children(children(body, 0)[0] ?? Buffer.alloc(0), 0);
  // version, serial, algorithm, issuer, validity, subject
  const subject = tbs[5];
  if (!subject) throw new Error('the issuer certificate has no subject');
  return subject;
}

/** The DER elements inside the constructed element at `offset` of `buf`. */
function children(buf: Buffer, offset: number): Buffer[] {
  const { start, end } = header(buf, offset);
  const out: Buffer[] = [];
  for (let at = start; at < end; ) {
    const h = header(buf, at);
    out.push(buf.subarray(at, h.end));
    at = h.end;
  }
  return out;
}

function header(buf: Buffer, offset: number): { start: number; end: number } {
  const first = buf[offset + 1] ?? 0;
  if (first < 0x80) return { start: offset + 2, end: offset + 2 + first };
  const n = first & 0x7f;
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + (buf[offset + 2 + i] ?? 0);
  return { start: offset + 2 + n, end: offset + 2 + n + len };
}

/** A service-account signing key pair (the API server verifies, the controller-manager signs). */
export function serviceAccountKeys(): { keyPem: string; pubPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    pubPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}
