// The jump host: an SSH server inside the management cluster from which a
// tenant cluster's machines are reached by name (hostAliases), by key (the
// node keys Secret) and rebooted through their BMCs (the `host` helper).
// Every authorized key is checked first and the first bad one named; like the
// anchor, a bad key stops the jump host from being rendered at all rather
// than rendering it without the key.
// The image's side of the contract is src/api/service-images.ts; an empty
// spec.services.jumpHost.image runs the one `make service-images` builds.
import { DEFAULT_JUMPHOST_IMAGE, SSH_PORT } from '../../api/service-images.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import { bmcEndpoint } from './bmc-address.ts';
import { type ClaimedHost, clusterKey, type TenantCluster, type TenantServicesSpec } from './inputs.ts';
import {
  HELPER_DIR,
  HOST_HELPER,
  hostsFile,
  JUMPHOST_DIR,
  type JumpHostEntry,
  NODE_KEYS_DIR,
  SSH_CONFIG_DIR,
  sshConfig,
} from './jumphost-files.ts';
import {
  missingAddress,
  nameProblem,
  objectMeta,
  type Rendered,
  secretData,
  selectorLabels,
} from './objects.ts';
import { podPlacement } from './placement.ts';
import { parseAuthorizedKey } from './ssh-keys.ts';

/** Which keys users may log in with, or the first one that is not a key and why. */
export function authorizedKeysFile(keys: readonly string[]): { file: string } | { problem: string } {
  const lines: string[] = [];
  for (const [i, key] of keys.entries()) {
    try {
      lines.push(parseAuthorizedKey(key).line);
    } catch (err) {
      const shown = key.trim().length > 40 ? `${key.trim().slice(0, 40)}…` : key.trim();
      return { problem: `sshAuthorizedKeys[${i}] ("${shown}") ${(err as Error).message}` };
    }
  }
  return { file: lines.map((l) => `${l}\n`).join('') };
}

type JumpHostSpec = NonNullable<TenantServicesSpec['jumpHost']>;

/** @param bmcLoopbackAt where the pod reaches a BMC on the operator's loopback (see bmcEndpoint). */
export function jumpHost(
  tc: TenantCluster,
  hosts: readonly ClaimedHost[],
  privateKeyNames: readonly string[] | undefined,
  bmcLoopbackAt?: string,
): Rendered | undefined {
  const spec = tc.spec.services?.jumpHost;
  if (!spec) return undefined;
  const bad = nameProblem(tc, 'jumphost');
  if (bad) return { problem: bad };
  const keys = authorizedKeysFile(spec.sshAuthorizedKeys ?? []);
  if ('problem' in keys) return { problem: keys.problem };
  if (!privateKeyNames?.length)
    return { problem: `Secret ${spec.nodeSSHPrivateKeys} (nodeSSHPrivateKeys) is missing or holds no key` };
  const entries = jumpHostEntries(hosts, spec.nodeInterfaceId, bmcLoopbackAt);
  if ('missing' in entries) return { problem: missingAddress(entries.missing, spec.nodeInterfaceId) };

  const { name: cluster, namespace } = clusterKey(tc);
  const secret: K8sObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: objectMeta(tc, 'jumphost'),
    type: 'Opaque',
    data: secretData({
      hosts: hostsFile(entries),
      ssh_config: sshConfig(`TenantCluster ${namespace}/${cluster}`, entries, privateKeyNames),
    }),
  };
  const configMap: K8sObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: objectMeta(tc, 'jumphost'),
    data: { authorized_keys: keys.file, host: HOST_HELPER },
  };
  return { objects: [configMap, secret, jumpHostDeployment(tc, spec, entries), jumpHostService(tc, spec)] };
}

