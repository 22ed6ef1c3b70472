// The VM image contract: what the KVM capability renders into a VM pod and
// every VM runtime consumes — the simulated hypervisor, and the real VM image
// (`make vm-image`: its entrypoint src/kvm/vm/ and the Debian OS image its
// guest boots, hack/build-vm-os-image.sh). Both sides import this file and
// neither imports the other's code. Each entry says who writes it and
// who reads it; changing a value here changes both sides at once.
//
// What a runtime promises besides, and the operator relies on:
// - A pod carrying VM_CLUSTER_LABEL is one VM, one node of a workload cluster.
//   Once the pod runs on a node the VM boots and joins the workload cluster as
//   a Node named as the pod (the guest takes its hostname from the pod's name).
// - The first master VM of a cluster brings up its control plane and writes a
//   self-contained kubeconfig (certificates inline) under KUBECONFIG_KEY into
//   the Secret named by VmAnnotations.kubeconfigSecret; workers boot only once
//   that control plane runs.
// - A pod with a deletionTimestamp still runs its VM until the pod object is
//   gone (the operator's drain finalizer holds it on while it drains); a pod
//   that is gone, Succeeded or Failed is an off VM: its Node stays, with every
//   condition Unknown (reason NodeStatusUnknown), until someone deletes it.
// - When the namespace of a cluster's pods is deleted, the control plane is
//   stopped, its state removed and its kubeconfig Secret deleted.

// --- The VM pod's labels (the operator writes them on its Deployments' pod template;
// the runtime reads them to know a VM, its cluster and its role) ---

/** Label on a VM pod: the id of the workload cluster the VM is a node of. */
export const VM_CLUSTER_LABEL = 'hypervisor.nodewarden.dev/cluster';
/** Label on a VM pod: its VmRole. */
export const VM_ROLE_LABEL = 'hypervisor.nodewarden.dev/role';

export type VmRole = 'master' | 'worker';

// --- The VM pod's annotations (the operator writes them; the runtime reads them when the VM boots) ---

/** What the VM is and runs. */
export const VmAnnotations = {
  /** The kubelet version its Node reports, e.g. "v1.37.1". */
  kubernetesVersion: 'hypervisor.nodewarden.dev/kubernetes-version',
  /** The OS image its Node reports, e.g. "Flatcar Container Linux 4230.2.0". */
  osVersion: 'hypervisor.nodewarden.dev/os-version',
  /** Virtual CPUs, a whole number; the Node's capacity. */
  cpus: 'hypervisor.nodewarden.dev/cpus',
  /** Memory as a Kubernetes quantity, e.g. "8Gi"; the Node's capacity. */
  memory: 'hypervisor.nodewarden.dev/memory',
  /** "<namespace>/<name>" of the Secret (key KUBECONFIG_KEY) that receives the workload cluster's kubeconfig. */
  kubeconfigSecret: 'hypervisor.nodewarden.dev/kubeconfig-secret',
  /** Extra labels of the VM's Node, as a JSON object (e.g. release labels). */
  nodeLabels: 'hypervisor.nodewarden.dev/node-labels',
} as const;

// --- The kubeconfig Secret (a master VM writes it; the operator reads it by name) ---

/** The key of the kubeconfig in the Secret a master VM names. */
export const KUBECONFIG_KEY = 'kubeconfig';

// --- The VM container (the operator renders it; the image's entrypoint starts QEMU from it) ---

/**
 * The image every VM pod runs unless the operator's --kvm-vm-image flag names
 * another: what `make vm-image` builds (hack/build-vm-image.sh), imported into
 * a node's containerd under this name; localhost/ says it was built here.
 */
export const VM_IMAGE_REPOSITORY = 'localhost/nodewarden-vm';
export const vmImageName = (version: string) => `${VM_IMAGE_REPOSITORY}:${version}`;
/** The flag's default: the app's version (package.json; a unit test holds the two together). */
export const DEFAULT_VM_IMAGE = vmImageName('0.1.0');
/** The container's name in the VM pod. */
export const VM_CONTAINER = 'k8s-kvm';

