// The management-cluster objects a KVMCluster wants, as a pure function of
// its spec and node indexes: the namespace <id>, a ServiceAccount and Role for
// the VM pods, per node its ConfigMap, Deployment and etcd PVC when asked
// (desired-node.ts), and the master and worker Services — with selectors,
// where the anchor kept Endpoints by hand and its users paid for it (#134,
// #826–#830, #1128; removed in its own #1241).
import { KVM_LABELS, type KVMCluster } from '../../api/kvm.ts';
import { VM_CLUSTER_LABEL, VM_ETCD_PORT, VM_ROLE_LABEL } from '../../api/vm-image.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import { type DesiredNode, desiredNode, type VmChoice } from './desired-node.ts';
import { clusterLabels, objectMeta as meta } from './names.ts';
import type { ClusterPki } from './pki.ts';
import { clusterNodes, portMappings, securePort } from './spec.ts';

/** The name of each cluster's disruption budget over its master VM pods. */
export const MASTERS_BUDGET = 'masters';

export interface DesiredCluster {
  namespace: K8sObject;
  serviceAccount: K8sObject;
  role: K8sObject;
  roleBinding: K8sObject;
  services: K8sObject[];
  /** At most one serving master VM evicted at a time, and none while another does not serve. */
  mastersBudget: K8sObject;
  nodes: DesiredNode[];
}

export function desiredCluster(
  kc: KVMCluster,
  indexes: Readonly<Record<string, number>>,
  pki: ClusterPki,
  vm?: VmChoice,
): DesiredCluster {
  const cluster = kc.metadata.name ?? '';
  const labels = clusterLabels(cluster);
  return {
    namespace: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: cluster, labels } },
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(cluster, cluster) },
    // The VMs read their own Ignition ConfigMaps and nothing else.
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(cluster, 'vm'),
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    } as K8sObject,
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(cluster, 'vm'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'vm' },
      subjects: [{ kind: 'ServiceAccount', name: cluster, namespace: cluster }],
    } as K8sObject,
    services: desiredServices(kc),
    // WHY (beyond the anchor, which had none): a drain of the management node under one master VM
    // while another master was out took two of three etcd members. Drains and the rollout evict
    // through it. It counts only the masters that serve (plan/serving.ts labels them), and wants
    // all but one of the spec's: a master not serving may always go, and none while one is out.
    mastersBudget: {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(cluster, MASTERS_BUDGET),
      spec: {
        minAvailable: Math.max(0, kc.spec.masters.length - 1),
        // Left at IfHealthyBudget: a master already out loses its label and may go; one whose pod
        // reads not Ready for a moment while its node serves is still counted out by the rule.
        selector: {
          matchLabels: {
            [VM_CLUSTER_LABEL]: cluster,
            [VM_ROLE_LABEL]: 'master',
            [KVM_LABELS.serving]: 'true',
          },
        },
      },
    } as K8sObject,
    nodes: clusterNodes(kc.spec).map((node) => {
      const index = indexes[node.id];
      if (index === undefined) throw new Error(`node ${node.id} has no index yet`);
      return desiredNode(kc, node, index, pki, vm);
    }),
  };
}

function desiredServices(kc: KVMCluster): K8sObject[] {
  const cluster = kc.metadata.name ?? '';
  const port = securePort(kc.spec);
  const selector = (role: string) => ({ [VM_CLUSTER_LABEL]: cluster, [VM_ROLE_LABEL]: role });
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        ...meta(cluster, 'master'),
        annotations: { 'kvm.nodewarden.dev/api-domain': kc.spec.api.domain },
      },
      spec: {
        type: 'ClusterIP',
        selector: selector('master'),
        ports: [
          { name: 'etcd', protocol: 'TCP', port: VM_ETCD_PORT, targetPort: VM_ETCD_PORT },
          { name: 'api', protocol: 'TCP', port, targetPort: port },
        ],
      },
    } as K8sObject,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(cluster, 'worker'),
      spec: {
        type: 'NodePort',
        selector: selector('worker'),
        // Protocol set: the anchor left it out and compared it, so its Service never looked up to date.
        ports: portMappings(kc.spec).map((p) => ({
          name: p.name,
          protocol: 'TCP',
          port: p.targetPort,
          targetPort: p.targetPort,
          ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}),
        })),
      },
    } as K8sObject,
  ];
}
