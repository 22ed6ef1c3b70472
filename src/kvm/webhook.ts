// The validating webhook for KVMCluster: what the schema and CEL cannot see,
// because it needs the other clusters or the old object. A cluster id (its
// name) and a VNI are unique across every namespace — the id names a
// namespace and a control plane, the VNI the VMs' network; an explicit
// NodePort may not be another cluster's; an update must keep at least one of
// the masters the cluster has (replacing every master at once loses etcd).
// Memory strings are parsed the way the controller will. Each message names
// the field and says what to fix.
import { type KVMCluster, KVMClusters } from '../api/kvm.ts';
import type { CacheRegistrar } from '../runtime/host.ts';
import type { K8sObject } from '../runtime/resources.ts';
import type { AdmissionHandler } from '../runtime/webhook.ts';
import { clusterNodes, parseMemory } from './plan/spec.ts';

const key = (c: KVMCluster) => `${c.metadata.namespace}/${c.metadata.name}`;

/** Everything wrong with `kc` given the other clusters and its previous version (empty: it is fine). */
export function kvmClusterProblems(
  kc: KVMCluster,
  others: readonly KVMCluster[],
  old?: KVMCluster,
): string[] {
  const problems: string[] = [];
  const rivals = others.filter((o) => key(o) !== key(kc));
  const sameId = rivals.find((o) => o.metadata.name === kc.metadata.name);
  if (sameId) {
    problems.push(
      `metadata.name: cluster id "${kc.metadata.name}" is taken by the KVMCluster in namespace ${sameId.metadata.namespace}; ids are unique across namespaces (each names a namespace)`,
    );
  }
  const vni = kc.spec.network.vni;
  const sameVni = rivals.find((o) => o.spec.network.vni === vni);
  if (sameVni) {
    problems.push(`spec.network.vni: ${vni} is in use by cluster ${key(sameVni)}; pick a free VNI`);
  }
  const taken = new Map<number, string>();
  for (const o of rivals)
    for (const p of o.spec.portMappings ?? []) if (p.nodePort) taken.set(p.nodePort, key(o));
  for (const p of kc.spec.portMappings ?? []) {
    const holder = p.nodePort ? taken.get(p.nodePort) : undefined;
    if (holder) {
      problems.push(
        `spec.portMappings[${p.name}].nodePort: ${p.nodePort} is used by cluster ${holder}; pick another or leave it out to have one allocated`,
      );
    }
  }
  for (const n of clusterNodes(kc.spec)) {
    try {
      parseMemory(n.spec.memory);
    } catch (err) {
      problems.push(`spec.${n.role}s[${n.id}].memory: ${(err as Error).message}`);
    }
  }
  if (old) {
    const kept = kc.spec.masters.filter((m) => old.spec.masters.some((o) => o.id === m.id));
    if (kept.length === 0) {
      problems.push(
        `spec.masters: every master (${old.spec.masters.map((m) => m.id).join(', ')}) would be replaced at once, losing etcd; keep at least one and change the others over several updates`,
      );
    }
  }
  return problems;
}

/** Reads the other clusters from the shared cache (registered here, so the manager syncs it). */
export function kvmClusterAdmission(cache: Pick<CacheRegistrar, 'informer'>): AdmissionHandler {
  const clusters = cache.informer<KVMCluster & K8sObject>(KVMClusters.type);
  return (req) => {
    if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { allowed: true };
    // An empty store would let a taken id or VNI through: fail closed until the list is in.
    if (!clusters.hasSynced()) {
      return { allowed: false, code: 503, message: 'the webhook cache is not synced yet, please try again' };
    }
    const kc = req.object as unknown as KVMCluster | undefined;
    if (!kc?.spec) return { allowed: false, code: 400, message: 'request has no KVMCluster' };
    // Being deleted: only finalizers and status change from here on.
    if (kc.metadata.deletionTimestamp) return { allowed: true };
    const old = req.operation === 'UPDATE' ? (req.oldObject as unknown as KVMCluster | undefined) : undefined;
    const problems = kvmClusterProblems(kc, clusters.list(), old);
    return problems.length === 0 ? { allowed: true } : { allowed: false, message: problems.join('; ') };
  };
}
