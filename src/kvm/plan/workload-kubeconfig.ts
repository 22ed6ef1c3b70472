// The workload cluster's kubeconfig as the operator writes it into
// `<id>-kubeconfig` (the Secret the VM image contract names): the admin
// certificate of the cluster's PKI, its CA, and the address the operator
// reached the API server at through the master Service. And the decision,
// from the Secret as found, whether to probe the API server and write it. Pure.
import { stringify } from 'yaml';
import { MANAGER } from './names.ts';
import type { ClusterPki } from './pki.ts';

/** Where the operator reaches a cluster's API server: a URL, and the name its certificate is checked for. */
export interface MasterEndpoint {
  url: string;
  /** The name in the API server's certificate (a SAN) the connection is verified against. */
  serverName: string;
}

/** The master Service by its DNS name, as a pod of the management cluster reaches it. */
export function masterServiceEndpoint(cluster: string, securePort: number): MasterEndpoint {
  const serverName = `master.${cluster}.svc`;
  return { url: `https://${serverName}:${securePort}`, serverName };
}

export function workloadKubeconfig(cluster: string, pki: ClusterPki, at: MasterEndpoint): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const admin = pki.certs.admin;
  const name = `nodewarden-kvm-${cluster}`;
  const host = new URL(at.url).hostname;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: {
          server: at.url,
          'certificate-authority-data': b64(pki.ca.certPem),
          ...(host !== at.serverName ? { 'tls-server-name': at.serverName } : {}),
        },
      },
    ],
    users: [
      {
        name,
        user: {
          'client-certificate-data': b64(admin?.certPem ?? ''),
          'client-key-data': b64(admin?.keyPem ?? ''),
        },
      },
    ],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
  });
}

/** The kubeconfig Secret as found: who manages it, and its kubeconfig. */
export interface FoundKubeconfig {
  managedBy?: string;
  kubeconfig?: string;
}

export type KubeconfigDecision =
  /** Written by someone else (a VM runtime that keeps the contract itself, e.g. the simulated hypervisor): left alone. */
  | 'foreign'
  /** Ours, and what we would write: nothing to do. */
  | 'upToDate'
  /** Absent, or ours but stale (a rotated certificate): probe the API server, then write it. */
  | 'probeThenWrite';

export function decideKubeconfig(found: FoundKubeconfig | undefined, desired: string): KubeconfigDecision {
  if (!found) return 'probeThenWrite';
  if (found.managedBy !== MANAGER) return 'foreign';
  return found.kubeconfig === desired ? 'upToDate' : 'probeThenWrite';
}
