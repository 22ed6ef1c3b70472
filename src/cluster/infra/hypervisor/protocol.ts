// The simulated hypervisor's wire protocol, the one face of it a capability
// may see. A pod in the management cluster that carries VM_CLUSTER_LABEL asks
// for a VM (one pod, one VM, one workload-cluster node), the way a k8s-kvm
// container starts QEMU: once the pod runs on a node, the VM boots after a
// boot delay and joins the workload cluster as a Node named as the pod. The
// first master VM of a cluster brings up that cluster's own control plane and
// writes its kubeconfig into the Secret the pod names. When the pod is gone
// the VM is off: its Node stops posting status (Ready turns Unknown) and stays
// until someone deletes it. When the namespace of a cluster's pods is deleted
// (its etcd volumes with it), the control plane is stopped, its state removed
// and its kubeconfig Secret deleted. Beside that, a JSON console (the kit's
// routes) lists VMs and sets faults; its endpoint is published in
// kube-system/nodewarden-simulated-hypervisor (see kit/discovery.ts).
//
// What a client may rely on besides (added with the simulator): the kubeconfig
// is self-contained (certificates inline; the server is on loopback); a pod
// with a deletionTimestamp still runs its VM until the pod object is gone (a
// finalizer holds it on while the operator drains); an off VM's Node has every
// condition Unknown, the node controller's reason NodeStatusUnknown, and no
// kwok annotation; a pod that is Succeeded or Failed is an off VM too; workers
// boot only once their cluster's control plane runs.

/** The simulator's name: its folder, its ConfigMap, its console command. */
export const HYPERVISOR_SIMULATOR = 'hypervisor';

/** Label on a VM pod: the id of the workload cluster the VM is a node of. */
export const VM_CLUSTER_LABEL = 'hypervisor.nodewarden.dev/cluster';
/** Label on a VM pod: "master" or "worker". */
export const VM_ROLE_LABEL = 'hypervisor.nodewarden.dev/role';

/** Annotations on a VM pod: what the VM is and runs (read when it boots). */
export const VmAnnotations = {
  /** The kubelet version its Node reports, e.g. "v1.37.1". */
  kubernetesVersion: 'hypervisor.nodewarden.dev/kubernetes-version',
  /** The OS image its Node reports, e.g. "Flatcar Container Linux 4230.2.0". */
  osVersion: 'hypervisor.nodewarden.dev/os-version',
  /** Virtual CPUs, a whole number; the Node's capacity. */
  cpus: 'hypervisor.nodewarden.dev/cpus',
  /** Memory as a Kubernetes quantity, e.g. "8Gi"; the Node's capacity. */
  memory: 'hypervisor.nodewarden.dev/memory',
  /** "<namespace>/<name>" of the Secret (key `kubeconfig`) that receives the workload cluster's kubeconfig. */
  kubeconfigSecret: 'hypervisor.nodewarden.dev/kubeconfig-secret',
  /** Extra labels of the VM's Node, as a JSON object (e.g. release labels). */
  nodeLabels: 'hypervisor.nodewarden.dev/node-labels',
} as const;

/** The key of the published ConfigMap (kit/discovery.ts) holding the console's base URL. */
export const HYPERVISOR_ENDPOINT_KEY = 'endpoint';

/** The console's paths (JSON, loopback, no auth). */
export const consolePaths = {
  /** GET: every VM (Vm[]); `?cluster=ID` one cluster's. */
  vms: '/vms',
  /** GET: every workload control plane (WorkloadControlPlane[]). */
  clusters: '/clusters',
  /** GET: HypervisorFaults; PUT: merge a patch of them; DELETE: clear them all. */
  faults: '/faults',
  /** GET: HypervisorSettings; PUT: merge a patch of them. */
  settings: '/settings',
} as const;

/** The key of the kubeconfig in the Secret a master VM names. */
export const KUBECONFIG_KEY = 'kubeconfig';

export type VmRole = 'master' | 'worker';

/**
 * A VM's state, as the console reports it. Pending (added after the first
 * draft): its pod does not run on a node yet, so the VM has not started booting.
 */
export type VmState = 'Pending' | 'Booting' | 'Running' | 'Dead' | 'Off';

export interface Vm {
  /** The pod's namespace and name; the Node's name is the pod's name. */
  namespace: string;
  name: string;
  cluster: string;
  role: VmRole;
  /** The management-cluster node the pod runs on (the hypervisor host). */
  host: string;
  state: VmState;
  /** When it booted or will boot (ms since the epoch). */
  bootsAt: number;
}

/** What the console says of a workload control plane. */
export interface WorkloadControlPlane {
  cluster: string;
  /** Pending (added after the first draft): no master VM has booted yet, so there is no control plane. */
  state: 'Pending' | 'Starting' | 'Running' | 'Stopped' | 'Removing';
  /** The namespace of its VM pods; deleting it removes the cluster. */
  namespace?: string;
  /** "<namespace>/<name>" of the Secret holding its kubeconfig, once written. */
  kubeconfigSecret?: string;
  /** The API server's URL once it runs. */
  server?: string;
}

/**
 * Faults the console accepts (PUT /faults with a patch; GET /faults): each VM
 * named (the pod's name) never boots, dies (its Node turns NotReady while the
 * pod stays), or boots slowly; `failNextBoots` makes the next N VMs to boot
 * never boot.
 */
export interface HypervisorFaults {
  neverBoot: string[];
  die: string[];
  /** Pod name → boot delay in milliseconds. */
  slowBoot: Record<string, number>;
  failNextBoots: number;
}

/** Settings (PUT /settings): the boot delay of every VM without a slow-boot fault. */
export interface HypervisorSettings {
  bootDelayMs: number;
}
