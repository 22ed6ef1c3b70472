// A static binary packed as an image (pause, CoreDNS, the test app), read back
// by GNU tar: the name containerd imports it under, its one layer, user and entrypoint.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { buildStaticImage } from '../../../src/cluster/image/static-image.ts';

const scratch = mkdtempSync(join(tmpdir(), 'nw-static-image-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const binary = join(scratch, 'pause');
writeFileSync(binary, 'not really an ELF file');
chmodSync(binary, 0o700);

/** The archive unpacked; read(path) answers a file of it, blob(digest) a blob parsed as JSON. */
function unpack(archive: Buffer) {
  const dir = mkdtempSync(join(scratch, 'x-'));
  writeFileSync(join(dir, 'image.tar'), archive);
  execFileSync('tar', ['-xf', 'image.tar'], { cwd: dir });
  const read = (path: string) => readFileSync(join(dir, path));
  const blob = (digest: string) => JSON.parse(read(`blobs/${digest.replace(':', '/')}`).toString());
  return { dir, read, blob };
}

describe('a static binary as an image', () => {
  const image = buildStaticImage({ binary, name: 'registry.k8s.io/pause:3.10.2', user: '65535', created: 0 });
  const { dir, read, blob } = unpack(image.archive);
  const index = JSON.parse(read('index.json').toString());

  it('names itself fully for containerd, and by tag for OCI tools', () => {
    assert.equal(index.manifests.length, 1);
    assert.deepEqual(index.manifests[0].annotations, {
      'io.containerd.image.name': 'registry.k8s.io/pause:3.10.2',
      'org.opencontainers.image.ref.name': '3.10.2',
    });
    assert.equal(index.manifests[0].digest, image.digest);
  });

  it('runs the binary at /<its name> as the given user', () => {
    const config = blob(blob(image.digest).config.digest);
    assert.deepEqual(config.config, { User: '65535', Entrypoint: ['/pause'] });
    assert.equal(config.rootfs.diff_ids.length, 1);
  });

  it('holds the binary, executable, and a /tmp anyone may write', () => {
    const layer = blob(image.digest).layers[0].digest.replace(':', '/');
    const listing = execFileSync('tar', ['-tvzf', `blobs/${layer}`], { cwd: dir }).toString();
    assert.match(listing, /^-rwxr-xr-x 0\/0 +22 1970-01-01 00:00 pause$/m);
    assert.match(listing, /^drwxrwxrwt 0\/0 +0 1970-01-01 00:00 tmp\/$/m);
    assert.equal(listing.trim().split('\n').length, 2);
  });

  it('leaves the user to the runtime when none is given, and gives the same bytes twice', () => {
    const again = buildStaticImage({ binary, name: 'localhost/x:1', created: 0 });
    const config = unpack(again.archive).blob(unpack(again.archive).blob(again.digest).config.digest);
    assert.deepEqual(config.config, { Entrypoint: ['/pause'] });
    assert.equal(buildStaticImage({ binary, name: 'localhost/x:1', created: 0 }).digest, again.digest);
  });
});
