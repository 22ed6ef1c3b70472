// What makes a VM a Kubernetes node (k8scloudconfig's job), as files and
// systemd units for the Ignition config: on every node the cluster CA,
// containerd, its pod network (cni.ts) and the kubelet, which bootstraps its own client certificate
// with the cluster's bootstrap token through the master Service (workers) or
// the local API server (masters); on masters also their certificates and
// keys, the kubeconfigs of the controller-manager, scheduler and admin, the
// bootstrap token file, and the control plane's static pods. Pure.
import { stringify } from 'yaml';
import type { KVMClusterSpecType } from '../../api/kvm.ts';
import { KVM_LABELS } from '../../api/kvm.ts';
import { GUEST_IMAGES_UNIT } from '../../api/vm-image.ts';
import { workloadImage } from '../../api/workload-images.ts';
import { CNI_BIN_DIR, CNI_CONF_DIR, CNI_CONFIG, cniConfig, DEFAULT_POD_CIDR, nodePodRange } from './cni.ts';
import {
  type CertAndKey,
  CLUSTER_DOMAIN,
  type ClusterPki,
  DEFAULT_SERVICE_CIDR,
  masterServiceNames,
  serviceAddress,
} from './pki.ts';
import type { ClusterNode } from './spec.ts';
import { KUBECONFIGS, MANIFESTS_DIR, PKI_DIR, staticPods } from './static-pods.ts';

/** Where the OS image puts the kubelet (hack/build-vm-os-image.sh): writable on Flatcar, whose /usr is read-only. */
export const KUBELET_BIN = '/opt/bin/kubelet';
export const KUBELET_CONFIG = '/etc/kubernetes/kubelet.yaml';
export const KUBELET_KUBECONFIG = '/etc/kubernetes/kubelet.conf';
export const BOOTSTRAP_KUBECONFIG = '/etc/kubernetes/bootstrap-kubelet.conf';
export const CONTAINERD_CONFIG = '/etc/containerd/config.toml';
export const CONTAINERD_SOCKET = '/run/containerd/containerd.sock';

export interface NodeFile {
  path: string;
  contents: string;
  mode: number;
}

export interface NodeUnit {
  name: string;
  enabled: boolean;
  contents?: string;
  dropins?: Array<{ name: string; contents: string }>;
}

export interface KubernetesNodeInput {
  cluster: string;
  spec: KVMClusterSpecType;
  node: ClusterNode;
  /** The node's index (node-indexes.ts): its pod range. */
  index: number;
  pki: ClusterPki;
}

const pki = (file: string) => `${PKI_DIR}/${file}`;
const secret = (path: string, contents: string): NodeFile => ({ path, contents, mode: 0o600 });
const open = (path: string, contents: string): NodeFile => ({ path, contents, mode: 0o644 });

type Credentials = CertAndKey | { token: string };

/** A self-contained kubeconfig (certificates inline). */
export function kubeconfig(user: string, server: string, caPem: string, auth: Credentials): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const credentials =
    'token' in auth
      ? { token: auth.token }
      : { 'client-certificate-data': b64(auth.certPem), 'client-key-data': b64(auth.keyPem) };
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'workload', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
    users: [{ name: user, user: credentials }],
    contexts: [{ name: user, context: { cluster: 'workload', user } }],
    'current-context': user,
  });
}

/** The API server as nodes reach it: masters their own, workers through the master Service. */
export function apiServerUrl(cluster: string, spec: KVMClusterSpecType, role: ClusterNode['role']): string {
  const host = role === 'master' ? '127.0.0.1' : (masterServiceNames(cluster)[1] ?? '');
  return `https://${host}:${spec.api.securePort ?? 443}`;
}

/** Static token file line: the kubelets' bootstrap token, as the group kubeadm's tokens are in. */
export function bootstrapTokenFile(token: string): string {
  const id = token.split('.')[0] ?? '';
  return `${token},system:bootstrap:${id},system:bootstrap:${id},"system:bootstrappers"\n`;
}

function kubeletConfig(spec: KVMClusterSpecType, role: ClusterNode['role']): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: pki('ca.crt') },
    },
    authorization: { mode: 'Webhook' },
    cgroupDriver: 'systemd',
    clusterDNS: [serviceAddress(spec.network.serviceCIDR ?? DEFAULT_SERVICE_CIDR, 10)],
    clusterDomain: CLUSTER_DOMAIN,
    containerRuntimeEndpoint: `unix://${CONTAINERD_SOCKET}`,
    // Its client certificate is renewed through the CSR API before it expires.
    rotateCertificates: true,
    ...(role === 'master'
      ? {
          staticPodPath: MANIFESTS_DIR,
          registerWithTaints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }],
        }
      : {}),
  });
}

function containerdConfig(kubernetesVersion: string): string {
  return [
    'version = 2',
    '[plugins."io.containerd.grpc.v1.cri"]',
    `  sandbox_image = "${workloadImage('pause', kubernetesVersion)}"`,
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
    '  runtime_type = "io.containerd.runc.v2"',
    '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
    '  SystemdCgroup = true',
    '[plugins."io.containerd.grpc.v1.cri".cni]',
    `  bin_dir = "${CNI_BIN_DIR}"`,
    `  conf_dir = "${CNI_CONF_DIR}"`,
    '',
  ].join('\n');
}

