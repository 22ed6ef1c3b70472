// Cordoning a node before its drain (kubectl cordon, the cordon helper of
// kubectl's drain package): spec.unschedulable set with a merge patch, so it
// needs no read first and leaves every other field (taints, labels) alone.
// Cordoning a cordoned node changes nothing. A caller that must later undo
// only what it did keeps that bookkeeping itself (as maintenance records
// whether the node was schedulable before).
import type { KubeClient } from '../runtime/client.ts';
import { Nodes } from '../runtime/resources.ts';

export type CordonClient = Pick<KubeClient, 'patch'>;

/** Marks the node unschedulable: no new pod lands on it, the ones there stay. */
export async function cordonNode(client: CordonClient, node: string): Promise<void> {
  await client.patch(Nodes, node, undefined, { spec: { unschedulable: true } }, { type: 'merge' });
}
