// A Flatcar release in the host's cache (VmMounts.osCache, a hostPath every VM
// pod of a host shares): downloaded once, verified with gpgv against the
// image-signing key, and used only whole. The files land in a private
// .partial- folder beside the cache and that folder is renamed to <version>/
// only once every signature verified, so a bad signature, a truncated file or
// a crash mid-download never leaves a <version>/ behind. A lock file (O_EXCL,
// its mtime kept fresh while the download runs) makes the other pods of the
// host wait instead of downloading too; a lock whose holder died goes stale
// and is taken over. Correctness never rests on the lock: two downloads that
// raced would each rename a verified folder, and the second finds the first.
import { execFile } from 'node:child_process';
import {
  closeSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream } from 'node:stream/web';
import {
  cacheHolds,
  dearmor,
  FLATCAR_PXE,
  flatcarBootFiles,
  releaseUrls,
  signatureOf,
} from './os-release.ts';

export interface FlatcarCacheInputs {
  /** The host's cache (VmMounts.osCache); the release lands in <cacheDir>/<version>/. */
  cacheDir: string;
  /** The base URL holding <version>/ folders (OS_MIRROR). */
  mirror: string;
  version: string;
  /** The armored OpenPGP public key every signature must verify against. */
  key: string;
  log?: (line: string) => void;
  /** The gpgv binary. */
  gpgv?: string;
  /** A lock untouched this long is a dead holder's (its heartbeat refreshes it every staleMs/6). */
  staleMs?: number;
  /** How often a waiting pod looks again. */
  pollMs?: number;
  /** One file's whole download (the initramfs is ~400 MB). */
  downloadTimeoutMs?: number;
}

export interface CachedRelease {
  kernel: string;
  initrd: string;
  /** download: this call fetched it; cache: it was there (verified again, no network). */
  source: 'download' | 'cache';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function ensureFlatcarRelease(i: FlatcarCacheInputs): Promise<CachedRelease> {
  const urls = releaseUrls(i.mirror, i.version); // refuses a bad version before it names a path
  const dir = join(i.cacheDir, i.version);
  const lockPath = join(i.cacheDir, `${i.version}.lock`);
  const staleMs = i.staleMs ?? 60_000;
  mkdirSync(i.cacheDir, { recursive: true });
  const found = (source: CachedRelease['source']) => ({ ...flatcarBootFiles(i.cacheDir, i.version), source });
  for (;;) {
    if (await cachedAndValid(i, dir)) return found('cache');
    const lock = takeLock(lockPath, staleMs);
    if (lock) {
      try {
        if (await cachedAndValid(i, dir)) return found('cache');
        await downloadRelease(i, urls, dir);
        return found('download');
      } finally {
        lock.release();
      }
    }
    i.log?.(`flatcar ${i.version}: another pod of this host is downloading it; waiting`);
    await waitForLock(lockPath, dir, staleMs, i.pollMs ?? 1_000, i.log);
  }
}

/** A whole release folder whose signatures still verify; one that fails is removed, to be fetched again. */
async function cachedAndValid(i: FlatcarCacheInputs, dir: string): Promise<boolean> {
  if (!existsSync(dir) || !cacheHolds(readdirSync(dir))) return false;
  try {
    await verifyRelease(dir, i.key, i.gpgv);
    return true;
  } catch (e) {
    if (e instanceof VerifierMissing) throw e;
    i.log?.(
      `flatcar ${i.version}: the cached release fails verification, removing it: ${(e as Error).message}`,
    );
    removeAside(dir);
    return false;
  }
}

/** Renamed first, so no reader ever sees a half-removed folder under its real name. */
function removeAside(path: string): void {
  const aside = `${path}.removed-${process.pid}-${Date.now()}`;
  try {
    renameSync(path, aside);
  } catch {
    return; // someone else removed it
  }
  rmSync(aside, { recursive: true, force: true });
}

async function downloadRelease(
  i: FlatcarCacheInputs,
  urls: ReturnType<typeof releaseUrls>,
  dir: string,
): Promise<void> {
  const partial = mkdtempSync(join(i.cacheDir, `.partial-${i.version}-`));
  try {
    for (const { name, url } of urls) {
      const started = Date.now();
      const bytes = await downloadFile(url, join(partial, name), i.downloadTimeoutMs ?? 30 * 60_000);
      i.log?.(
        `flatcar ${i.version}: ${url}: ${bytes} bytes in ${((Date.now() - started) / 1000).toFixed(1)} s`,
      );
    }
    await verifyRelease(partial, i.key, i.gpgv);
    try {
      renameSync(partial, dir);
    } catch (e) {
      // A racing download put a verified folder there first: ours is not needed.
      if (!cacheHolds(existsSync(dir) ? readdirSync(dir) : [])) throw e;
    }
    i.log?.(`flatcar ${i.version}: verified and cached in ${dir}`);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
}

async function downloadFile(url: string, file: string, timeoutMs: number): Promise<number> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok || !res.body) throw new Error(`${url}: HTTP ${res.status}`);
  await pipeline(Readable.fromWeb(res.body as ReadableStream<Uint8Array>), createWriteStream(file));
  const { size } = statSync(file);
  const expected = res.headers.get('content-length');
  if (expected !== null && Number(expected) !== size)
    throw new Error(`${url}: ${size} bytes received of ${expected}`);
  return size;
}