/** What every node has: the CA, containerd's, the CNI's and the kubelet's config, its bootstrap kubeconfig, the kernel settings. */
function commonFiles(i: KubernetesNodeInput): NodeFile[] {
  const { spec, node, pki: p } = i;
  const server = apiServerUrl(i.cluster, spec, node.role);
  const podRange = nodePodRange(spec.network.podCIDR ?? DEFAULT_POD_CIDR, i.index);
  return [
    open(pki('ca.crt'), p.ca.certPem),
    secret(
      BOOTSTRAP_KUBECONFIG,
      kubeconfig('kubelet-bootstrap', server, p.ca.certPem, { token: p.bootstrapToken }),
    ),
    open(KUBELET_CONFIG, kubeletConfig(spec, node.role)),
    open(CONTAINERD_CONFIG, containerdConfig(spec.release.kubernetesVersion)),
    open(CNI_CONFIG, cniConfig(podRange)),
    open('/etc/modules-load.d/kubernetes.conf', 'overlay\nbr_netfilter\n'),
    open(
      '/etc/sysctl.d/80-kubernetes.conf',
      'net.ipv4.ip_forward = 1\nnet.bridge.bridge-nf-call-iptables = 1\nnet.bridge.bridge-nf-call-ip6tables = 1\n',
    ),
  ];
}

/** A master's certificates and keys, at kubeadm's paths. */
function masterPkiFiles(i: KubernetesNodeInput): NodeFile[] {
  const { pki: p, node } = i;
  const pair = (name: string, as: string): NodeFile[] => {
    const c = p.certs[name];
    if (!c?.certPem) throw new Error(`certificate ${name} is not issued yet`);
    return [open(pki(`${as}.crt`), c.certPem), secret(pki(`${as}.key`), c.keyPem)];
  };
  return [
    secret(pki('ca.key'), p.ca.keyPem),
    open(pki('etcd/ca.crt'), p.etcdCa.certPem),
    ...pair('apiserver', 'apiserver'),
    ...pair('apiserver-kubelet-client', 'apiserver-kubelet-client'),
    ...pair('apiserver-etcd-client', 'apiserver-etcd-client'),
    ...pair(`etcd-server-${node.id}`, 'etcd/server'),
    ...pair(`etcd-peer-${node.id}`, 'etcd/peer'),
    secret(pki('sa.key'), p.serviceAccount.keyPem),
    open(pki('sa.pub'), p.serviceAccount.pubPem),
    secret(pki('bootstrap-tokens.csv'), bootstrapTokenFile(p.bootstrapToken)),
  ];
}

function masterFiles(i: KubernetesNodeInput): NodeFile[] {
  const { pki: p, spec } = i;
  const local = apiServerUrl(i.cluster, spec, 'master');
  const conf = (path: string, user: string, name: string) => {
    const c = p.certs[name];
    if (!c?.certPem) throw new Error(`certificate ${name} is not issued yet`);
    return secret(path, kubeconfig(user, local, p.ca.certPem, c));
  };
  const pods = staticPods({
    nodeId: i.node.id,
    kubernetesVersion: spec.release.kubernetesVersion,
    securePort: spec.api.securePort ?? 443,
    ...(spec.network.serviceCIDR ? { serviceCIDR: spec.network.serviceCIDR } : {}),
    ...(spec.network.podCIDR ? { podCIDR: spec.network.podCIDR } : {}),
  });
  return [
    ...masterPkiFiles(i),
    conf(KUBECONFIGS.controllerManager, 'system:kube-controller-manager', 'controller-manager'),
    conf(KUBECONFIGS.scheduler, 'system:kube-scheduler', 'scheduler'),
    conf(KUBECONFIGS.admin, 'nodewarden-admin', 'admin'),
    ...Object.entries(pods).map(([file, pod]) => open(`${MANIFESTS_DIR}/${file}`, stringify(pod))),
  ];
}

/** Every Kubernetes file of the node. */
export function kubernetesFiles(i: KubernetesNodeInput): NodeFile[] {
  return [...commonFiles(i), ...(i.node.role === 'master' ? masterFiles(i) : [])];
}

/** The labels the kubelet registers its Node with (only prefixes NodeRestriction lets a kubelet set). */
export function kubeletNodeLabels(cluster: string, node: ClusterNode, release: string): string {
  return [
    `${KVM_LABELS.cluster}=${cluster}`,
    `${KVM_LABELS.role}=${node.role}`,
    `${KVM_LABELS.nodeId}=${node.id}`,
    `kvm.nodewarden.dev/release=${release}`,
  ].join(',');
}

/**
 * containerd (on its own disk) and the kubelet (on its own disk, after the
 * hostname is the pod's, and after the OS image put the control plane's images
 * into containerd: its static pods have no registry to pull from).
 */
export function kubernetesUnits(i: KubernetesNodeInput): NodeUnit[] {
  // A master's etcd keeps its data on the share from the host: it must be mounted before etcd's pod starts.
  const mounts =
    i.node.role === 'master' ? 'var-lib-kubelet.mount var-lib-etcd.mount' : 'var-lib-kubelet.mount';
  const kubelet = [
    '[Unit]',
    'Description=kubelet',
    `Wants=containerd.service ${GUEST_IMAGES_UNIT}`,
    `After=containerd.service ${GUEST_IMAGES_UNIT} hostname-from-pod.service ${mounts}`,
    `Requires=${mounts}`,
    '[Service]',
    `ExecStart=${KUBELET_BIN} --config=${KUBELET_CONFIG} --kubeconfig=${KUBELET_KUBECONFIG} --bootstrap-kubeconfig=${BOOTSTRAP_KUBECONFIG} --node-labels=${kubeletNodeLabels(i.cluster, i.node, i.spec.release.version)}`,
    'Restart=always',
    'RestartSec=5',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
  return [
    {
      name: 'containerd.service',
      enabled: true,
      dropins: [
        {
          name: '10-disk.conf',
          contents: '[Unit]\nRequires=var-lib-containerd.mount\nAfter=var-lib-containerd.mount\n',
        },
      ],
    },
    { name: 'kubelet.service', enabled: true, contents: kubelet },
  ];
}
