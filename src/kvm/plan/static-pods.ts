// A master's control plane as the kubelet's static pods (kubeadm's layout):
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler, each on
// the host's network, reading its certificates and kubeconfig from
// /etc/kubernetes, each image named by workloadImage from the release's
// Kubernetes version. Pure: the node's files come from node-files.ts.
//
// etcd is one member per master, listed by this master alone: the masters'
// addresses are their pods' (DHCP), unknown when the config is rendered, so a
// cluster of three masters needs stable peer names first (not done yet).
import { type WorkloadImage, workloadBinary, workloadImage } from '../../api/workload-images.ts';
import { CLUSTER_DOMAIN, DEFAULT_SERVICE_CIDR } from './pki.ts';

export const MANIFESTS_DIR = '/etc/kubernetes/manifests';
export const PKI_DIR = '/etc/kubernetes/pki';
export const ETCD_DATA_DIR = '/var/lib/etcd';
export const ETCD_CLIENT_PORT = 2379;
export const ETCD_PEER_PORT = 2380;

/** The kubeconfigs on a master (server https://127.0.0.1:<securePort>). */
export const KUBECONFIGS = {
  controllerManager: '/etc/kubernetes/controller-manager.conf',
  scheduler: '/etc/kubernetes/scheduler.conf',
  admin: '/etc/kubernetes/admin.conf',
} as const;

export interface MasterInput {
  /** The master's node id (its etcd member name). */
  nodeId: string;
  kubernetesVersion: string;
  securePort: number;
  serviceCIDR?: string;
  podCIDR?: string;
}

const pki = (file: string) => `${PKI_DIR}/${file}`;

/** The pod's own address, as the kubelet fills it in (host network: the VM's address). */
const POD_IP_ENV = { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } };

function staticPod(component: WorkloadImage, version: string, args: string[], mounts: readonly HostMount[]) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: component, namespace: 'kube-system', labels: { component, tier: 'control-plane' } },
    spec: {
      hostNetwork: true,
      priorityClassName: 'system-node-critical',
      containers: [
        {
          name: component,
          image: workloadImage(component, version),
          command: [workloadBinary(component)],
          args,
          env: [POD_IP_ENV],
          volumeMounts: mounts.map((m) => ({ name: m.name, mountPath: m.path, readOnly: m.readOnly })),
        },
      ],
      volumes: mounts.map((m) => ({
        name: m.name,
        hostPath: { path: m.path, type: m.type },
      })),
    },
  };
}

interface HostMount {
  name: string;
  path: string;
  readOnly: boolean;
  type: 'Directory' | 'DirectoryOrCreate' | 'File';
}
const PKI_MOUNT: HostMount = { name: 'pki', path: PKI_DIR, readOnly: true, type: 'Directory' };
const kubeconfigMount = (path: string): HostMount => ({
  name: 'kubeconfig',
  path,
  readOnly: true,
  type: 'File',
});

export function etcdPod(m: MasterInput) {
  const peer = `https://$(POD_IP):${ETCD_PEER_PORT}`;
  return staticPod(
    'etcd',
    m.kubernetesVersion,
    [
      `--name=${m.nodeId}`,
      `--data-dir=${ETCD_DATA_DIR}`,
      `--listen-client-urls=https://0.0.0.0:${ETCD_CLIENT_PORT}`,
      `--advertise-client-urls=https://$(POD_IP):${ETCD_CLIENT_PORT}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=${m.nodeId}=${peer}`,
      '--initial-cluster-state=new',
      `--cert-file=${pki('etcd/server.crt')}`,
      `--key-file=${pki('etcd/server.key')}`,
      `--trusted-ca-file=${pki('etcd/ca.crt')}`,
      '--client-cert-auth=true',
      `--peer-cert-file=${pki('etcd/peer.crt')}`,
      `--peer-key-file=${pki('etcd/peer.key')}`,
      `--peer-trusted-ca-file=${pki('etcd/ca.crt')}`,
      '--peer-client-cert-auth=true',
      '--listen-metrics-urls=http://127.0.0.1:2381',
    ],
    [{ name: 'data', path: ETCD_DATA_DIR, readOnly: false, type: 'DirectoryOrCreate' }, PKI_MOUNT],
  );
}

