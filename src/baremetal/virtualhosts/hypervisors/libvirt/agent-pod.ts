// What a VirtualHostPool's DaemonSet runs on each node for the libvirt
// backend: `nodewarden vm-host agent` from the operator's image, against the
// node's own libvirtd through its socket (hostPath /run/libvirt), serving
// Redfish on the node's address (host network, as ViNO's sushy does), and
// publishing itself under its node's name. Its folder is a hostPath at the
// same path inside and out: libvirtd, on the host, writes the volumes and
// serial logs at the paths the agent names. And the least it needs to do so:
// a ServiceAccount of the pool's whose one right is to get and patch the
// Secret the agents publish in (a Role and RoleBinding in kube-system), that
// Secret made empty beforehand so no agent needs `create`.
import type { K8sObject } from '../../../../runtime/resources.ts';
import { AGENTS_NAMESPACE, AGENTS_SECRET, agentPaths } from './agent-protocol.ts';

/** Where Debian's libvirtd keeps its sockets. */
export const LIBVIRT_RUN_DIR = '/run/libvirt';
/** The agent's folder on the node: storage pool, serial logs, its CA. */
export const AGENT_DIR = '/var/lib/nodewarden/vm-host';
/**
 * The port Redfish and the console listen on at the node's address (ViNO's sushy: 8000). One
 * per node, not per pool: a node's agent serves all its domains and is published under the
 * node's name, so a second pool's agent there stands by (agent.ts, listenOrStandBy).
 */
export const AGENT_PORT = 8000;
/** The Role every pool's agents share; each pool binds its ServiceAccount to it. */
export const AGENT_ROLE = 'nodewarden-vm-host-agent';

export const agentServiceAccount = (pool: string) => `${pool}-vm-host-agent`;
/** One RoleBinding per pool in kube-system: names carry the pool's namespace, cut to a name's length. */
export const agentRoleBinding = (namespace: string, pool: string) =>
  `${AGENT_ROLE}-${namespace}-${pool}`.slice(0, 253);

/**
 * The node's libvirt socket folder as a volume and the mount's subPathExpr: a
 * fixed folder is the hostPath itself; one naming `$(NODE_NAME)` (nodes that
 * share one file system, as a local cluster's do) is the fixed folder above it
 * with the rest expanded per pod.
 */
export function libvirtRunVolume(dir: string): { hostPath: string; subPathExpr?: string } {
  const at = dir.indexOf('$(NODE_NAME)');
  if (at < 0) return { hostPath: dir };
  const cut = dir.lastIndexOf('/', at);
  return { hostPath: dir.slice(0, cut), subPathExpr: dir.slice(cut + 1) };
}

/** The pod spec's part of the libvirt agent: host network, its container, the node's folders. */
export function vmHostAgentPod(
  pool: string,
  image: string,
  libvirtDir = LIBVIRT_RUN_DIR,
): Record<string, unknown> {
  const run = libvirtRunVolume(libvirtDir);
  const probe = (path: string, periodSeconds: number) => ({
    httpGet: { scheme: 'HTTPS', port: AGENT_PORT, path },
    periodSeconds,
    timeoutSeconds: 5,
    failureThreshold: 3,
  });
  return {
    serviceAccountName: agentServiceAccount(pool),
    hostNetwork: true,
    dnsPolicy: 'ClusterFirstWithHostNet',
    containers: [
      {
        name: 'agent',
        image,
        args: [
          ...['vm-host', 'agent', '--libvirt-uri', `qemu:///system?socket=${LIBVIRT_RUN_DIR}/libvirt-sock`],
          ...['--dir', AGENT_DIR, '--listen', `$(NODE_IP):${AGENT_PORT}`, '--node', '$(NODE_NAME)'],
          '--publish',
        ],
        env: [
          { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          { name: 'NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
        ],
        // No `ports`: on the host network one would be a hostPort, and the scheduler would leave a
        // second pool's agent on a node Pending for good, where it should stand by (AGENT_PORT).
        // Ready once libvirtd answers through the socket; alive while the server answers.
        readinessProbe: probe(agentPaths.healthz, 10),
        livenessProbe: probe('/redfish/v1/', 20),
        // root: the libvirt socket is root's (0700); nothing more: no privilege, no capability.
        securityContext: {
          runAsUser: 0,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        },
        resources: { requests: { cpu: '20m', memory: '64Mi' } },
        volumeMounts: [
          {
            name: 'libvirt-run',
            mountPath: LIBVIRT_RUN_DIR,
            ...(run.subPathExpr ? { subPathExpr: run.subPathExpr } : {}),
          },
          { name: 'agent-dir', mountPath: AGENT_DIR },
          // Virtual media images are fetched here before libvirt takes them.
          { name: 'tmp', mountPath: '/tmp' },
        ],
      },
    ],
    volumes: [
      { name: 'libvirt-run', hostPath: { path: run.hostPath, type: 'Directory' } },
      { name: 'agent-dir', hostPath: { path: AGENT_DIR, type: 'DirectoryOrCreate' } },
      { name: 'tmp', emptyDir: {} },
    ],
  };
}

/** The Role the agents share: get and patch the one Secret they publish in. */
export function agentRole(): K8sObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: AGENT_ROLE, namespace: AGENTS_NAMESPACE },
    rules: [
      { apiGroups: [''], resources: ['secrets'], resourceNames: [AGENTS_SECRET], verbs: ['get', 'patch'] },
    ],
  } as K8sObject;
}

/** The pool's ServiceAccount (owned by the pool) and its binding to the agents' Role (removed with the pool). */
export function agentAccess(
  namespace: string,
  pool: string,
  ownerReferences: NonNullable<K8sObject['metadata']>['ownerReferences'],
): { serviceAccount: K8sObject; roleBinding: K8sObject } {
  return {
    serviceAccount: {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: agentServiceAccount(pool), namespace, ownerReferences },
    },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: agentRoleBinding(namespace, pool), namespace: AGENTS_NAMESPACE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: AGENT_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: agentServiceAccount(pool), namespace }],
    } as K8sObject,
  };
}