/** Each host the jump host reaches, by name; or the hosts with no address on the interface. */
function jumpHostEntries(
  hosts: readonly ClaimedHost[],
  interfaceId: string,
  bmcLoopbackAt: string | undefined,
): JumpHostEntry[] | { missing: string[] } {
  const entries: JumpHostEntry[] = [];
  const missing: string[] = [];
  for (const h of hosts) {
    const ip = h.ips[interfaceId];
    if (!ip) missing.push(h.name);
    else
      entries.push({
        name: h.name,
        ip,
        bmc: {
          ...bmcEndpoint(h.bmc.address, bmcLoopbackAt),
          username: h.bmc.username,
          password: h.bmc.password,
        },
      });
  }
  if (missing.length) return { missing };
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * One alias per address, naming every host at it: the API server keys hostAliases by ip and
 * refuses an apply with two entries for one (two hosts whose interface shares an address made the
 * jump host's Deployment fail to apply, and the cluster's status stood still).
 */
export function hostAliases(entries: readonly JumpHostEntry[]): { ip: string; hostnames: string[] }[] {
  const byIp = new Map<string, string[]>();
  for (const e of entries) byIp.set(e.ip, [...(byIp.get(e.ip) ?? []), e.name]);
  return [...byIp].map(([ip, hostnames]) => ({ ip, hostnames }));
}

function jumpHostDeployment(
  tc: TenantCluster,
  spec: JumpHostSpec,
  entries: readonly JumpHostEntry[],
): K8sObject {
  const meta = objectMeta(tc, 'jumphost');
  const probe = { tcpSocket: { port: SSH_PORT }, periodSeconds: 10 };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta,
    spec: {
      replicas: 1,
      selector: { matchLabels: selectorLabels(tc, 'jumphost') },
      template: {
        metadata: { labels: objectMeta(tc, 'jumphost').labels },
        spec: {
          ...podPlacement(spec.placement),
          // Mounted files follow the Secret and ConfigMap by themselves; hostAliases roll the pod.
          hostAliases: hostAliases(entries),
          containers: [
            {
              name: 'jumphost',
              image: spec.image || DEFAULT_JUMPHOST_IMAGE,
              ports: [{ name: 'ssh', containerPort: SSH_PORT, protocol: 'TCP' }],
              readinessProbe: probe,
              livenessProbe: { ...probe, failureThreshold: 6 },
              resources: { requests: { cpu: '10m', memory: '32Mi' } },
              volumeMounts: [
                { name: 'jumphost', mountPath: JUMPHOST_DIR, readOnly: true },
                { name: 'ssh-config', mountPath: SSH_CONFIG_DIR, readOnly: true },
                { name: 'helper', mountPath: HELPER_DIR, readOnly: true },
                { name: 'node-ssh-keys', mountPath: NODE_KEYS_DIR, readOnly: true },
              ],
            },
          ],
          volumes: jumpHostVolumes(meta.name, spec.nodeSSHPrivateKeys),
        },
      },
    },
  };
}

/** The pod's files: hosts and authorized_keys, the ssh client's config, the `host` helper, the node keys. */
function jumpHostVolumes(name: string, nodeKeysSecret: string) {
  return [
    {
      name: 'jumphost',
      projected: {
        sources: [
          { secret: { name, items: [{ key: 'hosts', path: 'hosts', mode: 0o440 }] } },
          {
            configMap: {
              name,
              items: [{ key: 'authorized_keys', path: 'authorized_keys', mode: 0o444 }],
            },
          },
        ],
      },
    },
    {
      name: 'ssh-config',
      secret: { secretName: name, items: [{ key: 'ssh_config', path: 'nodewarden.conf' }] },
    },
    { name: 'helper', configMap: { name, items: [{ key: 'host', path: 'host', mode: 0o555 }] } },
    // ssh refuses a private key others can read.
    { name: 'node-ssh-keys', secret: { secretName: nodeKeysSecret, defaultMode: 0o400 } },
  ];
}

function jumpHostService(tc: TenantCluster, spec: JumpHostSpec): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: objectMeta(tc, 'jumphost'),
    spec: {
      type: 'NodePort',
      selector: selectorLabels(tc, 'jumphost'),
      ports: [
        { name: 'ssh', protocol: 'TCP', port: SSH_PORT, targetPort: SSH_PORT, nodePort: spec.nodePort },
      ],
    },
  };
}
