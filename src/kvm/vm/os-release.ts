// Which files a Flatcar release boots from and where they come from, as pure
// functions: the PXE kernel and initramfs with their detached signatures, their
// URLs under a mirror, whether a cache folder holds a whole release, and the
// OpenPGP keyring gpgv reads (binary: gpgv 2.2 refuses an armored one).

/** The release's PXE kernel and initramfs, as Flatcar names them. */
export const FLATCAR_PXE = {
  kernel: 'flatcar_production_pxe.vmlinuz',
  initrd: 'flatcar_production_pxe_image.cpio.gz',
} as const;

export const signatureOf = (file: string) => `${file}.sig`;

/** What a cached release folder holds: each file and its signature, kept so every use can re-verify. */
export function releaseFiles(): string[] {
  return [FLATCAR_PXE.kernel, FLATCAR_PXE.initrd].flatMap((f) => [f, signatureOf(f)]);
}

// A version names a folder on the mirror and in the cache: nothing but dotted numbers.
const VERSION = /^[0-9]{1,6}\.[0-9]{1,4}\.[0-9]{1,4}$/;

export function isFlatcarVersion(version: string): boolean {
  return VERSION.test(version);
}

/** The URL of each release file: <mirror>/<version>/<file>, the mirror an http(s) base. */
export function releaseUrls(mirror: string, version: string): Array<{ name: string; url: string }> {
  if (!isFlatcarVersion(version)) throw new Error(`"${version}" is not a Flatcar version like 4230.2.0`);
  let base: URL;
  try {
    base = new URL(mirror.endsWith('/') ? mirror : `${mirror}/`);
  } catch {
    throw new Error(`"${mirror}" is not a URL`);
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:')
    throw new Error(`"${mirror}" is not an http(s) URL`);
  return releaseFiles().map((name) => ({ name, url: new URL(`${version}/${name}`, base).href }));
}

/** A release folder is used only whole: it is renamed into place once every file verified. */
export function cacheHolds(entries: readonly string[]): boolean {
  const present = new Set(entries);
  return releaseFiles().every((f) => present.has(f));
}

/** The kernel and initramfs of a cached release. */
export function flatcarBootFiles(cacheDir: string, version: string) {
  return {
    kernel: `${cacheDir}/${version}/${FLATCAR_PXE.kernel}`,
    initrd: `${cacheDir}/${version}/${FLATCAR_PXE.initrd}`,
  };
}

/** RFC 4880's CRC-24 of an armored block's payload. */
function crc24(data: Uint8Array): number {
  let crc = 0xb704ce;
  for (const byte of data) {
    crc ^= byte << 16;
    for (let i = 0; i < 8; i++) {
      crc <<= 1;
      if (crc & 0x1000000) crc ^= 0x1864cfb;
    }
  }
  return crc & 0xffffff;
}

/** An ASCII-armored public key block as the binary keyring gpgv reads; a damaged block is refused. */
export function dearmor(armored: string): Buffer {
  const lines = armored.split(/\r?\n/).map((l) => l.trim());
  const begin = lines.indexOf('-----BEGIN PGP PUBLIC KEY BLOCK-----');
  const end = lines.indexOf('-----END PGP PUBLIC KEY BLOCK-----');
  if (begin < 0 || end < begin) throw new Error('no armored OpenPGP public key block');
  const body = lines.slice(begin + 1, end);
  const blank = body.indexOf(''); // armor headers end at the first blank line
  const payload = body.slice(blank + 1).filter((l) => l !== '');
  const checksum = payload.at(-1)?.startsWith('=') ? payload.pop()?.slice(1) : undefined;
  const data = Buffer.from(payload.join(''), 'base64');
  if (data.length === 0) throw new Error('the armored key block is empty');
  if (checksum !== undefined && Buffer.from(checksum, 'base64').readUIntBE(0, 3) !== crc24(data))
    throw new Error('the armored key block fails its checksum');
  return data;
}
