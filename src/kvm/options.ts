// The KVM capability's operator flags and the options they give: the image VM
// pods run, and how the operator reaches a workload cluster's API server to
// write its kubeconfig.
import { DEFAULT_VM_IMAGE } from '../api/vm-image.ts';
import type { FlagValues, OperatorFlag } from '../capability.ts';
import type { MasterEndpoints } from './act/workload-kubeconfig.ts';

export const WORKLOAD_API_CHOICES = ['auto', 'service', 'none'] as const;
export type WorkloadApiChoice = (typeof WORKLOAD_API_CHOICES)[number];

export interface KvmOptions {
  /** The image every VM pod runs (src/api/vm-image.ts is its contract). */
  vmImage: string;
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

export async function kvmOptions(flags: FlagValues, runsIn: 'pod' | 'host'): Promise<KvmOptions> {
  const given = String(flags['kvm-workload-api'] ?? 'auto') as WorkloadApiChoice;
  if (!WORKLOAD_API_CHOICES.includes(given))
    throw new Error(`--kvm-workload-api: "${given}" is not one of ${WORKLOAD_API_CHOICES.join(', ')}`);
  const image = flags['kvm-vm-image'];
  const vmImage = typeof image === 'string' && image !== '' ? image : DEFAULT_VM_IMAGE;
  const workloadApi = chooseWorkloadApi(given, runsIn);
  if (workloadApi === 'none') return { vmImage, workloadApi, masterEndpoints: () => undefined };
  const { masterServiceEndpoint } = await import('./plan/workload-kubeconfig.ts');
  return { vmImage, workloadApi, masterEndpoints: masterServiceEndpoint };
}