/** The container's environment: the VM's size, disks, OS and ports. */
export const VmEnv = {
  /** Virtual CPUs, a whole number. */
  cores: 'CORES',
  /** The VM's memory in MiB, as QEMU's -m takes it, e.g. "8192M". */
  memory: 'MEMORY',
  /** VmRole: masters get the etcd share (VmMounts.etcdData over 9p as ETCD_SHARE_TAG). */
  role: 'ROLE',
  /** Which OS the VM boots: an OsImage. */
  osImage: 'OS_IMAGE',
  /** The Flatcar release to boot when OS_IMAGE is flatcar, e.g. "4230.2.0"; the Debian image ignores it. */
  osVersion: 'OS_VERSION',
  /** OS_IMAGE=flatcar: the base URL holding <version>/ release folders; DEFAULT_FLATCAR_MIRROR when unset. */
  osMirror: 'OS_MIRROR',
  /**
   * OS_IMAGE=flatcar, optional: a file holding the OpenPGP public key (armored) the
   * release's signatures must verify against; Flatcar's image-signing key when unset.
   * For a mirror that signs with its own key, or once Flatcar signs with a subkey
   * newer than the image carries.
   */
  osKeyring: 'OS_KEYRING',
  /** Size of the root disk, a qcow2 overlay over the OS image, e.g. "20G" (the guest grows its file system to it). */
  diskOs: 'DISK_OS',
  /** Size of the container-runtime disk (serial dockerfs), e.g. "50G". */
  diskDocker: 'DISK_DOCKER',
  /** Size of the kubelet's disk (serial kubeletfs), e.g. "5G". */
  diskKubelet: 'DISK_KUBELET',
  /** The pod's name (from the downward API), handed to the guest as its hostname (HOSTNAME_FW_CFG). */
  hostname: 'HOSTNAME',
  /** The port /healthz answers on, on the pod's loopback: vmHealthPort(vni). */
  healthPort: 'HEALTH_PORT',
  /** The pod's termination grace period: preStop waits this long, less a margin, for the guest to power off. */
  graceSeconds: 'GRACE_SECONDS',
} as const;

/**
 * The OS a VM boots. `debian`: the image `make vm-os-image` builds
 * (hack/build-vm-os-image.sh), inside the VM image at VM_OS_IMAGE_DIR, no
 * download. `flatcar`: the anchor's path, Flatcar's PXE kernel and initramfs
 * of OS_VERSION downloaded from OS_MIRROR, verified against their detached
 * signatures, and kept in VmMounts.osCache/<version>/ (a hostPath, so one
 * download serves every VM of a host); chosen by the operator's --kvm-os-image.
 */
export type OsImage = 'debian' | 'flatcar';
export const OS_IMAGES: readonly OsImage[] = ['debian', 'flatcar'];
export const DEFAULT_OS_IMAGE: OsImage = 'debian';

/**
 * The OS its Node reports (the kubelet's nodeInfo.osImage, /etc/os-release's PRETTY_NAME):
 * Debian's is the suite hack/build-vm-os-image.sh builds, whatever the spec's osVersion.
 */
export function osImageName(os: OsImage, osVersion: string): string {
  return os === 'debian' ? 'Debian GNU/Linux 12 (bookworm)' : `Flatcar Container Linux ${osVersion}`;
}
/** Flatcar's stable channel: <mirror><version>/flatcar_production_pxe.vmlinuz and the rest. */
export const DEFAULT_FLATCAR_MIRROR = 'https://stable.release.flatcar-linux.net/amd64-usr/';

/** Where the VM image holds the Debian OS image: vmlinuz, initrd.img, root.qcow2. */
export const VM_OS_IMAGE_DIR = '/var/lib/nodewarden/os';

/** Where the container finds its inputs and keeps its state. */
export const VmMounts = {
  /** The node's ConfigMap: the Ignition config under USER_DATA_KEY. */
  ignition: '/var/lib/ignition',
  /** The VM's disk images (an emptyDir: a new pod is a new VM). */
  rootfs: '/var/lib/vm',
  /** Masters only: etcd's data, shared into the guest over 9p as ETCD_SHARE_TAG. */
  etcdData: '/etc/kubernetes/data/etcd',
  /** OS_IMAGE=flatcar only: the host's cache of downloaded Flatcar releases. */
  osCache: '/var/cache/nodewarden/os',
} as const;

/** The key of the node's ConfigMap holding its Ignition config: JSON, gzipped, base64. */
export const USER_DATA_KEY = 'user_data';

/**
 * The port the container answers health checks on: a base offset by the
 * cluster's VNI, so VMs of different clusters never collide (the anchor's
 * health endpoint and shutdown-deferrer ports).
 */
export const VM_HEALTH_PORT_BASE = 23000;
/** The path of the container's health check: 200 once the guest said GUEST_READY_LINE, 503 before. */
export const VM_HEALTH_PATH = '/healthz';

export function vmHealthPort(vni: number): number {
  return VM_HEALTH_PORT_BASE + vni;
}

