// OpenSSH public keys as authorized_keys lines, validated before they reach
// the jump host: sshd silently ignores a line it cannot read, so a typo would
// lock its owner out with no word why. A line is [options] type base64 [comment];
// the base64 blob is the key in SSH wire format (RFC 4253 §6.6), whose first
// string repeats the type, followed by the type's fields.

export interface AuthorizedKey {
  type: string;
  /** The line as sshd will read it: options, type, blob, comment, single-spaced. */
  line: string;
  comment: string;
}

/** The types sshd accepts, with how their blobs continue after the type. */
const FIELDS: Record<string, (r: WireReader, type: string) => string | undefined> = {
  'ssh-ed25519': (r) => exactLength(r.string(), 32, 'an Ed25519 key'),
  'ssh-rsa': (r) => {
    r.string(); // public exponent
    const n = r.string();
    const bits = mpintBits(n);
    return bits < 1024 ? `an RSA key of ${bits} bits is too short (OpenSSH refuses under 1024)` : undefined;
  },
  'ecdsa-sha2-nistp256': (r, t) => ecdsa(r, t, 65),
  'ecdsa-sha2-nistp384': (r, t) => ecdsa(r, t, 97),
  'ecdsa-sha2-nistp521': (r, t) => ecdsa(r, t, 133),
  'sk-ssh-ed25519@openssh.com': (r) => exactLength(r.string(), 32, 'an Ed25519 key') ?? application(r),
  'sk-ecdsa-sha2-nistp256@openssh.com': (r, t) => ecdsa(r, t, 65) ?? application(r),
};

const DSA = 'ssh-dss';

/** Parses one authorized_keys line; throws with the reason it is not one. */
export function parseAuthorizedKey(input: string): AuthorizedKey {
  if (/[\r\n]/.test(input.trim())) throw new Error('holds more than one line (give each key on its own)');
  const line = input.trim();
  if (!line) throw new Error('is empty');
  if (line.startsWith('#')) throw new Error('is a comment, not a key');
  const tokens = line.split(/[ \t]+/);
  // The type is the first token naming one; anything before it is sshd's options field.
  const at = tokens.findIndex((t) => t in FIELDS || t === DSA || t.endsWith('-cert-v01@openssh.com'));
  if (at === -1) throw new Error(`names no key type sshd knows (${Object.keys(FIELDS).join(', ')})`);
  const type = tokens[at]!;
  if (type === DSA) throw new Error('is a DSA key, which OpenSSH no longer accepts; use ed25519');
  if (!(type in FIELDS)) throw new Error(`is a ${type} certificate; give the plain public key`);
  const options = tokens.slice(0, at).join(' ');
  if (options && !/^[A-Za-z-]+(=("[^"]*"|[^\s,]*))?(,[A-Za-z-]+(=("[^"]*"|[^\s,]*))?)*$/.test(options))
    throw new Error(`starts with "${options}", which is neither a key type nor sshd options`);
  const b64 = tokens[at + 1];
  if (!b64) throw new Error(`has the type ${type} but no key after it`);
  const blob = strictBase64(b64);
  if (!blob) throw new Error(`its ${type} key is not valid base64 (cut short or mistyped?)`);
  const r = new WireReader(blob);
  let why: string | undefined;
  try {
    const inner = r.string().toString('latin1');
    if (inner !== type) throw new Error(`says ${type} but the key inside is ${inner || 'not a key'}`);
    why = FIELDS[type]!(r, type);
    if (!why && r.remaining() > 0) why = `its ${type} key has ${r.remaining()} stray bytes at the end`;
  } catch (err) {
    if (err instanceof WireEnd) why = `its ${type} key is cut short`;
    else throw err;
  }
  if (why) throw new Error(why);
  const comment = tokens.slice(at + 2).join(' ');
  return { type, comment, line: [options, type, b64, comment].filter(Boolean).join(' ') };
}

class WireEnd extends Error {}

class WireReader {
  private at = 0;
  private readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  string(): Buffer {
    if (this.at + 4 > this.buf.length) throw new WireEnd();
    const len = this.buf.readUInt32BE(this.at);
    const end = this.at + 4 + len;
    if (end > this.buf.length) throw new WireEnd();
    const s = this.buf.subarray(this.at + 4, end);
    this.at = end;
    return s;
  }
  remaining(): number {
    return this.buf.length - this.at;
  }
}

function strictBase64(s: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(s) || s.length % 4 !== 0) return undefined;
  const b = Buffer.from(s, 'base64');
  return b.toString('base64') === s ? b : undefined;
}

function exactLength(b: Buffer, n: number, what: string): string | undefined {
  return b.length === n ? undefined : `${what} must be ${n} bytes, this one is ${b.length}`;
}

function mpintBits(b: Buffer): number {
  let i = 0;
  while (i < b.length && b[i] === 0) i++;
  if (i === b.length) return 0;
  return (b.length - i - 1) * 8 + (32 - Math.clz32(b[i]!));
}

function ecdsa(r: WireReader, type: string, pointBytes: number): string | undefined {
  const curve = r.string().toString('latin1');
  const want = /nistp\d+/.exec(type)![0];
  if (curve !== want) return `says curve ${want} but the key inside is on ${curve || 'no curve'}`;
  const q = r.string();
  return q.length === pointBytes && q[0] === 4
    ? undefined
    : `its ${want} point is not an uncompressed ${pointBytes}-byte point`;
}

function application(r: WireReader): string | undefined {
  return r.string().length === 0 ? 'its security-key application is empty' : undefined;
}