export function apiServerPod(m: MasterInput) {
  return staticPod(
    'kube-apiserver',
    m.kubernetesVersion,
    [
      '--advertise-address=$(POD_IP)',
      `--secure-port=${m.securePort}`,
      `--etcd-servers=https://127.0.0.1:${ETCD_CLIENT_PORT}`,
      `--etcd-cafile=${pki('etcd/ca.crt')}`,
      `--etcd-certfile=${pki('apiserver-etcd-client.crt')}`,
      `--etcd-keyfile=${pki('apiserver-etcd-client.key')}`,
      `--client-ca-file=${pki('ca.crt')}`,
      `--tls-cert-file=${pki('apiserver.crt')}`,
      `--tls-private-key-file=${pki('apiserver.key')}`,
      `--kubelet-client-certificate=${pki('apiserver-kubelet-client.crt')}`,
      `--kubelet-client-key=${pki('apiserver-kubelet-client.key')}`,
      '--kubelet-preferred-address-types=InternalIP,Hostname',
      `--service-account-issuer=https://kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      `--service-account-key-file=${pki('sa.pub')}`,
      `--service-account-signing-key-file=${pki('sa.key')}`,
      `--service-cluster-ip-range=${m.serviceCIDR ?? DEFAULT_SERVICE_CIDR}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      // The kubelets' bootstrap token, as a static token file: no Secret in the workload cluster must exist first.
      `--token-auth-file=${pki('bootstrap-tokens.csv')}`,
      '--allow-privileged=true',
    ],
    [PKI_MOUNT],
  );
}

export function controllerManagerPod(m: MasterInput) {
  const conf = KUBECONFIGS.controllerManager;
  return staticPod(
    'kube-controller-manager',
    m.kubernetesVersion,
    [
      `--kubeconfig=${conf}`,
      `--authentication-kubeconfig=${conf}`,
      `--authorization-kubeconfig=${conf}`,
      '--bind-address=127.0.0.1',
      `--client-ca-file=${pki('ca.crt')}`,
      // Signs the kubelets' client certificates (their CSRs) with the cluster CA.
      `--cluster-signing-cert-file=${pki('ca.crt')}`,
      `--cluster-signing-key-file=${pki('ca.key')}`,
      `--root-ca-file=${pki('ca.crt')}`,
      `--service-account-private-key-file=${pki('sa.key')}`,
      '--use-service-account-credentials=true',
      ...LEADER_ELECTION,
      `--service-cluster-ip-range=${m.serviceCIDR ?? DEFAULT_SERVICE_CIDR}`,
      ...(m.podCIDR ? ['--allocate-node-cidrs=true', `--cluster-cidr=${m.podCIDR}`] : []),
    ],
    [PKI_MOUNT, kubeconfigMount(conf)],
  );
}

export function schedulerPod(m: MasterInput) {
  const conf = KUBECONFIGS.scheduler;
  return staticPod(
    'kube-scheduler',
    m.kubernetesVersion,
    [
      `--kubeconfig=${conf}`,
      `--authentication-kubeconfig=${conf}`,
      `--authorization-kubeconfig=${conf}`,
      '--bind-address=127.0.0.1',
      ...LEADER_ELECTION,
    ],
    [kubeconfigMount(conf)],
  );
}

/**
 * Leader election of the controller-manager and the scheduler, slower than
 * upstream's 15/10/2 s: a master emulated under TCG (or a loaded host) answers
 * its own API server's renewals in seconds, and with the default 10 s deadline
 * each lost lease restarted them before they got to work (the kubelets' CSRs
 * stayed Pending). A dead leader's successor waits at most the 60 s lease.
 */
export const LEADER_ELECTION = [
  '--leader-elect=true',
  '--leader-elect-lease-duration=60s',
  '--leader-elect-renew-deadline=45s',
  '--leader-elect-retry-period=5s',
];

/** The four manifests, by file name under MANIFESTS_DIR. */
export function staticPods(m: MasterInput): Record<string, object> {
  return {
    'etcd.yaml': etcdPod(m),
    'kube-apiserver.yaml': apiServerPod(m),
    'kube-controller-manager.yaml': controllerManagerPod(m),
    'kube-scheduler.yaml': schedulerPod(m),
  };
}
