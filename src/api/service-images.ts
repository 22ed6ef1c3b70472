// The tenant support services' image contract: what the tenant capability
// renders into a service pod and what the images built here (`make
// service-images`, src/cluster/image/service-images.ts) provide. Both sides
// import this file and neither imports the other.
//
// The jump host's image promises: sshd on SSH_PORT, run as root by the image's
// entrypoint with host keys made at start, taking keys only from
// JUMPHOST_FILES.authorizedKeys; python3 and redfishtool for the `host` helper
// (HELPER_DIR/host, which the image carries and the pod mounts over); an ssh
// client that includes SSH_CONFIG_DIR/*.conf. The HAProxy image promises
// `haproxy` on the PATH and runs as no particular user; the pod passes the
// config file with -f.
import { readFileSync } from 'node:fs';

/** The port sshd listens on in the jump host's pod. */
export const SSH_PORT = 22;

/** Where the jump host's pod mounts its files. */
export const JUMPHOST_DIR = '/etc/nodewarden/jumphost';
export const JUMPHOST_FILES = {
  /** OpenSSH authorized_keys lines from spec.services.jumpHost.sshAuthorizedKeys. */
  authorizedKeys: `${JUMPHOST_DIR}/authorized_keys`,
  /** Each host's address and BMC, JSON (the `host` helper reads it). */
  hosts: `${JUMPHOST_DIR}/hosts`,
} as const;
export const NODE_KEYS_DIR = '/etc/nodewarden/node-ssh-keys';
export const SSH_CONFIG_DIR = '/etc/ssh/ssh_config.d';
export const HELPER_DIR = '/usr/local/sbin';

/** Where the HAProxy pod mounts haproxy.cfg (the official image's place, so it runs there too). */
export const HAPROXY_CONFIG_DIR = '/usr/local/etc/haproxy';

/**
 * Built here, not pulled: localhost/ says so, as the operator's own image
 * (localhost/nodewarden) does; the tag is nodewarden's version, so an operator
 * runs the jump host it was released with.
 */
export const JUMPHOST_IMAGE_REPOSITORY = 'localhost/nodewarden-jumphost';
export const HAPROXY_IMAGE_REPOSITORY = 'localhost/nodewarden-haproxy';

export const serviceImageName = (repository: string, version: string) => `${repository}:${version}`;

/** nodewarden's version: package.json sits two folders up from src/api/ and from dist/api/ alike. */
export const NODEWARDEN_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** The jump host's image when spec.services.jumpHost.image is empty. */
export const DEFAULT_JUMPHOST_IMAGE = serviceImageName(JUMPHOST_IMAGE_REPOSITORY, NODEWARDEN_VERSION);
