// Drains the rollout waits on: our NodeMaintenances whose evictions a
// PodDisruptionBudget (or another refusal) holds back right now. Read from the
// maintenance's status.blockedPods, so the NodeVersion says why it waits within
// one reconcile of the blocked eviction, long before drainTimeout fails it.
import type { NodeMaintenance } from '../../api/maintenance.ts';

export interface DrainBlock {
  node: string;
  /** The pods whose eviction was refused, with the PDB that refused it when the API server named one. */
  pods: { namespace: string; name: string; pdb?: string }[];
  /**
   * Why the drain's NodeMaintenance could not even be made: an admission webhook
   * refused it (the control-plane quorum guard, say). It waits, as an eviction does.
   */
  refused?: string;
}

/** A drain whose NodeMaintenance an admission webhook refused, with the API server's message. */
export function refusedDrain(node: string, message: string): DrainBlock {
  return { node, pods: [], refused: message };
}

/** The condition's reason: an eviction refused (a PDB), or only NodeMaintenances refused. */
export function blockReason(blocks: readonly DrainBlock[]): 'EvictionBlocked' | 'MaintenanceRefused' {
  return blocks.some((b) => b.pods.length > 0) ? 'EvictionBlocked' : 'MaintenanceRefused';
}

/** The blocked drains among our maintenances, by node name; finished or failed ones block nothing. */
export function drainBlocks(maintenances: readonly NodeMaintenance[]): DrainBlock[] {
  return maintenances
    .filter((m) => m.status?.phase !== 'Succeeded' && m.status?.phase !== 'Failed')
    .filter((m) => (m.status?.blockedPods?.length ?? 0) > 0)
    .map((m) => ({
      node: m.spec.nodeName,
      pods: (m.status?.blockedPods ?? []).map((b) => ({
        namespace: b.namespace,
        name: b.name,
        ...(b.pdb ? { pdb: b.pdb } : {}),
      })),
    }))
    .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
}

/** At most this many pods are named per node; the rest are counted. */
const SHOWN = 5;

/**
 * One sentence per node, for the DrainBlocked condition, its Event and the CLI:
 * "drain of node w-1 waits: pod shop/db-0 (PodDisruptionBudget shop/db)".
 */
export function describeBlocks(blocks: readonly DrainBlock[]): string {
  return blocks
    .map((b) => {
      if (b.refused !== undefined)
        return `drain of node ${b.node} waits: its NodeMaintenance was refused: ${b.refused}`;
      const pods = b.pods
        .slice(0, SHOWN)
        .map(
          (p) =>
            `pod ${p.namespace}/${p.name} (${p.pdb ? `PodDisruptionBudget ${p.namespace}/${p.pdb}` : 'eviction refused'})`,
        );
      const more = b.pods.length > SHOWN ? ` and ${b.pods.length - SHOWN} more` : '';
      return `drain of node ${b.node} waits: ${pods.join(', ')}${more}`;
    })
    .join('; ');
}
