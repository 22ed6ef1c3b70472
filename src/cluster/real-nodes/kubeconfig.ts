// The kubeconfigs a real node's kubelet and kube-proxy read: the API server as
// the node reaches it (through the relay in the cluster's namespace), the
// cluster CA, and a client certificate whose subject is who the API server
// takes them for. Rendering only: certificates come from src/runtime/x509.ts.
import { stringify } from 'yaml';
import type { CertKeyPair, ClientCertOptions } from '../../runtime/x509.ts';

/** A kubelet's identity: the Node authorizer lets `system:node:<node>` in `system:nodes` touch its own Node and pods. */
export function kubeletIdentity(node: string): Pick<ClientCertOptions, 'commonName' | 'organizations'> {
  return { commonName: `system:node:${node}`, organizations: ['system:nodes'] };
}

/** kube-proxy's identity: the default `system:node-proxier` binding names this user. */
export const KUBE_PROXY_IDENTITY: Pick<ClientCertOptions, 'commonName'> = { commonName: 'system:kube-proxy' };

export interface NodeKubeconfig {
  /** The API server's URL as the node reaches it, e.g. https://172.30.0.1:6443. */
  server: string;
  /** The cluster CA's certificate (PEM). */
  caCert: string;
  /** The client certificate and key (PEM). */
  client: CertKeyPair;
  /** The user's name in the file (the certificate says who it is): "kubelet", "kube-proxy". */
  user: string;
  /** The cluster's and the context's name. Default "default". */
  cluster?: string;
}

const base64 = (pem: string) => Buffer.from(pem).toString('base64');

/** A kubeconfig with one cluster, user and context, every credential inline. */
export function renderKubeconfig(o: NodeKubeconfig): string {
  const cluster = o.cluster ?? 'default';
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name: cluster, cluster: { server: o.server, 'certificate-authority-data': base64(o.caCert) } },
    ],
    users: [
      {
        name: o.user,
        user: {
          'client-certificate-data': base64(o.client.cert),
          'client-key-data': base64(o.client.key),
        },
      },
    ],
    contexts: [{ name: cluster, context: { cluster, user: o.user } }],
    'current-context': cluster,
    preferences: {},
  });
}
