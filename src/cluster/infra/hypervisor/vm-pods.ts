// What a VM pod asks for, read the way a k8s-kvm container reads its
// environment: its cluster and role from labels, what the VM is and runs from
// annotations (the VM image contract, src/api/vm-image.ts), and whether it runs on a hypervisor host yet.
// And the Node the VM becomes in its workload cluster. Pure functions.
import type { V1Node } from '@kubernetes/client-node';
import { VM_CLUSTER_LABEL, VM_ROLE_LABEL, VmAnnotations, type VmRole } from '../../../api/vm-image.ts';
import type { K8sObject } from '../../../runtime/resources.ts';
import { labelValue, simulatedNode } from '../../fleet.ts';

/** What the VM is and runs; read from its pod's annotations. */
export interface VmSpec {
  kubernetesVersion: string;
  osVersion: string;
  cpus: string;
  memory: string;
  nodeLabels: Record<string, string>;
}

export interface SecretRef {
  namespace: string;
  name: string;
}

/** A VM pod as the hypervisor sees it. */
export interface ObservedPod {
  namespace: string;
  name: string;
  uid: string;
  cluster: string;
  role: VmRole;
  /** The management-cluster node it runs on, once scheduled. */
  host?: string;
  /** Running on a node: the VM starts booting. */
  running: boolean;
  /** Succeeded or Failed: the VM's process is gone although the pod stays. */
  finished: boolean;
  spec: VmSpec;
  kubeconfigSecret?: SecretRef;
  /** Annotations that could not be read, for the log; defaults were used instead. */
  problems: string[];
}

export interface PodLike extends K8sObject {
  spec?: { nodeName?: string };
  status?: { phase?: string };
}

/** Defaults for what a pod leaves out: the management cluster's version, a small VM. */
export interface VmDefaults {
  kubernetesVersion: string;
}

/** The management cluster's real nodes (nodewarden.dev/real), by name: the VM image runs the VM pods there. */
export type RealNodes = ReadonlySet<string>;

const DEFAULT_OS = 'nodewarden simulated VM';
const CPUS = /^[1-9][0-9]{0,3}$/;
const MEMORY = /^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$/;

/**
 * The pod as a VM the simulator runs, or undefined when it carries no cluster
 * label, or when it was scheduled onto a real node: the VM image runs a real VM
 * there, its workload cluster is real and the operator writes its kubeconfig.
 */
export function observePod(
  pod: PodLike,
  defaults: VmDefaults,
  realNodes: RealNodes,
): ObservedPod | undefined {
  const meta = pod.metadata ?? {};
  const cluster = meta.labels?.[VM_CLUSTER_LABEL];
  const host = pod.spec?.nodeName;
  if (!cluster || !meta.name || !meta.namespace || (host && realNodes.has(host))) return undefined;
  const a = meta.annotations ?? {};
  const problems: string[] = [];
  const role: VmRole = meta.labels?.[VM_ROLE_LABEL] === 'master' ? 'master' : 'worker';
  const cpus = a[VmAnnotations.cpus] ?? '2';
  const memory = a[VmAnnotations.memory] ?? '4Gi';
  if (!CPUS.test(cpus)) problems.push(`${VmAnnotations.cpus} "${cpus}" is not a whole number`);
  if (!MEMORY.test(memory)) problems.push(`${VmAnnotations.memory} "${memory}" is not a quantity`);
  const phase = pod.status?.phase;
  const secret = parseSecretRef(a[VmAnnotations.kubeconfigSecret], problems);
  return {
    namespace: meta.namespace,
    name: meta.name,
    uid: meta.uid ?? '',
    cluster,
    role,
    ...(host ? { host } : {}),
    running: phase === 'Running' && !!host,
    finished: phase === 'Succeeded' || phase === 'Failed',
    spec: {
      kubernetesVersion: a[VmAnnotations.kubernetesVersion] || defaults.kubernetesVersion,
      osVersion: a[VmAnnotations.osVersion] || DEFAULT_OS,
      cpus: CPUS.test(cpus) ? cpus : '2',
      memory: MEMORY.test(memory) ? memory : '4Gi',
      nodeLabels: parseNodeLabels(a[VmAnnotations.nodeLabels], problems),
    },
    ...(secret ? { kubeconfigSecret: secret } : {}),
    problems,
  };
}

function parseSecretRef(text: string | undefined, problems: string[]): SecretRef | undefined {
  if (!text) return undefined;
  const [namespace, name, ...rest] = text.split('/');
  if (!namespace || !name || rest.length > 0) {
    problems.push(`${VmAnnotations.kubeconfigSecret} "${text}" is not <namespace>/<name>`);
    return undefined;
  }
  return { namespace, name };
}

function parseNodeLabels(text: string | undefined, problems: string[]): Record<string, string> {
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error();
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') labels[k] = v;
    return labels;
  } catch {
    problems.push(`${VmAnnotations.nodeLabels} is not a JSON object of strings`);
    return {};
  }
}

/** What the Node of a VM needs to know of it. */
export interface NodeOfVm {
  name: string;
  role: VmRole;
  host: string;
  uid: string;
  spec: VmSpec;
}

/** The workload cluster's Node for a VM: kwok-managed, its capacity and versions the VM's. */
export function vmNode(vm: NodeOfVm): V1Node {
  return simulatedNode({
    name: vm.name,
    // The hypervisor host stands in for the zone: one node of a cluster per host (anti-affinity).
    zone: labelValue(vm.host) || 'kvm',
    instanceType: `kvm-${vm.spec.cpus}cpu-${vm.spec.memory.toLowerCase()}`,
    pool: vm.role,
    controlPlane: vm.role === 'master',
    cpu: vm.spec.cpus,
    memory: vm.spec.memory,
    pods: 110,
    kubeletVersion: vm.spec.kubernetesVersion,
    image: vm.spec.osVersion,
    labels: vm.spec.nodeLabels,
    // A new VM is a new boot, even under a name used before.
    bootID: vm.uid || vm.name,
  });
}
