import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import {
  KUBE_PROXY_IDENTITY,
  kubeletIdentity,
  renderKubeconfig,
} from '../../../src/cluster/real-nodes/kubeconfig.ts';
import { generateCa, issueClientCert } from '../../../src/runtime/x509.ts';

const ca = generateCa({ commonName: 'cluster-ca' });
const kubelet = issueClientCert(ca, kubeletIdentity('node-1'));
const text = renderKubeconfig({
  server: 'https://172.30.0.1:6443',
  caCert: ca.cert,
  client: kubelet,
  user: 'kubelet',
  cluster: 'nwtest',
});
const decode = (b64: unknown) => Buffer.from(String(b64), 'base64').toString();

describe("renderKubeconfig: a real node's credentials in one file", () => {
  it('parses back to the server, CA, certificate and key it was given', () => {
    const doc = parse(text);
    assert.equal(doc.kind, 'Config');
    assert.equal(doc['current-context'], 'nwtest');
    assert.deepEqual(doc.contexts, [{ name: 'nwtest', context: { cluster: 'nwtest', user: 'kubelet' } }]);
    const [cluster] = doc.clusters;
    assert.equal(cluster.name, 'nwtest');
    assert.equal(cluster.cluster.server, 'https://172.30.0.1:6443');
    assert.equal(decode(cluster.cluster['certificate-authority-data']), ca.cert);
    const [user] = doc.users;
    assert.equal(user.name, 'kubelet');
    assert.equal(decode(user.user['client-certificate-data']), kubelet.cert);
    assert.equal(decode(user.user['client-key-data']), kubelet.key);
  });

  it("is read by client-node as the node's identity", () => {
    const kc = new KubeConfig();
    kc.loadFromString(text);
    assert.equal(kc.getCurrentCluster()?.server, 'https://172.30.0.1:6443');
    const cert = new X509Certificate(decode(kc.getCurrentUser()?.certData));
    assert.equal(cert.subject, 'O=system:nodes\nCN=system:node:node-1');
    assert.ok(cert.verify(new X509Certificate(ca.cert).publicKey));
  });

  it('names the context "default" when no cluster is given', () => {
    const proxy = issueClientCert(ca, KUBE_PROXY_IDENTITY);
    const doc = parse(
      renderKubeconfig({ server: 'https://x:1', caCert: ca.cert, client: proxy, user: 'kube-proxy' }),
    );
    assert.equal(doc['current-context'], 'default');
    assert.equal(
      new X509Certificate(decode(doc.users[0].user['client-certificate-data'])).subject,
      'CN=system:kube-proxy',
    );
  });
});
