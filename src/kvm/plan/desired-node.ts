// The management-cluster objects of one node, as a pure function of the
// cluster and the node's index: its Ignition ConfigMap, its Deployment (one
// replica, Recreate, one VM per host) whose pod template is the VM pod the
// VM image contract (src/api/vm-image.ts) describes, and its etcd PVC when
// the spec asks for persistent volumes.
import { createHash } from 'node:crypto';
import {
  KVM_ANNOTATIONS,
  KVM_LABELS,
  type KVMCluster,
  type KVMClusterSpecType,
  VM_DRAIN_FINALIZER,
} from '../../api/kvm.ts';
import {
  DEFAULT_FLATCAR_MIRROR,
  DEFAULT_OS_IMAGE,
  DEFAULT_VM_IMAGE,
  type OsImage,
  osImageName,
  USER_DATA_KEY,
  VM_CLUSTER_LABEL,
  VM_CONTAINER,
  VM_ROLE_LABEL,
  VM_SHUTDOWN_COMMAND,
  VmAnnotations,
  VmEnv,
  VmMounts,
  vmHealthPort,
  vmHealthProbeCommand,
} from '../../api/vm-image.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import { encodeUserData, renderIgnition } from './ignition.ts';
import { etcdClaimName, kubeconfigSecretName, nodeObjectName, objectMeta } from './names.ts';
import type { ClusterPki } from './pki.ts';
import { type ClusterNode, memoryQuantity, podMemoryM, qemuMemoryMiB } from './spec.ts';

/** The anchor's grace period (@R): time for the VM to power off after its drain. */
export const TERMINATION_GRACE_SECONDS = 600;
export const ETCD_VOLUME_SIZE = '15Gi';
/** The anchor's kubelet volume, masters and workers alike. */
export const KUBELET_VOLUME_GB = 5;

/** The OS the VM pods boot (the operator's --kvm-os-image and --kvm-os-mirror). */
export interface VmOsChoice {
  image: OsImage;
  /** flatcar: where releases are downloaded from; Flatcar's stable server when not given. */
  mirror?: string;
}
export const DEFAULT_VM_OS: VmOsChoice = { image: DEFAULT_OS_IMAGE };

/** What the VM pods run (--kvm-vm-image) and boot: one choice of the operator's, for every node. */
export interface VmChoice {
  image: string;
  os: VmOsChoice;
}
export const DEFAULT_VM: VmChoice = { image: DEFAULT_VM_IMAGE, os: DEFAULT_VM_OS };

export interface DesiredNode {
  node: ClusterNode;
  name: string;
  index: number;
  specHash: string;
  configMap: K8sObject;
  deployment: K8sObject;
  pvc?: K8sObject;
}

/** What every part of one node's objects is built from. */
interface NodeParts {
  kc: KVMCluster;
  cluster: string;
  node: ClusterNode;
  index: number;
  /** The Deployment's and ConfigMap's name. */
  name: string;
  specHash: string;
  /** The node's own labels (cluster, role, id). */
  labels: Record<string, string>;
  /** The master's etcd data on a PersistentVolumeClaim rather than the host. */
  persistentEtcd: boolean;
  vm: VmChoice;
}

export function desiredNode(
  kc: KVMCluster,
  node: ClusterNode,
  index: number,
  pki: ClusterPki,
  vm: VmChoice = DEFAULT_VM,
): DesiredNode {
  const cluster = kc.metadata.name ?? '';
  const userData = encodeUserData(renderIgnition({ cluster, spec: kc.spec, node, index, pki }));
  const parts: NodeParts = {
    kc,
    cluster,
    node,
    index,
    name: nodeObjectName(node.role, node.id),
    specHash: nodeSpecHash(kc.spec, node, userData, vm.os.image),
    labels: { [KVM_LABELS.cluster]: cluster, [KVM_LABELS.role]: node.role, [KVM_LABELS.nodeId]: node.id },
    persistentEtcd: node.role === 'master' && kc.spec.storage?.type === 'persistentVolume',
    vm,
  };
  const pvc = parts.persistentEtcd ? etcdClaim(parts) : undefined;
  return {
    node,
    name: parts.name,
    index,
    specHash: parts.specHash,
    configMap: ignitionConfigMap(parts, userData),
    deployment: nodeDeployment(parts),
    ...(pvc ? { pvc } : {}),
  };
}

