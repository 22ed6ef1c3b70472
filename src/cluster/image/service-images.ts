// The tenant support services' images (`make service-images`, gathered by
// hack/build-service-images.sh): two layers each — Debian's packages as
// mmdebstrap extracts them (no maintainer script runs, so nothing machine- or
// time-specific is made), then the few files those scripts would have written
// and our own. The jump host: sshd, the ssh client, redfishtool and python3,
// the `host` helper; the load balancer: Debian's haproxy. What each promises
// the pods is src/api/service-images.ts.
import {
  HAPROXY_IMAGE_REPOSITORY,
  HELPER_DIR,
  JUMPHOST_FILES,
  JUMPHOST_IMAGE_REPOSITORY,
  SSH_PORT,
  serviceImageName,
} from '../../api/service-images.ts';
import { type BuiltImage, buildImage } from './oci.ts';
import { BASE_SKIP } from './operator-image.ts';
import type { TarEntry } from './tar.ts';
import { layerEntries } from './tree.ts';

export interface ServiceImageInputs {
  /** The Debian root file system (mmdebstrap --variant=extract's output folder). */
  base: string;
  /** The Debian packages in it, for the base layer's history entry. */
  packages: string;
  version: string;
  created: number;
}

const PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const JUMPHOST_START = '/usr/local/bin/nodewarden-jumphost';

/** Accounts base-passwd and openssh-server's scripts would have made: root logs in, sshd drops to its own user. */
const ACCOUNTS = {
  'etc/passwd':
    'root:x:0:0:root:/root:/bin/bash\n' +
    'sshd:x:100:65534::/run/sshd:/usr/sbin/nologin\n' +
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n',
  'etc/group': 'root:x:0:\nnogroup:x:65534:\n',
  // "*": no password can match; not "!", which sshd takes for a locked account and refuses keys too.
  'etc/shadow': 'root:*:0:0:99999:7:::\nsshd:*:0:0:99999:7:::\nnobody:*:0:0:99999:7:::\n',
  'etc/nsswitch.conf': 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n',
};

const SSHD_CONFIG = `# The nodewarden jump host: keys from the TenantCluster only, never a password.
Port ${SSH_PORT}
AuthorizedKeysFile ${JUMPHOST_FILES.authorizedKeys}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# The keys are a volume the kubelet writes: its folders' owners and modes are not the user's to fix.
StrictModes no
PrintMotd no
Subsystem sftp /usr/lib/openssh/sftp-server
`;

// Host keys are made per pod at start: baked into the image, every jump host would share them.
const START = `#!/bin/bash
set -e
ssh-keygen -A
mkdir -p /run/sshd
exec /usr/sbin/sshd -D -e "$@"
`;

export function buildJumpHostImage(inputs: ServiceImageInputs & { hostHelper: string }): BuiltImage {
  const files: TarEntry[] = [
    ...Object.entries(ACCOUNTS).map(([path, text]) => file(path, text, 0o644)),
    file('etc/ssh/sshd_config', SSHD_CONFIG, 0o644),
    file(JUMPHOST_START.slice(1), START, 0o755),
    file(`${HELPER_DIR.slice(1)}/host`, inputs.hostHelper, 0o755),
    // Debian's dash would make /bin/sh in its scripts; ssh's ProxyCommand and python's shell=True need one.
    { kind: 'symlink', path: 'bin/sh', target: 'bash' },
    { kind: 'dir', path: 'root', mode: 0o755 },
  ];
  return buildImage({
    names: [serviceImageName(JUMPHOST_IMAGE_REPOSITORY, inputs.version)],
    created: inputs.created,
    layers: [baseLayer(inputs), { entries: withParents(files), createdBy: 'nodewarden: jump host files' }],
    config: {
      Env: [PATH],
      Entrypoint: [JUMPHOST_START],
      Labels: labels('nodewarden-jumphost', inputs.version),
    },
  });
}

export function buildHAProxyImage(inputs: ServiceImageInputs): BuiltImage {
  return buildImage({
    names: [serviceImageName(HAPROXY_IMAGE_REPOSITORY, inputs.version)],
    created: inputs.created,
    layers: [baseLayer(inputs)],
    config: {
      // Binds no port below 1024 and needs no account: nobody, with every capability dropped by the pod.
      User: '65534:65534',
      Env: [PATH],
      Entrypoint: ['/usr/sbin/haproxy'],
      Labels: labels('nodewarden-haproxy', inputs.version),
    },
  });
}

function baseLayer(inputs: ServiceImageInputs) {
  return {
    entries: layerEntries([{ from: inputs.base, to: '', skip: (p: string) => BASE_SKIP.test(p) }]),
    createdBy: `mmdebstrap --variant=extract --include=${inputs.packages}`,
  };
}

const file = (path: string, text: string, mode: number): TarEntry => ({
  kind: 'file',
  path,
  mode,
  data: Buffer.from(text, 'utf8'),
});

/** The entries with every parent folder listed once, in byte order (as layerEntries gives them). */
function withParents(entries: readonly TarEntry[]): TarEntry[] {
  const byPath = new Map<string, TarEntry>();
  for (const e of entries) {
    const parts = e.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = parts.slice(0, i).join('/');
      if (!byPath.has(dir)) byPath.set(dir, { kind: 'dir', path: dir, mode: 0o755 });
    }
    byPath.set(e.path, e);
  }
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

const labels = (title: string, version: string) => ({
  'org.opencontainers.image.title': title,
  'org.opencontainers.image.version': version,
});