/** No gpgv to ask: no verdict on the files, so a cached release is kept. */
export class VerifierMissing extends Error {}

/** gpgv on each file against its detached signature, with a keyring holding only the given key. */
export async function verifyRelease(dir: string, key: string, gpgv = 'gpgv'): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'nw-gpgv-'));
  try {
    const keyring = join(home, 'keyring.gpg');
    writeFileSync(keyring, dearmor(key));
    for (const file of [FLATCAR_PXE.kernel, FLATCAR_PXE.initrd]) {
      const args = ['--homedir', home, '--keyring', keyring, join(dir, signatureOf(file)), join(dir, file)];
      await new Promise<void>((resolve, reject) =>
        execFile(gpgv, args, (err, _out, stderr) => {
          if (!err) return resolve();
          // Not a verdict on the file: say so, or a missing tool would read as a bad release.
          if ((err as NodeJS.ErrnoException).code === 'ENOENT')
            return reject(new VerifierMissing(`${gpgv} is not installed: nothing can verify ${file}`));
          reject(new Error(`${file}: signature refused by gpgv: ${stderr.trim() || err.message}`));
        }),
      );
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

interface HeldLock {
  release(): void;
}

/** The lock, if free (or its holder's heartbeat stopped): created with O_EXCL, touched while held. */
function takeLock(path: string, staleMs: number): HeldLock | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'wx');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw e;
  }
  writeFileSync(fd, `${hostname()} ${process.pid}\n`);
  closeSync(fd);
  const heartbeat = setInterval(
    () => {
      const now = new Date();
      try {
        utimesSync(path, now, now);
      } catch {
        // taken over as stale: nothing of ours to refresh
      }
    },
    Math.max(10, Math.floor(staleMs / 6)),
  );
  heartbeat.unref();
  return {
    release() {
      clearInterval(heartbeat);
      rmSync(path, { force: true });
    },
  };
}

/** Until the holder is done (the lock gone, or the release there) or dead (its lock stale, then removed). */
async function waitForLock(
  path: string,
  dir: string,
  staleMs: number,
  pollMs: number,
  log?: (line: string) => void,
): Promise<void> {
  for (;;) {
    if (existsSync(dir) && cacheHolds(readdirSync(dir))) return;
    let age: number;
    try {
      age = Date.now() - statSync(path).mtimeMs;
    } catch {
      return; // released
    }
    if (age > staleMs) {
      log?.(`${path}: untouched for ${Math.round(age / 1000)} s, its holder is gone; taking it over`);
      removeAside(path); // one waiter's rename wins; the others find it gone
      return;
    }
    await sleep(pollMs);
  }
}