/** Everything that, changed, must give the node a fresh VM (the OS only when not the default, so Debian's hashes stay as they were). */
function nodeSpecHash(spec: KVMClusterSpecType, node: ClusterNode, userData: string, os: OsImage): string {
  const osPart = os === DEFAULT_OS_IMAGE ? {} : { os };
  return createHash('sha256')
    .update(JSON.stringify({ release: spec.release, node: node.spec, userData, ...osPart }))
    .digest('hex')
    .slice(0, 16);
}

function roleAndId(p: NodeParts): Record<string, string> {
  return { [KVM_LABELS.role]: p.node.role, [KVM_LABELS.nodeId]: p.node.id };
}

function ignitionConfigMap(p: NodeParts, userData: string): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: objectMeta(p.cluster, p.name, roleAndId(p)),
    data: { [USER_DATA_KEY]: userData },
  } as K8sObject;
}

function nodeDeployment(p: NodeParts): K8sObject {
  const release = p.kc.spec.release;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      ...objectMeta(p.cluster, p.name, roleAndId(p)),
      annotations: { [KVM_ANNOTATIONS.release]: release.version, [KVM_ANNOTATIONS.nodeSpec]: p.specHash },
    },
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: { [KVM_LABELS.cluster]: p.cluster, [KVM_LABELS.nodeId]: p.node.id } },
      template: {
        metadata: {
          labels: { ...p.labels, [VM_CLUSTER_LABEL]: p.cluster, [VM_ROLE_LABEL]: p.node.role },
          annotations: vmPodAnnotations(p),
          // Copied onto every pod by the ReplicaSet controller: no pod of ours exists without it.
          finalizers: [VM_DRAIN_FINALIZER],
        },
        spec: vmPodSpec(p),
      },
    },
  } as K8sObject;
}

/** Ours (release, spec hash) and the VM image contract's (what the VM is and runs). */
function vmPodAnnotations(p: NodeParts): Record<string, string> {
  const release = p.kc.spec.release;
  const ns = p.kc.metadata.namespace ?? 'default';
  return {
    [KVM_ANNOTATIONS.release]: release.version,
    [KVM_ANNOTATIONS.nodeSpec]: p.specHash,
    [VmAnnotations.kubernetesVersion]: release.kubernetesVersion,
    [VmAnnotations.osVersion]: osImageName(p.vm.os.image, release.osVersion),
    [VmAnnotations.cpus]: String(p.node.spec.cpus),
    [VmAnnotations.memory]: memoryQuantity(p.node.spec.memory),
    [VmAnnotations.kubeconfigSecret]: `${ns}/${kubeconfigSecretName(p.cluster)}`,
    [VmAnnotations.nodeLabels]: JSON.stringify({
      ...p.labels,
      'kvm.nodewarden.dev/release': release.version,
    }),
  };
}

function vmPodSpec(p: NodeParts) {
  return {
    serviceAccountName: p.cluster,
    // No hostNetwork (the anchor's v4 dropped it too): each VM pod has its own address, so the
    // Services' selectors give one endpoint per VM and two clusters' masters on a host never share a port.
    terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
    affinity: {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          {
            labelSelector: { matchLabels: { [VM_CLUSTER_LABEL]: p.cluster } },
            topologyKey: 'kubernetes.io/hostname',
          },
        ],
      },
    },
    containers: [vmContainer(p)],
    volumes: vmVolumes(p),
  };
}

