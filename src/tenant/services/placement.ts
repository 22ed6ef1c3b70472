// Where a service's pod runs: spec.services.<service>.placement with each
// missing field at its default. The defaults schedule on any node, so the
// services run on clusters whose control plane takes no pods (EKS, GKE, AKS
// and most managed clusters) as well as on clusters of control-plane nodes
// only; the anchor pinned them to control-plane nodes, which left them
// Pending on the former.
import type { ServicePlacementSpec } from '../../api/tenant.ts';

/** The control-plane taints, pre-1.24's name too: tolerated by default so those nodes are not ruled out. */
export const CONTROL_PLANE_TOLERATIONS = [
  { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node-role.kubernetes.io/master', operator: 'Exists', effect: 'NoSchedule' },
] as const;

/** The pod spec's placement fields; a field given (even empty) replaces its default. */
export function podPlacement(placement: ServicePlacementSpec | undefined): Record<string, unknown> {
  const p = placement ?? {};
  return {
    ...(p.nodeSelector && Object.keys(p.nodeSelector).length > 0
      ? { nodeSelector: { ...p.nodeSelector } }
      : {}),
    tolerations: (p.tolerations ?? CONTROL_PLANE_TOLERATIONS).map((t) => ({ ...t })),
    ...(p.affinity && Object.keys(p.affinity).length > 0 ? { affinity: structuredClone(p.affinity) } : {}),
  };
}
