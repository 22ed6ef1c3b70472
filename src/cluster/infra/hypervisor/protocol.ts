// The simulated hypervisor's own wire protocol: its JSON console (the kit's
// routes), which lists VMs and control planes and sets faults; its endpoint is
// published in kube-system/nodewarden-simulated-hypervisor (see
// kit/discovery.ts). What it reads from a VM pod and writes back (labels,
// annotations, the kubeconfig Secret) is not its own: that is the VM image
// contract in src/api/vm-image.ts, which the KVM capability renders and this
// simulator consumes like any VM runtime.
import type { VmRole } from '../../../api/vm-image.ts';

/** The simulator's name: its folder, its ConfigMap, its console command. */
export const HYPERVISOR_SIMULATOR = 'hypervisor';

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
