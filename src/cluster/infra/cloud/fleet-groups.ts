// How a local cluster's fleet maps onto the simulated cloud: one scaling group
// per simulated pool, and every node the cluster was created with adopted as a
// Ready instance of its pool's group. Pure, so the mapping is unit-tested.
import type { V1Node } from '@kubernetes/client-node';
import { DEFAULT_NODE_IMAGE, IMAGE_ANNOTATION, Labels, type Pool } from '../../fleet.ts';
import { parseProviderID } from './provider-id.ts';
import type { CloudState, GroupSpec } from './state.ts';

/**
 * The group of each simulated pool: id = pool name, launching the given image at the given
 * version. A pool of real nodes has none: the cloud cannot launch a kubelet, and an empty
 * group of it would only show up in every rollout.
 */
export function groupSpecsForPools(
  pools: readonly Pool[],
  o: { cluster: string; kubernetesVersion: string; image?: string },
): GroupSpec[] {
  return pools
    .filter((p) => !p.real)
    .map((p) => ({
      id: p.name,
      role: p.role === 'control-plane' ? 'ControlPlane' : 'Worker',
      cluster: o.cluster,
      launchImage: o.image ?? DEFAULT_NODE_IMAGE,
      kubernetesVersion: o.kubernetesVersion,
      instanceType: p.instanceType,
      zones: [...p.zones],
      cpu: p.cpu,
      memory: p.memory,
      pods: p.pods,
      racksPerZone: p.racksPerZone,
      labels: { ...p.labels },
    }));
}

/**
 * Adopts the Nodes that are instances of the cloud's groups (an `nwsim://` providerID
 * naming a known group) as Ready instances; others are left alone. Returns how many.
 */
export function adoptFleetNodes(state: CloudState, nodes: readonly V1Node[], now: number): number {
  let adopted = 0;
  for (const node of nodes) {
    const name = node.metadata?.name;
    const id = parseProviderID(node.spec?.providerID ?? '');
    if (!name || !id || !state.getGroup(id.groupId) || id.instance !== name) continue;
    const labels = node.metadata?.labels ?? {};
    const zone = labels[Labels.zone];
    if (!zone) continue;
    const image = node.metadata?.annotations?.[IMAGE_ANNOTATION];
    const version = node.status?.nodeInfo?.kubeletVersion;
    const rack = labels[Labels.rack];
    state.adoptInstance(
      {
        groupId: id.groupId,
        nodeName: name,
        zone,
        ...(rack ? { rack } : {}),
        ...(image ? { image } : {}),
        ...(version ? { kubernetesVersion: version } : {}),
      },
      now,
    );
    adopted++;
  }
  return adopted;
}
