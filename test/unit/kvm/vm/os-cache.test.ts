// The Flatcar download path of the VM image against real gpg/gpgv and a real
// HTTP server on loopback: a throwaway key signs a small stand-in release,
// and ensureFlatcarRelease must cache exactly what verifies, once per host.
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ensureFlatcarRelease, type FlatcarCacheInputs } from '../../../../src/kvm/vm/os-cache.ts';
import { FLATCAR_PXE, releaseFiles } from '../../../../src/kvm/vm/os-release.ts';
import { gpgMissing, LoopbackMirror, Signer, signedRelease } from './gpg-release.ts';

const skip = gpgMissing ? `no ${gpgMissing} (hack/debian-packages.sh installs it)` : false;
if (skip) console.log(`# Flatcar download and verification: skipped: ${skip}`);

const VERSION = '4230.2.0';
const root = mkdtempSync(join(tmpdir(), 'nw-os-cache-'));
let release: Signer;
let stranger: Signer;
let good: Map<string, Buffer>;
let cacheDir: string;
let n = 0;

before(() => {
  if (skip) return;
  release = new Signer('Release Builds <release@example.test>');
  stranger = new Signer('Someone Else <else@example.test>');
  good = signedRelease(release);
});
after(() => {
  release?.close();
  stranger?.close();
  rmSync(root, { recursive: true, force: true });
});
// Each test its own host cache.
beforeEach(() => {
  cacheDir = join(root, `cache-${++n}`);
});

const inputs = (mirror: string, extra: Partial<FlatcarCacheInputs> = {}): FlatcarCacheInputs => ({
  cacheDir,
  mirror,
  version: VERSION,
  key: release.publicKey(),
  staleMs: 600,
  pollMs: 20,
  ...extra,
});
/** Whatever is in the cache folder: a refused release must leave nothing, not even a partial folder or a lock. */
const cacheEntries = () => (existsSync(cacheDir) ? readdirSync(cacheDir) : []);

async function withMirror<T>(files: Map<string, Buffer>, fn: (m: LoopbackMirror, url: string) => Promise<T>) {
  const mirror = new LoopbackMirror(VERSION, files);
  const url = await mirror.start();
  try {
    return await fn(mirror, url);
  } finally {
    await mirror.stop();
  }
}

