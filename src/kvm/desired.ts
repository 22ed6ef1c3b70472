// The management-cluster objects a KVMCluster wants, as a pure function of
// its spec and node indexes: the namespace <id>, a ServiceAccount and Role for
// the VM pods, per node an Ignition ConfigMap and a Deployment (one replica,
// Recreate, one VM per host), the master and worker Services — with selectors,
// where the anchor kept Endpoints by hand and its users paid for it (#134,
// #826–#830, #1128; removed in its own #1241) — and etcd PVCs when asked.
import { createHash } from 'node:crypto';
import { KVM_ANNOTATIONS, KVM_LABELS, type KVMCluster, VM_DRAIN_FINALIZER } from '../api/kvm.ts';
import { VM_CLUSTER_LABEL, VM_ROLE_LABEL, VmAnnotations } from '../cluster/infra/hypervisor/protocol.ts';
import type { K8sObject } from '../runtime/resources.ts';
import { encodeUserData, renderIgnition, USER_DATA_KEY } from './ignition.ts';
import {
  type ClusterNode,
  clusterNodes,
  memoryQuantity,
  nodeObjectName,
  podMemoryM,
  portMappings,
  qemuMemoryMiB,
  securePort,
} from './spec.ts';

export const MANAGER = 'nodewarden';
export const ETCD_PORT = 2379;
/** The anchor's VM health endpoint and shutdown-deferrer ports, offset by the VNI so VMs of clusters never collide. */
export const HEALTH_PORT_BASE = 23000;
/** The anchor's grace period (@R): time for the VM to power off after its drain. */
export const TERMINATION_GRACE_SECONDS = 600;
export const ETCD_VOLUME_SIZE = '15Gi';
export const VM_IMAGE = 'quay.io/nodewarden/k8s-kvm:0.6.2';

export function kubeconfigSecretName(cluster: string): string {
  return `${cluster}-kubeconfig`;
}

/** Labels on everything made for a cluster. */
export function clusterLabels(cluster: string): Record<string, string> {
  return { [KVM_LABELS.cluster]: cluster, [KVM_LABELS.managedBy]: MANAGER };
}

export interface DesiredNode {
  node: ClusterNode;
  name: string;
  index: number;
  specHash: string;
  configMap: K8sObject;
  deployment: K8sObject;
  pvc?: K8sObject;
}

export interface DesiredCluster {
  namespace: K8sObject;
  serviceAccount: K8sObject;
  role: K8sObject;
  roleBinding: K8sObject;
  services: K8sObject[];
  nodes: DesiredNode[];
}

function meta(cluster: string, name: string, extra: Record<string, string> = {}) {
  return { name, namespace: cluster, labels: { ...clusterLabels(cluster), ...extra } };
}

