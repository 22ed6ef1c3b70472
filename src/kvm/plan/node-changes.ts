// Which nodes to create and which to remove: a pure planner. Every desired
// node without a Deployment is created, all at once (a new cluster boots
// every VM together); every node Deployment no desired node names is removed
// with its ConfigMap and, for a master, its etcd claim — named by the one
// function that names it, from the node id the Deployment's labels carry. Its
// VM pod's finalizer drains the workload node before the VM goes. A
// Deployment being deleted is neither removed again nor made anew: its node
// is made once it is gone (see NODE_DEPLOYMENT_PROPAGATION for why it goes in
// the foreground).
import type { NodeRole } from '../../api/kvm.ts';
import type { DesiredNode } from './desired-node.ts';
import { etcdClaimName } from './names.ts';
import type { DeploymentView } from './rollout.ts';

export type NodeObjectKind = 'Deployment' | 'ConfigMap' | 'PersistentVolumeClaim';
export type Propagation = 'Foreground' | 'Background';

/**
 * A node's Deployment goes in the foreground: it stays, being deleted, until the garbage
 * collector has deleted its ReplicaSets and their VM pods. WHY: in the background it is gone at
 * once, a scale-up may make it again under the same name, and a garbage collector whose watch
 * broke meanwhile (an API server restart) relists and sees the two as one update: it never
 * deletes the old ReplicaSet, whose VM runs on for good (kube-controller-manager 1.37,
 * graph_builder.go; seed 424242 at 200 nodes, 2026-11-27). The foreground's finalizer is state
 * on the object, which a relist sees.
 */
export const NODE_DEPLOYMENT_PROPAGATION: Propagation = 'Foreground';

export interface NodeRemoval {
  /** The node's Deployment. */
  name: string;
  role: NodeRole;
  /** What goes, in this order, and how its dependents go. */
  objects: Array<{ kind: NodeObjectKind; name: string; propagation: Propagation }>;
}

export interface NodeChanges {
  create: DesiredNode[];
  remove: NodeRemoval[];
}

export function planNodeChanges(
  desired: readonly DesiredNode[],
  existing: ReadonlyArray<Pick<DeploymentView, 'name' | 'role' | 'nodeId' | 'deleting'>>,
): NodeChanges {
  const have = new Set(existing.map((d) => d.name));
  const wanted = new Set(desired.map((n) => n.name));
  return {
    create: desired.filter((n) => !have.has(n.name)),
    remove: existing.filter((d) => !wanted.has(d.name) && !d.deleting).map(removal),
  };
}

function removal(d: Pick<DeploymentView, 'name' | 'role' | 'nodeId'>): NodeRemoval {
  const objects: NodeRemoval['objects'] = [
    { kind: 'Deployment', name: d.name, propagation: NODE_DEPLOYMENT_PROPAGATION },
    { kind: 'ConfigMap', name: d.name, propagation: 'Background' },
  ];
  // Deleted whatever the storage type: the spec may have changed since the claim was made.
  if (d.role === 'master' && d.nodeId)
    objects.push({ kind: 'PersistentVolumeClaim', name: etcdClaimName(d.nodeId), propagation: 'Background' });
  return { name: d.name, role: d.role, objects };
}