/**
 * The probe's command. The pod's address belongs to the guest (it is bridged
 * to the VM), so an httpGet probe would reach the guest, not the container:
 * /healthz listens on the pod's loopback and the probe asks it from inside.
 * No -T: Debian's static busybox 1.35 wget crashes with it; the probe's
 * timeoutSeconds bounds it.
 */
export function vmHealthProbeCommand(port: number): string[] {
  return ['/bin/busybox', 'wget', '-q', '-O', '/dev/null', `http://127.0.0.1:${port}${VM_HEALTH_PATH}`];
}

/**
 * The port a master VM serves etcd on (the master Service targets it). Its API
 * server listens on the spec's secure port, handed over as NodeEnv.apiSecurePort.
 */
export const VM_ETCD_PORT = 2379;

/**
 * The container's preStop command: asks the guest to power off (QMP
 * system_powerdown), waits for QEMU to exit, and stops it (QMP quit) when
 * GRACE_SECONDS less a margin have passed.
 */
export const VM_SHUTDOWN_COMMAND = ['/qemu-shutdown'];

/**
 * The pod's network, as the container hands it on (the anchor's containervmm
 * design): the pod's address, its route and its MAC move to the VM — eth0 and
 * a tap join a bridge inside the pod's network namespace, and a DHCP server
 * there answers the VM's MAC with the pod's address, gateway and DNS servers.
 * So a Service with a selector reaches the VM and no host bridge is needed.
 * The guest's interface is eth0 and asks DHCP for its address: an Ignition
 * config must not give it a static one.
 */
export const GUEST_INTERFACE = 'eth0';

// --- The guest (the container provides these to the VM; the Ignition config the operator renders uses them) ---

/** The fw_cfg name under which the container hands the VM its pod's name (QEMU -fw_cfg name=...,string=...). */
export const HOSTNAME_FW_CFG = 'opt/io.nodewarden/hostname';

/** The fw_cfg names the Ignition config is handed over under: Flatcar's and Ignition's own (platform qemu). */
export const IGNITION_FW_CFG_NAMES = ['opt/org.flatcar-linux/config', 'opt/com.coreos/config'] as const;

/** The virtio-serial port (/dev/virtio-ports/<name> in the guest) the guest says it is up on. */
export const GUEST_READY_PORT = 'io.nodewarden.guest';
/** The line the guest writes there once it applied its Ignition config and its network is up. */
export const GUEST_READY_LINE = 'ready';
/** The prefix of the lines the Debian OS image prints on its serial console (the pod's log) about what it became. */
export const GUEST_REPORT_PREFIX = 'nodewarden-guest: ';

/**
 * The Debian OS image's unit that imports the control plane's images
 * (workload-images.ts) from GUEST_IMAGES_DIR into containerd on every boot:
 * containerd's root is a fresh disk each time the VM starts. The kubelet's unit
 * the Ignition config writes wants it and starts after it; Flatcar lacks it.
 */
export const GUEST_IMAGES_UNIT = 'nodewarden-images.service';
/** Where the Debian OS image keeps those images, one OCI archive per image. */
export const GUEST_IMAGES_DIR = '/usr/local/share/nodewarden/images';

/** The VM's data disks as the guest sees them (the serials the container gives QEMU's drives). */
export const VmDisks = {
  /** The container runtime's disk (DISK_DOCKER in size). */
  containerd: '/dev/disk/by-id/virtio-dockerfs',
  /** The kubelet's disk. */
  kubelet: '/dev/disk/by-id/virtio-kubeletfs',
} as const;

/** The 9p mount tag of a master's etcd share (VmMounts.etcdData on the host side). */
export const ETCD_SHARE_TAG = 'etcdshare';

/** The file the Ignition config writes for the guest's services: KEY=value lines of NodeEnv. */
export const NODE_ENV_PATH = '/etc/kubernetes/node.env';

/** The guest's node environment (the operator renders it; the guest's kubelet set-up reads it). */
export const NodeEnv = {
  clusterId: 'CLUSTER_ID',
  nodeId: 'NODE_ID',
  /** VmRole. */
  nodeRole: 'NODE_ROLE',
  /** The node's index in its cluster, for its whole life (it names its etcd volume and its address). */
  nodeIndex: 'NODE_INDEX',
  apiDomain: 'API_DOMAIN',
  apiSecurePort: 'API_SECURE_PORT',
  kubernetesVersion: 'KUBERNETES_VERSION',
  releaseVersion: 'RELEASE_VERSION',
  /** Only when the spec sets it. */
  podCidr: 'POD_CIDR',
  /** Only when the spec sets it. */
  serviceCidr: 'SERVICE_CIDR',
} as const;