function vmContainer(p: NodeParts) {
  const { spec } = p.node;
  const memoryM = podMemoryM(p.node.role, spec.memory);
  const healthPort = vmHealthPort(p.kc.spec.network.vni);
  const probe = (initialDelaySeconds: number) => ({
    exec: { command: vmHealthProbeCommand(healthPort) },
    initialDelaySeconds,
    timeoutSeconds: 5,
    periodSeconds: 35,
    failureThreshold: 4,
  });
  return {
    name: VM_CONTAINER,
    image: p.vm.image,
    securityContext: { privileged: true },
    env: [
      { name: VmEnv.cores, value: String(spec.cpus) },
      { name: VmEnv.memory, value: `${qemuMemoryMiB(spec.memory)}M` },
      { name: VmEnv.role, value: p.node.role },
      { name: VmEnv.osImage, value: p.vm.os.image },
      { name: VmEnv.osVersion, value: p.kc.spec.release.osVersion },
      ...(p.vm.os.image === 'flatcar'
        ? [{ name: VmEnv.osMirror, value: p.vm.os.mirror ?? DEFAULT_FLATCAR_MIRROR }]
        : []),
      { name: VmEnv.diskOs, value: `${spec.disk ?? 20}G` },
      { name: VmEnv.diskDocker, value: `${spec.dockerVolumeSizeGB ?? 50}G` },
      { name: VmEnv.diskKubelet, value: `${KUBELET_VOLUME_GB}G` },
      { name: VmEnv.hostname, valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: VmEnv.healthPort, value: String(healthPort) },
      { name: VmEnv.graceSeconds, value: String(TERMINATION_GRACE_SECONDS) },
    ],
    resources: {
      requests: { cpu: String(spec.cpus), memory: `${memoryM}M` },
      limits: { cpu: String(spec.cpus), memory: `${memoryM}M` },
    },
    livenessProbe: probe(500),
    readinessProbe: probe(100),
    lifecycle: { preStop: { exec: { command: [...VM_SHUTDOWN_COMMAND] } } },
    volumeMounts: [
      { name: 'ignition', mountPath: VmMounts.ignition },
      { name: 'rootfs', mountPath: VmMounts.rootfs },
      ...(p.node.role === 'master' ? [{ name: 'etcd-data', mountPath: VmMounts.etcdData }] : []),
      ...(p.vm.os.image === 'flatcar' ? [{ name: 'os-cache', mountPath: VmMounts.osCache }] : []),
    ],
  };
}

function vmVolumes(p: NodeParts) {
  return [
    { name: 'ignition', configMap: { name: p.name } },
    { name: 'rootfs', emptyDir: {} },
    ...(p.node.role === 'master' ? [etcdVolume(p)] : []),
    // The same host folder in every VM pod of the host: one download per release and host.
    ...(p.vm.os.image === 'flatcar'
      ? [{ name: 'os-cache', hostPath: { path: VmMounts.osCache, type: 'DirectoryOrCreate' } }]
      : []),
  ];
}

/** A master's etcd data: its PVC, or a host directory named by the node's index (which never moves). */
function etcdVolume(p: NodeParts) {
  if (p.persistentEtcd) {
    return { name: 'etcd-data', persistentVolumeClaim: { claimName: etcdClaimName(p.node.id) } };
  }
  return {
    name: 'etcd-data',
    hostPath: { path: `/var/lib/nodewarden/kvm/${p.cluster}/etcd-${p.index}`, type: 'DirectoryOrCreate' },
  };
}

function etcdClaim(p: NodeParts): K8sObject {
  const storageClassName = p.kc.spec.storage?.storageClassName;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: objectMeta(p.cluster, etcdClaimName(p.node.id), { [KVM_LABELS.nodeId]: p.node.id }),
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: ETCD_VOLUME_SIZE } },
      ...(storageClassName ? { storageClassName } : {}),
    },
  } as K8sObject;
}