export function desiredCluster(kc: KVMCluster, indexes: Readonly<Record<string, number>>): DesiredCluster {
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
    nodes: clusterNodes(kc.spec).map((node) => {
      const index = indexes[node.id];
      if (index === undefined) throw new Error(`node ${node.id} has no index yet`);
      return desiredNode(kc, node, index);
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
          { name: 'etcd', protocol: 'TCP', port: ETCD_PORT, targetPort: ETCD_PORT },
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

function desiredNode(kc: KVMCluster, node: ClusterNode, index: number): DesiredNode {
  const cluster = kc.metadata.name ?? '';
  const ns = kc.metadata.namespace ?? 'default';
  const name = nodeObjectName(node.role, node.id);
  const userData = encodeUserData(renderIgnition({ cluster, spec: kc.spec, node, index }));
  const release = kc.spec.release;
  // Everything that, changed, must give the node a fresh VM.
  const specHash = createHash('sha256')
    .update(JSON.stringify({ release, node: node.spec, userData }))
    .digest('hex')
    .slice(0, 16);
  const nodeLabels = {
    [KVM_LABELS.cluster]: cluster,
    [KVM_LABELS.role]: node.role,
    [KVM_LABELS.nodeId]: node.id,
  };
  const storage = kc.spec.storage;
  const pv = node.role === 'master' && storage?.type === 'persistentVolume';
  const pvcName = `etcd-${node.id}`;
  const configMap: K8sObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(cluster, name, { [KVM_LABELS.role]: node.role, [KVM_LABELS.nodeId]: node.id }),
    data: { [USER_DATA_KEY]: userData },
  } as K8sObject;
  const memoryM = podMemoryM(node.role, node.spec.memory);
  const healthPort = HEALTH_PORT_BASE + kc.spec.network.vni;
  const probe = (initialDelaySeconds: number) => ({
    httpGet: { path: '/healthz', port: healthPort },
    initialDelaySeconds,
    timeoutSeconds: 5,
    periodSeconds: 35,
    failureThreshold: 4,
  });
  const podLabels = { ...nodeLabels, [VM_CLUSTER_LABEL]: cluster, [VM_ROLE_LABEL]: node.role };
  const deployment: K8sObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      ...meta(cluster, name, { [KVM_LABELS.role]: node.role, [KVM_LABELS.nodeId]: node.id }),
      annotations: { [KVM_ANNOTATIONS.release]: release.version, [KVM_ANNOTATIONS.nodeSpec]: specHash },
    },
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: { [KVM_LABELS.cluster]: cluster, [KVM_LABELS.nodeId]: node.id } },
      template: {
        metadata: {
          labels: podLabels,
          annotations: {
            [KVM_ANNOTATIONS.release]: release.version,
            [KVM_ANNOTATIONS.nodeSpec]: specHash,
            [VmAnnotations.kubernetesVersion]: release.kubernetesVersion,
            [VmAnnotations.osVersion]: `Flatcar Container Linux ${release.osVersion}`,
            [VmAnnotations.cpus]: String(node.spec.cpus),
            [VmAnnotations.memory]: memoryQuantity(node.spec.memory),
            [VmAnnotations.kubeconfigSecret]: `${ns}/${kubeconfigSecretName(cluster)}`,
            [VmAnnotations.nodeLabels]: JSON.stringify({
              ...nodeLabels,
              'kvm.nodewarden.dev/release': release.version,
            }),
          },
          // Copied onto every pod by the ReplicaSet controller: no pod of ours exists without it.
          finalizers: [VM_DRAIN_FINALIZER],
        },
        spec: {
          serviceAccountName: cluster,
          // No hostNetwork (the anchor's v4 dropped it too): each VM pod has its own address, so the
          // Services' selectors give one endpoint per VM and two clusters' masters on a host never share a port.
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  labelSelector: { matchLabels: { [VM_CLUSTER_LABEL]: cluster } },
                  topologyKey: 'kubernetes.io/hostname',
                },
              ],
            },
          },
          containers: [
            {
              name: 'k8s-kvm',
              image: VM_IMAGE,
              securityContext: { privileged: true },
              env: [
                { name: 'CORES', value: String(node.spec.cpus) },
                { name: 'MEMORY', value: `${qemuMemoryMiB(node.spec.memory)}M` },
                { name: 'OS_VERSION', value: release.osVersion },
                { name: 'DISK_OS', value: `${node.spec.disk ?? 20}G` },
                { name: 'DISK_DOCKER', value: `${node.spec.dockerVolumeSizeGB ?? 50}G` },
                { name: 'HOSTNAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              ],
              resources: {
                requests: { cpu: String(node.spec.cpus), memory: `${memoryM}M` },
                limits: { cpu: String(node.spec.cpus), memory: `${memoryM}M` },
              },
              livenessProbe: probe(500),
              readinessProbe: probe(100),
              lifecycle: { preStop: { exec: { command: ['/qemu-shutdown'] } } },
              volumeMounts: [
                { name: 'ignition', mountPath: '/var/lib/ignition' },
                { name: 'rootfs', mountPath: '/var/lib/vm' },
                ...(node.role === 'master'
                  ? [{ name: 'etcd-data', mountPath: '/etc/kubernetes/data/etcd' }]
                  : []),
              ],
            },
          ],
          volumes: [
            { name: 'ignition', configMap: { name } },
            { name: 'rootfs', emptyDir: {} },
            ...(node.role === 'master'
              ? [
                  pv
                    ? { name: 'etcd-data', persistentVolumeClaim: { claimName: pvcName } }
                    : {
                        name: 'etcd-data',
                        hostPath: {
                          path: `/var/lib/nodewarden/kvm/${cluster}/etcd-${index}`,
                          type: 'DirectoryOrCreate',
                        },
                      },
                ]
              : []),
          ],
        },
      },
    },
  } as K8sObject;
  const pvc: K8sObject | undefined = pv
    ? ({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: meta(cluster, pvcName, { [KVM_LABELS.nodeId]: node.id }),
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: ETCD_VOLUME_SIZE } },
          ...(storage?.storageClassName ? { storageClassName: storage.storageClassName } : {}),
        },
      } as K8sObject)
    : undefined;
  return { node, name, index, specHash, configMap, deployment, ...(pvc ? { pvc } : {}) };
}
