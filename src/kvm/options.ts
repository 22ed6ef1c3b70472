// The KVM capability's operator flags and the options they give: the image VM
// pods run, the OS they boot, and how the operator reaches a workload
// cluster's API server to write its kubeconfig.
import {
  DEFAULT_FLATCAR_MIRROR,
  DEFAULT_OS_IMAGE,
  DEFAULT_VM_IMAGE,
  OS_IMAGES,
  type OsImage,
} from '../api/vm-image.ts';
import type { FlagValues, OperatorFlag } from '../capability.ts';
import type { MasterEndpoints } from './act/workload-kubeconfig.ts';
import type { VmChoice, VmOsChoice } from './plan/desired-node.ts';

export const WORKLOAD_API_CHOICES = ['auto', 'service', 'none'] as const;
export type WorkloadApiChoice = (typeof WORKLOAD_API_CHOICES)[number];

export interface KvmOptions {
  /** The image every VM pod runs (src/api/vm-image.ts is its contract) and the OS it boots. */
  vm: VmChoice;
  /** How the operator reaches a cluster's master Service; undefined: the VM runtime writes the kubeconfig. */
  masterEndpoints: MasterEndpoints;
  /** What was chosen, for the log. */
  workloadApi: Exclude<WorkloadApiChoice, 'auto'>;
}

export const kvmFlags: OperatorFlag[] = [
  {
    name: 'kvm-vm-image',
    type: 'string',
    placeholder: 'IMAGE',
    help: `the image KVMCluster VM pods run (default ${DEFAULT_VM_IMAGE}, what \`make vm-image\` builds)`,
    env: 'NODEWARDEN_KVM_VM_IMAGE',
  },
  {
    name: 'kvm-os-image',
    type: 'string',
    placeholder: 'OS',
    default: DEFAULT_OS_IMAGE,
    help: "what KVMCluster VMs boot: debian (the OS image inside the VM image, no\ndownload) or flatcar (the release's Flatcar PXE kernel and initramfs,\ndownloaded once per host, signature-checked, cached in a host folder)",
  },
  {
    name: 'kvm-os-mirror',
    type: 'string',
    placeholder: 'URL',
    help: `with --kvm-os-image flatcar: the base URL of <version>/ release folders\n(default ${DEFAULT_FLATCAR_MIRROR})`,
  },
  {
    name: 'kvm-workload-api',
    type: 'string',
    placeholder: 'HOW',
    default: 'auto',
    help: "how the operator reaches a workload cluster's API server to write its\nkubeconfig Secret: service (the master Service by its DNS name, from a pod\nof this cluster), none (the VM runtime writes it, as the simulated\nhypervisor does), or auto (service when the operator runs in a pod)",
  },
];

/** `auto`: a pod has the Service's DNS name; a process on a workstation resolves nothing of the cluster's. */
export function chooseWorkloadApi(choice: WorkloadApiChoice, runsIn: 'pod' | 'host'): 'service' | 'none' {
  if (choice !== 'auto') return choice;
  return runsIn === 'pod' ? 'service' : 'none';
}

/** --kvm-os-image and --kvm-os-mirror, checked: a mirror only with flatcar, and an http(s) URL. */
export function vmOsFromFlags(flags: FlagValues): VmOsChoice {
  const image = String(flags['kvm-os-image'] || DEFAULT_OS_IMAGE) as OsImage;
  if (!OS_IMAGES.includes(image))
    throw new Error(`--kvm-os-image: "${image}" is not one of ${OS_IMAGES.join(', ')}`);
  const mirror = flags['kvm-os-mirror'];
  if (typeof mirror !== 'string' || mirror === '') return { image };
  if (image !== 'flatcar') throw new Error('--kvm-os-mirror: only with --kvm-os-image flatcar');
  if (!/^https?:\/\/[^/]+/.test(mirror))
    throw new Error(`--kvm-os-mirror: "${mirror}" is not an http(s) URL`);
  return { image, mirror };
}

export async function kvmOptions(flags: FlagValues, runsIn: 'pod' | 'host'): Promise<KvmOptions> {
  const given = String(flags['kvm-workload-api'] ?? 'auto') as WorkloadApiChoice;
  if (!WORKLOAD_API_CHOICES.includes(given))
    throw new Error(`--kvm-workload-api: "${given}" is not one of ${WORKLOAD_API_CHOICES.join(', ')}`);
  const image = flags['kvm-vm-image'];
  const vm = {
    image: typeof image === 'string' && image !== '' ? image : DEFAULT_VM_IMAGE,
    os: vmOsFromFlags(flags),
  };
  const workloadApi = chooseWorkloadApi(given, runsIn);
  if (workloadApi === 'none') return { vm, workloadApi, masterEndpoints: () => undefined };
  const { masterServiceEndpoint } = await import('./plan/workload-kubeconfig.ts');
  return { vm, workloadApi, masterEndpoints: masterServiceEndpoint };
}