describe('a Flatcar release in the host cache', { skip, timeout: 60_000 }, () => {
  it('downloads, verifies and caches a good release, then serves it from the cache without the network', async () => {
    const first = await withMirror(good, async (mirror, url) => {
      const r = await ensureFlatcarRelease(inputs(url));
      assert.equal(mirror.totalHits(), 4, 'each file and signature fetched once');
      return { r, url };
    });
    assert.equal(first.r.source, 'download');
    assert.equal(first.r.kernel, join(cacheDir, VERSION, FLATCAR_PXE.kernel));
    assert.deepEqual(readFileSync(first.r.initrd), good.get(FLATCAR_PXE.initrd));
    assert.deepEqual(cacheEntries(), [VERSION]);
    assert.deepEqual(readdirSync(join(cacheDir, VERSION)).sort(), releaseFiles().sort());
    // The mirror is gone: a second VM of the host boots from the cache.
    const second = await ensureFlatcarRelease(inputs(first.url));
    assert.equal(second.source, 'cache');
    assert.equal(second.initrd, first.r.initrd);
  });

  const refusals: Array<[string, () => Map<string, Buffer>, RegExp]> = [
    [
      'a tampered initramfs',
      () =>
        new Map(good).set(
          FLATCAR_PXE.initrd,
          Buffer.concat([good.get(FLATCAR_PXE.initrd) ?? Buffer.alloc(0), Buffer.from('x')]),
        ),
      /flatcar_production_pxe_image\.cpio\.gz: signature refused by gpgv: .*BAD signature/s,
    ],
    [
      'a truncated initramfs',
      () =>
        new Map(good).set(
          FLATCAR_PXE.initrd,
          (good.get(FLATCAR_PXE.initrd) ?? Buffer.alloc(0)).subarray(0, 1000),
        ),
      /flatcar_production_pxe_image\.cpio\.gz: signature refused by gpgv/,
    ],
    [
      'a kernel signed by another key',
      () => {
        const dir = mkdtempSync(join(root, 'other-'));
        writeFileSync(join(dir, 'k'), good.get(FLATCAR_PXE.kernel) ?? '');
        return new Map(good).set(`${FLATCAR_PXE.kernel}.sig`, stranger.sign(join(dir, 'k')));
      },
      /flatcar_production_pxe\.vmlinuz: signature refused by gpgv: .*No public key/s,
    ],
    [
      'a release missing its signature',
      () => {
        const m = new Map(good);
        m.delete(`${FLATCAR_PXE.initrd}.sig`);
        return m;
      },
      /cpio\.gz\.sig: HTTP 404/,
    ],
  ];
  for (const [what, files, error] of refusals)
    it(`refuses ${what} and leaves nothing in the cache`, async () => {
      await withMirror(files(), async (_m, url) => {
        await assert.rejects(ensureFlatcarRelease(inputs(url)), error);
      });
      assert.deepEqual(cacheEntries(), []);
    });

  it('a cached release that no longer verifies is removed and downloaded again', async () => {
    await withMirror(good, async (mirror, url) => {
      await ensureFlatcarRelease(inputs(url));
      writeFileSync(join(cacheDir, VERSION, FLATCAR_PXE.kernel), 'tampered on the host');
      const again = await ensureFlatcarRelease(inputs(url));
      assert.equal(again.source, 'download');
      assert.equal(mirror.totalHits(), 8);
      assert.deepEqual(readFileSync(again.kernel), good.get(FLATCAR_PXE.kernel));
    });
  });

  it('two VM pods of one host starting together download the release once', async () => {
    await withMirror(good, async (mirror, url) => {
      mirror.delayMs = 150; // the first holds the lock long enough for the second to find it
      const [a, b] = await Promise.all([
        ensureFlatcarRelease(inputs(url)),
        ensureFlatcarRelease(inputs(url)),
      ]);
      assert.equal(mirror.totalHits(), 4, 'one download of each file between them');
      assert.deepEqual([a.source, b.source].sort(), ['cache', 'download']);
      assert.equal(a.initrd, b.initrd);
      assert.deepEqual(cacheEntries(), [VERSION], 'the lock is gone');
    });
  });

  it('takes over the lock of a pod that died downloading, once it went stale', async () => {
    await withMirror(good, async (mirror, url) => {
      const { mkdirSync } = await import('node:fs');
      mkdirSync(cacheDir, { recursive: true });
      const lock = join(cacheDir, `${VERSION}.lock`);
      writeFileSync(lock, 'a pod that was killed\n');
      const old = new Date(Date.now() - 10_000);
      utimesSync(lock, old, old);
      const r = await ensureFlatcarRelease(inputs(url));
      assert.equal(r.source, 'download');
      assert.equal(mirror.totalHits(), 4);
      assert.deepEqual(cacheEntries(), [VERSION]);
    });
  });

  it('without gpgv, says so, caches nothing and removes nothing', async () => {
    await withMirror(good, async (_m, url) => {
      await assert.rejects(
        ensureFlatcarRelease(inputs(url, { gpgv: 'gpgv-not-installed' })),
        /gpgv-not-installed is not installed: nothing can verify flatcar_production_pxe\.vmlinuz/,
      );
    });
    assert.deepEqual(cacheEntries(), []);
    // A good cached release stays when there is nothing to check it with.
    await withMirror(good, async (_m, url) => ensureFlatcarRelease(inputs(url)));
    await assert.rejects(
      ensureFlatcarRelease(inputs('http://127.0.0.1:9/', { gpgv: 'gpgv-not-installed' })),
      /is not installed/,
    );
    assert.deepEqual(readdirSync(join(cacheDir, VERSION)).sort(), releaseFiles().sort());
  });

  it('refuses a version that is not one before it names a path', async () => {
    await assert.rejects(
      ensureFlatcarRelease(inputs('http://127.0.0.1:9/', { version: '../etc' })),
      /not a Flatcar version/,
    );
    assert.deepEqual(cacheEntries(), []);
  });
});
