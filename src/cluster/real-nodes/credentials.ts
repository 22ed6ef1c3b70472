// A real node's credentials, from the cluster's CA (kwokctl's pki/ca.key):
// kubelet's client certificate as `system:node:<name>` in `system:nodes` (so
// the Node authorizer applies), kube-proxy's as `system:kube-proxy` (bound to
// `system:node-proxier` by default), and kubelet's serving certificate. Made
// once per node and kept in its folder.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CertKeyPair, issueClientCert, issueServingCert } from '../../runtime/x509.ts';
import { KUBE_PROXY_IDENTITY, kubeletIdentity, renderKubeconfig } from './kubeconfig.ts';
import { CLUSTER_GATEWAY, type RealNode } from './layout.ts';
import type { NodeCredentials } from './node.ts';

/** The cluster's CA, as kwokctl made it. */
export function clusterCa(clusterDir: string): CertKeyPair {
  const pki = join(clusterDir, 'pki');
  return { cert: readFileSync(join(pki, 'ca.crt'), 'utf8'), key: readFileSync(join(pki, 'ca.key'), 'utf8') };
}

/** Where nodes reach the API server: the relay on the cluster bridge, at the API server's own port. */
export function apiServerUrl(port: number): string {
  return `https://${CLUSTER_GATEWAY}:${port}`;
}

export function nodeCredentials(ca: CertKeyPair, node: RealNode, apiPort: number): NodeCredentials {
  const server = apiServerUrl(apiPort);
  const kubeconfig = (user: string, client: CertKeyPair) =>
    renderKubeconfig({ server, caCert: ca.cert, client, user });
  const serving = issueServingCert(ca, { dnsNames: [node.name], ips: [node.ip] });
  return {
    clusterCa: ca.cert,
    kubeletKubeconfig: kubeconfig('kubelet', issueClientCert(ca, kubeletIdentity(node.name))),
    proxyKubeconfig: kubeconfig('kube-proxy', issueClientCert(ca, KUBE_PROXY_IDENTITY)),
    servingCert: serving.cert,
    servingKey: serving.key,
  };
}

/** Whether the node has its credentials already (a restart keeps them). */
export function hasCredentials(node: RealNode): boolean {
  return existsSync(join(node.dir, 'kubelet.kubeconfig'));
}
