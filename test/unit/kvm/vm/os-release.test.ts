import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DEFAULT_FLATCAR_MIRROR } from '../../../../src/api/vm-image.ts';
import { DEFAULT_PATHS, type VmConfig, vmConfigFromEnv } from '../../../../src/kvm/vm/config.ts';
import { FLATCAR_IMAGE_SIGNING_KEY, FLATCAR_KEY_FINGERPRINT } from '../../../../src/kvm/vm/flatcar-key.ts';
import {
  cacheHolds,
  dearmor,
  isFlatcarVersion,
  releaseFiles,
  releaseUrls,
} from '../../../../src/kvm/vm/os-release.ts';
import { diskCommands, kernelCommandLine, qemuArgs } from '../../../../src/kvm/vm/qemu-args.ts';
import { gpgMissing, Signer } from './gpg-release.ts';
import { WORKER_ENV } from './vm-env.ts';

const ENV = { ...WORKER_ENV, OS_IMAGE: 'flatcar' };
const values = (argv: string[], flag: string) => argv.flatMap((a, i) => (argv[i - 1] === flag ? [a] : []));

describe('which files a Flatcar release boots from, and from where', () => {
  it('the PXE kernel and initramfs, each with its detached signature', () => {
    assert.deepEqual(releaseFiles(), [
      'flatcar_production_pxe.vmlinuz',
      'flatcar_production_pxe.vmlinuz.sig',
      'flatcar_production_pxe_image.cpio.gz',
      'flatcar_production_pxe_image.cpio.gz.sig',
    ]);
  });

  const urls: Array<[string, string, string]> = [
    [
      'the stable server',
      DEFAULT_FLATCAR_MIRROR,
      'https://stable.release.flatcar-linux.net/amd64-usr/4230.2.0/',
    ],
    [
      'a mirror without its trailing slash',
      'http://mirror.example/flatcar',
      'http://mirror.example/flatcar/4230.2.0/',
    ],
    ['a mirror at its root', 'https://mirror.example', 'https://mirror.example/4230.2.0/'],
  ];
  for (const [name, mirror, folder] of urls)
    it(`${name}: <mirror>/<version>/<file>`, () => {
      assert.deepEqual(
        releaseUrls(mirror, '4230.2.0').map((u) => u.url),
        releaseFiles().map((f) => `${folder}${f}`),
      );
    });

  const refused: Array<[string, string, RegExp]> = [
    ['https://m.example/', '../4230.2.0', /not a Flatcar version/],
    ['https://m.example/', 'current', /not a Flatcar version/],
    ['https://m.example/', '4230.2', /not a Flatcar version/],
    ['ftp://m.example/', '4230.2.0', /not an http\(s\) URL/],
    ['m.example', '4230.2.0', /not a URL/],
  ];
  for (const [mirror, version, error] of refused)
    it(`refuses ${mirror} ${version}`, () => assert.throws(() => releaseUrls(mirror, version), error));

  const versions: Array<[string, boolean]> = [
    ['4230.2.0', true],
    ['3975.2.2', true],
    ['4230.2.0/..', false],
    ['', false],
    ['v4230.2.0', false],
  ];
  for (const [v, ok] of versions)
    it(`"${v}" is ${ok ? '' : 'not '}a version`, () => assert.equal(isFlatcarVersion(v), ok));
});

describe('whether the cache holds a release', () => {
  const table: Array<[string, string[], boolean]> = [
    ['every file and signature', releaseFiles(), true],
    ['and other files besides', [...releaseFiles(), 'version.txt'], true],
    ['a signature missing', releaseFiles().slice(0, 3), false],
    ['nothing', [], false],
  ];
  for (const [name, entries, holds] of table) it(name, () => assert.equal(cacheHolds(entries), holds));
});

