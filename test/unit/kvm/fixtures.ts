// A KVMCluster to test the pure modules with: n masters m1.., n workers w1..,
// the sizes of the anchor's test tables, and indexes 1.. in node order.
import {
  type KVMCluster,
  type KVMClusterSpecType,
  KVMClusters,
  type KVMNodeSpec,
} from '../../../src/api/kvm.ts';
import { issueClusterPki } from '../../../src/kvm/act/pki.ts';
import { type ClusterPki, desiredCertificates } from '../../../src/kvm/plan/pki.ts';
import { clusterNodes } from '../../../src/kvm/plan/spec.ts';

export interface ClusterShape {
  name?: string;
  namespace?: string;
  generation?: number;
  masters?: number;
  workers?: number;
  spec?: Partial<KVMClusterSpecType>;
}

export const masterSpec = (id: string, extra: Partial<KVMNodeSpec> = {}): KVMNodeSpec => ({
  id,
  cpus: 1,
  memory: '1G',
  ...extra,
});
export const workerSpec = (id: string, extra: Partial<KVMNodeSpec> = {}): KVMNodeSpec => ({
  id,
  cpus: 4,
  memory: '8G',
  ...extra,
});

export function kvmCluster(shape: ClusterShape = {}): KVMCluster {
  const masters = Array.from({ length: shape.masters ?? 1 }, (_, i) => masterSpec(`m${i + 1}`));
  const workers = Array.from({ length: shape.workers ?? 1 }, (_, i) => workerSpec(`w${i + 1}`));
  return KVMClusters.make(
    { name: shape.name ?? 'c1', namespace: shape.namespace ?? 'default', generation: shape.generation ?? 1 },
    {
      masters,
      workers,
      release: { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' },
      network: { vni: 7 },
      api: { domain: 'api.c1.example.com' },
      ...shape.spec,
    },
  );
}

/** Indexes 1.. in node order (masters first), as the first pass gives them. */
export function firstIndexes(kc: KVMCluster): Record<string, number> {
  return Object.fromEntries(clusterNodes(kc.spec).map((n, i) => [n.id, i + 1]));
}

const pkis = new Map<string, ClusterPki>();

/**
 * A real PKI for the cluster (issued as the operator issues one), the same
 * one for every spec that wants the same certificates: so a node's spec hash
 * changes with what a test changes, not with fresh keys.
 */
export function clusterPki(kc: KVMCluster): ClusterPki {
  const cluster = kc.metadata.name ?? '';
  const key = JSON.stringify([cluster, desiredCertificates(cluster, kc.spec)]);
  let pki = pkis.get(key);
  if (!pki) {
    pki = issueClusterPki(cluster, kc.spec, Date.parse('2026-01-01T00:00:00Z'));
    pkis.set(key, pki);
  }
  return pki;
}
