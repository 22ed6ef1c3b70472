// A TenantCluster with every service, the hosts it holds, and the real tools
// that judge what is rendered (HAProxy's own config check, ssh-keygen).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TenantCluster } from '../../../../src/api/tenant.ts';
import type { K8sObject } from '../../../../src/runtime/resources.ts';
import type { ClaimedHost } from '../../../../src/tenant/claims.ts';

export const INTERFACE = 'oam-ipv4';

export function tenantCluster(
  services: Partial<NonNullable<TenantCluster['spec']['services']>> = {},
): TenantCluster {
  return {
    apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
    kind: 'TenantCluster',
    metadata: { name: 'blue', namespace: 'tenants', uid: '0b1c2d3e-0000-4000-8000-000000000001' },
    spec: {
      nodes: {},
      services: {
        controlPlaneLoadBalancer: { nodePort: 30000, nodeInterfaceId: INTERFACE },
        workerLoadBalancer: { nodePortRange: { start: 30002, end: 30004 }, nodeInterfaceId: INTERFACE },
        jumpHost: {
          nodePort: 30001,
          nodeInterfaceId: INTERFACE,
          nodeSSHPrivateKeys: 'blue-node-keys',
          image: 'registry.example/jumphost:1.0',
          sshAuthorizedKeys: [],
        },
        ...services,
      },
    },
  } as TenantCluster;
}

export function claimedHost(
  name: string,
  role: ClaimedHost['role'],
  ip: string,
  over: Partial<ClaimedHost> = {},
): ClaimedHost {
  return {
    name,
    namespace: 'metal3',
    role,
    standby: false,
    ips: { [INTERFACE]: ip },
    bmc: {
      address: `redfish://198.18.0.1:8443/redfish/v1/Systems/${name}`,
      username: 'admin',
      password: `pw-${name}`,
    },
    ...over,
  };
}

/** Three control-plane hosts and two workers, as in the anchor's services test. */
export function fleet(): ClaimedHost[] {
  return [
    claimedHost('cp-0', 'ControlPlane', '192.168.10.10'),
    claimedHost('cp-1', 'ControlPlane', '192.168.10.11'),
    claimedHost('cp-2', 'ControlPlane', '192.168.10.12', { standby: true }),
    claimedHost('w-0', 'Worker', '192.168.10.20'),
    claimedHost('w-1', 'Worker', '192.168.10.21'),
  ];
}

export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name);
  if (!o)
    throw new Error(
      `no ${kind} ${name} among ${objects.map((x) => `${x.kind}/${x.metadata?.name}`).join(', ')}`,
    );
  return o;
}

export function secretFile(secret: K8sObject, key: string): string {
  const data = secret.data as Record<string, string>;
  if (data[key] === undefined) throw new Error(`Secret ${secret.metadata?.name} has no ${key}`);
  return Buffer.from(data[key], 'base64').toString('utf8');
}

/** HAProxy's own verdict on a config (haproxy -c): valid, and what it said. */
export function haproxyCheck(config: string): { valid: boolean; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'haproxy-check-'));
  try {
    const file = join(dir, 'haproxy.cfg');
    writeFileSync(file, config);
    const r = spawnSync('haproxy', ['-c', '-f', file], { encoding: 'utf8' });
    if (r.error) throw new Error(`haproxy is not installed (hack/debian-packages.sh): ${r.error.message}`);
    return { valid: r.status === 0, output: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A fresh public key from ssh-keygen, as a user would paste it. */
export function sshPublicKey(
  type: 'ed25519' | 'rsa' | 'ecdsa',
  bits?: number,
  comment = 'user@laptop',
): string {
  const dir = mkdtempSync(join(tmpdir(), 'ssh-key-'));
  try {
    const file = join(dir, 'key');
    execFileSync('ssh-keygen', [
      '-q',
      '-t',
      type,
      ...(bits ? ['-b', String(bits)] : []),
      '-N',
      '',
      '-C',
      comment,
      '-f',
      file,
    ]);
    return readFileSync(`${file}.pub`, 'utf8').trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** ssh-keygen's verdict on a public key line (-l: print its fingerprint). */
export function sshKeygenAccepts(line: string): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'ssh-key-'));
  try {
    writeFileSync(join(dir, 'key.pub'), `${line}\n`);
    return spawnSync('ssh-keygen', ['-l', '-f', join(dir, 'key.pub')]).status === 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
