// A virtual-media image checked against spec.image.checksum before its BMC
// is given it, as Ironic checks the images it boots: metal3's checksum is a
// hex digest, or the URL of a checksum file (sha256sum's lines
// "<digest>  <name>", or one bare digest); checksumType is md5, sha256,
// sha512 or auto (told by the digest's length). The operator fetches the
// image and hashes it as it streams; nothing is stored. Without a checksum
// nothing is fetched (metal3 makes it optional for live-iso).
import { createHash } from 'node:crypto';

export type ChecksumAlgorithm = 'md5' | 'sha256' | 'sha512';

/** Why an image was not taken (what a caller switches on). */
export type ChecksumCause = 'mismatch' | 'unfetchable' | 'badChecksum';

export class ChecksumError extends Error {
  readonly kind: ChecksumCause;
  constructor(cause: ChecksumCause, message: string) {
    super(message);
    this.name = 'ChecksumError';
    this.kind = cause;
  }
}

const BY_LENGTH: Record<number, ChecksumAlgorithm> = { 32: 'md5', 64: 'sha256', 128: 'sha512' };
const FETCH_TIMEOUT_MS = 600_000;

/** The algorithm for `digest` as checksumType names it (auto or none: by the digest's length), or undefined. */
export function checksumAlgorithm(digest: string, type: string | undefined): ChecksumAlgorithm | undefined {
  const t = (type ?? 'auto').toLowerCase();
  if (t === 'auto') return BY_LENGTH[digest.length];
  if (t === 'md5' || t === 'sha256' || t === 'sha512') return t;
  return undefined;
}

/** The digest a checksum file gives for the image at `imageUrl`: its line naming the image's file, or its one bare digest. */
export function digestFromChecksumFile(text: string, imageUrl: string): string | undefined {
  const name = decodeURIComponent(new URL(imageUrl).pathname.split('/').pop() ?? '');
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  for (const l of lines) {
    const m = l.match(/^([0-9a-fA-F]+)\s+\*?(.+)$/);
    if (m && m[2]!.split('/').pop() === name) return m[1]!.toLowerCase();
  }
  const bare = lines.length === 1 ? lines[0]!.match(/^([0-9a-fA-F]+)$/) : null;
  return bare ? bare[1]!.toLowerCase() : undefined;
}

export interface ImageToCheck {
  url: string;
  checksum?: string | undefined;
  checksumType?: string | undefined;
}

/** The digest the checksum field gives: itself, or what the file at its URL says for the image. */
async function wantedDigest(image: ImageToCheck & { checksum: string }): Promise<string> {
  if (!/^https?:\/\//.test(image.checksum)) return image.checksum.trim().toLowerCase();
  const res = await fetchOrFail(image.checksum, 'checksum file');
  const digest = digestFromChecksumFile(await res.text(), image.url);
  if (!digest)
    throw new ChecksumError(
      'badChecksum',
      `checksum file ${image.checksum} names no digest for ${image.url}`,
    );
  return digest;
}

async function fetchOrFail(url: string, what: string): Promise<Response> {
  const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) }).catch((err: unknown) => {
    throw new ChecksumError('unfetchable', `${what} ${url} cannot be fetched: ${(err as Error).message}`);
  });
  if (!res.ok || !res.body)
    throw new ChecksumError('unfetchable', `${what} ${url} answered HTTP ${res.status}`);
  return res;
}

/**
 * Fetches the image and compares its digest with the one the checksum gives;
 * answers what was verified, or undefined when there is no checksum to verify.
 * A ChecksumError says what was wrong.
 */
export async function verifyImageChecksum(
  image: ImageToCheck,
): Promise<{ algorithm: ChecksumAlgorithm; digest: string } | undefined> {
  if (!image.checksum) return undefined;
  const want = await wantedDigest({ ...image, checksum: image.checksum });
  const algorithm = checksumAlgorithm(want, image.checksumType);
  if (!algorithm || !/^[0-9a-f]+$/.test(want) || BY_LENGTH[want.length] !== algorithm)
    throw new ChecksumError(
      'badChecksum',
      `checksum "${want}" is not a ${image.checksumType ?? 'md5, sha256 or sha512'} digest`,
    );
  const res = await fetchOrFail(image.url, 'image');
  const hash = createHash(algorithm);
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
  const got = hash.digest('hex');
  if (got !== want)
    throw new ChecksumError(
      'mismatch',
      `image ${image.url}: ${algorithm} is ${got}, the checksum says ${want}`,
    );
  return { algorithm, digest: got };
}
