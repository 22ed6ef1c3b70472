// The image packer's tar and layers, read back by GNU tar (the referee nobody
// here wrote): names of any length, modes, links, owners and times as written,
// and the same bytes whatever the machine's umask, file times or disk order.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { buildImage } from '../../../src/cluster/image/oci.ts';
import { type TarEntry, writeTar } from '../../../src/cluster/image/tar.ts';
import { layerEntries } from '../../../src/cluster/image/tree.ts';

const scratch = mkdtempSync(join(tmpdir(), 'nw-tar-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const longDir = `node_modules/${'a-package-with-a-long-name/'.repeat(5)}lib`;
const entries: TarEntry[] = [
  { kind: 'dir', path: 'app', mode: 0o755 },
  { kind: 'file', path: 'app/run', mode: 0o755, data: Buffer.from('#!/bin/sh\n') },
  { kind: 'symlink', path: 'app/link', target: 'run' },
  { kind: 'dir', path: longDir, mode: 0o755 },
  { kind: 'file', path: `${longDir}/index.js`, mode: 0o644, data: Buffer.from('x'.repeat(1000)) },
  { kind: 'symlink', path: 'app/far', target: `../${longDir}/index.js` },
];

function extract(archive: Buffer): string {
  const dir = mkdtempSync(join(scratch, 'x-'));
  writeFileSync(join(dir, '.tar'), archive);
  execFileSync('tar', ['-xf', '.tar', '--same-permissions'], { cwd: dir });
  return dir;
}

describe('the image tar writer, read by GNU tar', () => {
  it('holds files, folders and links, long names included, as written', () => {
    const dir = extract(writeTar(entries, 1_700_000_000));
    assert.equal(readFileSync(join(dir, 'app/run'), 'utf8'), '#!/bin/sh\n');
    assert.equal(statSync(join(dir, 'app/run')).mode & 0o777, 0o755);
    assert.equal(readlinkSync(join(dir, 'app/link')), 'run');
    assert.equal(readFileSync(join(dir, longDir, 'index.js'), 'utf8'), 'x'.repeat(1000));
    assert.equal(readlinkSync(join(dir, 'app/far')), `../${longDir}/index.js`);
    assert.equal(statSync(join(dir, 'app/run')).mtimeMs, 1_700_000_000_000);
  });

  it('names root as every owner and carries no user or group name', () => {
    const listing = execFileSync('tar', ['-tvf', '-', '--numeric-owner'], {
      input: writeTar(entries, 0),
    }).toString();
    const owners = new Set(
      listing
        .trim()
        .split('\n')
        .map((l) => l.split(/\s+/)[1]),
    );
    assert.deepEqual([...owners], ['0/0']);
  });
});

/** The same tree written twice on disk, with different times, umasks and creation orders. */
function makeTree(root: string, order: 'forward' | 'backward', when: number): void {
  const files = ['b/two.js', 'a/one.js', 'a/bin.sh', 'c.json'];
  for (const f of order === 'forward' ? files : [...files].reverse()) {
    mkdirSync(join(root, f, '..'), { recursive: true });
    writeFileSync(join(root, f), f);
    chmodSync(
      join(root, f),
      f.endsWith('.sh') ? (order === 'forward' ? 0o755 : 0o700) : order === 'forward' ? 0o644 : 0o600,
    );
    utimesSync(join(root, f), when, when);
  }
  symlinkSync('a/one.js', join(root, 'link.js'));
}

describe('an image from the same files', () => {
  it('has the same digest whatever the disk says of times, modes and order', () => {
    const one = join(scratch, 'one');
    const two = join(scratch, 'two');
    makeTree(one, 'forward', 1_000);
    makeTree(two, 'backward', 2_000_000);
    const image = (from: string) =>
      buildImage({
        names: ['docker.io/library/probe:1'],
        created: 42,
        layers: [{ entries: layerEntries([{ from, to: 'app' }]), createdBy: 'test' }],
        config: { Cmd: ['x'] },
      });
    const [a, b] = [image(one), image(two)];
    assert.equal(a.digest, b.digest);
    assert.ok(a.archive.equals(b.archive));
    assert.notEqual(
      image(one).digest,
      buildImage({ names: ['docker.io/library/probe:1'], created: 43, layers: [], config: {} }).digest,
    );
  });

  it('lists each parent folder of a destination before what it holds, and leaves out what is skipped', () => {
    const paths = layerEntries([
      { from: join(scratch, 'one'), to: 'usr/local/app', skip: (p) => p.endsWith('/b') },
    ]).map((e) => e.path);
    assert.deepEqual(paths, [
      'usr',
      'usr/local',
      'usr/local/app',
      'usr/local/app/a',
      'usr/local/app/a/bin.sh',
      'usr/local/app/a/one.js',
      'usr/local/app/c.json',
      'usr/local/app/link.js',
    ]);
    const modes = layerEntries([{ from: join(scratch, 'two'), to: 'x' }]).flatMap((e) =>
      e.kind === 'file' ? [[e.path, e.mode]] : [],
    );
    assert.deepEqual(Object.fromEntries(modes), {
      'x/a/bin.sh': 0o755,
      'x/a/one.js': 0o644,
      'x/b/two.js': 0o644,
      'x/c.json': 0o644,
    });
  });
});