describe('how QEMU boots each OS', () => {
  const flatcar = vmConfigFromEnv(ENV);
  const debian: VmConfig = vmConfigFromEnv({ ...ENV, OS_IMAGE: 'debian' });
  const argv = (c: VmConfig) =>
    qemuArgs({ config: c, paths: DEFAULT_PATHS, accel: 'qemu', mac: '0a:58:0a:f4:01:05', tap: 'tap-vm' });

  const lines: Array<[string, 'debian' | 'flatcar', string]> = [
    [
      'debian: its root disk by serial',
      'debian',
      'root=/dev/disk/by-id/virtio-rootfs rw console=ttyS0 net.ifnames=0 panic=10',
    ],
    [
      "flatcar: its PXE first boot, Ignition from QEMU's fw_cfg",
      'flatcar',
      'flatcar.first_boot=1 flatcar.oem.id=qemu ignition.platform.id=qemu console=ttyS0 net.ifnames=0 panic=10',
    ],
  ];
  for (const [name, os, line] of lines)
    it(`the kernel command line, ${name}`, () => assert.equal(kernelCommandLine(os), line));

  it('flatcar: the cached release of OS_VERSION, from the host cache', () => {
    const a = argv(flatcar);
    assert.deepEqual(values(a, '-kernel'), [
      '/var/cache/nodewarden/os/4230.2.0/flatcar_production_pxe.vmlinuz',
    ]);
    assert.deepEqual(values(a, '-initrd'), [
      '/var/cache/nodewarden/os/4230.2.0/flatcar_production_pxe_image.cpio.gz',
    ]);
    assert.deepEqual(values(a, '-append'), [kernelCommandLine('flatcar')]);
    assert.equal(values(a, '-fw_cfg').length, 3, 'the Ignition config under both names, and the hostname');
  });

  it('debian: exactly the OS image the VM image carries', () => {
    const a = argv(debian);
    assert.deepEqual(values(a, '-kernel'), ['/var/lib/nodewarden/os/vmlinuz']);
    assert.deepEqual(values(a, '-initrd'), ['/var/lib/nodewarden/os/initrd.img']);
    assert.deepEqual(values(a, '-append'), [kernelCommandLine('debian')]);
  });

  it('flatcar: the root disk starts empty (no backing OS image)', () => {
    assert.deepEqual(diskCommands(flatcar, DEFAULT_PATHS)[0], [
      'qemu-img',
      'create',
      '-q',
      '-f',
      'qcow2',
      '/var/lib/vm/root.qcow2',
      '20G',
    ]);
  });

  it('flatcar: reads the mirror and key file, and needs a version', () => {
    assert.deepEqual(flatcar.flatcar, { mirror: DEFAULT_FLATCAR_MIRROR });
    assert.deepEqual(
      vmConfigFromEnv({ ...ENV, OS_MIRROR: 'http://m.example/', OS_KEYRING: '/etc/key.asc' }).flatcar,
      {
        mirror: 'http://m.example/',
        keyring: '/etc/key.asc',
      },
    );
    assert.equal(debian.flatcar, undefined);
    assert.throws(() => vmConfigFromEnv({ ...ENV, OS_VERSION: '' }), /OS_VERSION is not set/);
    assert.throws(
      () => vmConfigFromEnv({ ...ENV, OS_VERSION: 'latest' }),
      /OS_VERSION=latest is not a Flatcar version/,
    );
  });
});

const skip = gpgMissing ? `no ${gpgMissing} (hack/debian-packages.sh installs it)` : false;
describe('the keyring gpgv reads', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'nw-dearmor-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is the binary form of the armored key, byte for byte as gpg exports it', () => {
    const signer = new Signer('Dearmor <dearmor@example.test>');
    try {
      assert.deepEqual(dearmor(signer.publicKey()), signer.gpg('--export', signer.uid));
    } finally {
      signer.close();
    }
  });

  it("holds Flatcar's image-signing key by its published fingerprint", () => {
    const file = join(dir, 'flatcar.gpg');
    writeFileSync(file, dearmor(FLATCAR_IMAGE_SIGNING_KEY));
    const colons = execFileSync('gpg', ['--homedir', dir, '--with-colons', '--show-keys', file]).toString();
    const fingerprints = colons.split('\n').filter((l) => l.startsWith('fpr:'));
    assert.equal(fingerprints[0]?.split(':')[9], FLATCAR_KEY_FINGERPRINT);
    assert.match(colons, /uid:.*Flatcar Buildbot \(Official Builds\) <buildbot@flatcar-linux\.org>/);
  });

  it('refuses a block whose checksum fails, or no block at all', () => {
    const armored = FLATCAR_IMAGE_SIGNING_KEY.replace(/^=.*$/m, '=AAAA');
    assert.throws(() => dearmor(armored), /fails its checksum/);
    assert.throws(() => dearmor('not a key'), /no armored OpenPGP public key block/);
  });
});
