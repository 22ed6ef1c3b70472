// The tenant services' images over a stand-in Debian root (the real one is
// mmdebstrap's, proven on real nodes by test/integration/tenant-real-nodes.test.ts):
// the names the renderer defaults to, the jump host's sshd taking keys only from
// where the pod mounts them, host keys made at start rather than baked in, and
// the same bytes twice.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  DEFAULT_JUMPHOST_IMAGE,
  JUMPHOST_FILES,
  NODEWARDEN_VERSION,
} from '../../../src/api/service-images.ts';
import { buildHAProxyImage, buildJumpHostImage } from '../../../src/cluster/image/service-images.ts';
import { HOST_HELPER } from '../../../src/tenant/services/jumphost-files.ts';

const scratch = mkdtempSync(join(tmpdir(), 'nw-service-images-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const base = join(scratch, 'base');
mkdirSync(join(base, 'usr/sbin'), { recursive: true });
mkdirSync(join(base, 'usr/share/doc/x'), { recursive: true });
writeFileSync(join(base, 'usr/sbin/sshd'), 'not really sshd');
writeFileSync(join(base, 'usr/share/doc/x/README'), 'left out');
const inputs = { base, packages: 'openssh-server', version: NODEWARDEN_VERSION, created: 0 };

/** Each layer's files (path → text) and the image's config. */
function unpack(archive: Buffer) {
  const dir = mkdtempSync(join(scratch, 'x-'));
  writeFileSync(join(dir, 'image.tar'), archive);
  execFileSync('tar', ['-xf', 'image.tar'], { cwd: dir });
  const blob = (digest: string) => readFileSync(join(dir, `blobs/${digest.replace(':', '/')}`));
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
  const manifest = JSON.parse(blob(index.manifests[0].digest).toString());
  const layers = (manifest.layers as { digest: string }[]).map((l, i) => {
    const out = join(dir, `layer-${i}`);
    mkdirSync(out);
    execFileSync('tar', ['-xzf', join(dir, `blobs/${l.digest.replace(':', '/')}`)], { cwd: out });
    return (path: string) => readFileSync(join(out, path), 'utf8');
  });
  const listing = (i: number) =>
    execFileSync('tar', [
      '-tzf',
      join(dir, `blobs/${manifest.layers[i].digest.replace(':', '/')}`),
    ]).toString();
  return {
    name: index.manifests[0].annotations['io.containerd.image.name'],
    config: JSON.parse(blob(manifest.config.digest).toString()).config,
    layers,
    listing,
  };
}

describe('the jump host image', () => {
  const image = buildJumpHostImage({ ...inputs, hostHelper: HOST_HELPER });
  const { name, config, layers, listing } = unpack(image.archive);

  it('is the image the renderer runs when jumpHost.image is empty', () => {
    assert.equal(name, DEFAULT_JUMPHOST_IMAGE);
  });

  it("takes keys only from the pod's authorized_keys, never a password", () => {
    const sshd = layers[1]!('etc/ssh/sshd_config');
    assert.match(sshd, new RegExp(`^AuthorizedKeysFile ${JUMPHOST_FILES.authorizedKeys}$`, 'm'));
    assert.match(sshd, /^PasswordAuthentication no$/m);
    assert.match(sshd, /^PermitRootLogin prohibit-password$/m);
  });

  it('makes its host keys when it starts, so no two jump hosts share them', () => {
    assert.deepEqual(config.Entrypoint, ['/usr/local/bin/nodewarden-jumphost']);
    assert.match(
      layers[1]!('usr/local/bin/nodewarden-jumphost'),
      /ssh-keygen -A[\s\S]*exec \/usr\/sbin\/sshd -D -e/,
    );
    assert.doesNotMatch(listing(0) + listing(1), /ssh_host_/);
  });

  it('carries the host helper the operator renders, and leaves the docs out', () => {
    assert.equal(layers[1]!('usr/local/sbin/host'), HOST_HELPER);
    assert.match(listing(0), /usr\/sbin\/sshd/);
    assert.doesNotMatch(listing(0), /usr\/share\/doc/);
  });

  it('gives the same bytes twice', () => {
    assert.equal(buildJumpHostImage({ ...inputs, hostHelper: HOST_HELPER }).digest, image.digest);
  });
});

describe('the HAProxy image', () => {
  it('runs haproxy as nobody', () => {
    const { name, config } = unpack(buildHAProxyImage({ ...inputs, packages: 'haproxy' }).archive);
    assert.equal(name, `localhost/nodewarden-haproxy:${NODEWARDEN_VERSION}`);
    assert.equal(config.User, '65534:65534');
    assert.deepEqual(config.Entrypoint, ['/usr/sbin/haproxy']);
  });
});
