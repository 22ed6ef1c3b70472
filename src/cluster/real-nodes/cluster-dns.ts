// Cluster DNS for pods on real nodes: CoreDNS (built here, run from an image
// built here) on the real nodes, behind the `kube-dns` Service at the address
// kubelet gives pods. It answers for the cluster's names only: there is
// nowhere outside to forward to.
import type { K8sObject } from '../../runtime/resources.ts';
import { CLUSTER_DNS_IP, REAL_NODE_LABEL } from './layout.ts';

const NS = 'kube-system';
const NAME = 'coredns';
const LABELS = { 'k8s-app': 'kube-dns' };

const COREFILE = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    loadbalance
}
`;

/** Every object cluster DNS needs, in the order they can be created. */
export function clusterDnsObjects(image: string): K8sObject[] {
  const meta = (name: string, namespaced = true) => ({
    name,
    ...(namespaced ? { namespace: NS } : {}),
    labels: LABELS,
  });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(NAME) },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta('system:coredns', false),
      rules: [
        {
          apiGroups: [''],
          resources: ['endpoints', 'services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: meta('system:coredns', false),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: NS }],
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(NAME), data: { Corefile: COREFILE } },
    deployment(image),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta('kube-dns'),
      spec: {
        clusterIP: CLUSTER_DNS_IP,
        selector: LABELS,
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        ],
      },
    },
  ] as K8sObject[];
}

function deployment(image: string): K8sObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAME, namespace: NS, labels: LABELS },
    spec: {
      replicas: 1,
      selector: { matchLabels: LABELS },
      template: {
        metadata: { labels: LABELS },
        spec: {
          serviceAccountName: NAME,
          // Only a real node runs it: on a simulated one it would be Running without answering.
          nodeSelector: { [REAL_NODE_LABEL]: 'true' },
          dnsPolicy: 'Default',
          containers: [
            {
              name: NAME,
              image,
              imagePullPolicy: 'Never',
              args: ['-conf', '/etc/coredns/Corefile'],
              ports: [
                { containerPort: 53, name: 'dns', protocol: 'UDP' },
                { containerPort: 53, name: 'dns-tcp', protocol: 'TCP' },
              ],
              volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
              readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
              livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
              resources: { requests: { cpu: '10m', memory: '20Mi' }, limits: { memory: '100Mi' } },
            },
          ],
          volumes: [{ name: 'config', configMap: { name: NAME } }],
        },
      },
    },
  } as K8sObject;
}
