// What rollout tests share: a fleet of their own in the harness cluster's
// simulated cloud (groups tagged with a test's own cluster id, so nothing else
// is touched), its ScalingGroups and NodeVersion, and ways to watch it roll.
import { NodeVersions, ScalingGroups } from '../../src/api/upgrade.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { type K8sObject, Nodes } from '../../src/runtime/resources.ts';
import { rolloutDone as done } from '../../src/upgrade/format.ts';
import { Upgrade } from '../../src/upgrade/names.ts';
import { type ClusterCloud, clusterCloud } from './cloud.ts';

export const OLD_IMAGE = 'nwos-1.0.0';
export const GROUP_LABEL = 'nodewarden.dev/scaling-group';

export interface GroupDef {
  id: string;
  role: 'ControlPlane' | 'Worker';
  size: number;
}

export interface NodeLike extends K8sObject {
  metadata: NonNullable<K8sObject['metadata']>;
  spec?: { providerID?: string; unschedulable?: boolean };
  status?: { conditions?: { type: string; status: string }[] };
}

/** The harness cluster's cloud (found as the operator finds it), with what rollout tests do to it. */
export class TestCloud {
  private readonly cloud: ClusterCloud;

  private constructor(cloud: ClusterCloud) {
    this.cloud = cloud;
  }

  static async connect(client: KubeClient): Promise<TestCloud> {
    return new TestCloud(await clusterCloud(client));
  }

  get endpoint(): string {
    return this.cloud.endpoint;
  }

  call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    return this.cloud.call<T>(method, path, body);
  }

  async createGroups(cluster: string, groups: GroupDef[]): Promise<void> {
    for (const g of groups) {
      await this.call('POST', '/groups', {
        id: g.id,
        role: g.role,
        launchImage: OLD_IMAGE,
        kubernetesVersion: 'v1.37.1',
        cluster,
        size: g.size,
      });
    }
  }

  /** Every instance the group ever had, Terminated ones included. */
  instances(
    group: string,
  ): Promise<{ providerID: string; nodeName: string; state: string; image: string }[]> {
    return this.call('GET', `/groups/${group}/instances`);
  }

  async deleteGroupInstances(group: string): Promise<void> {
    for (const i of await this.instances(group)) {
      if (i.state !== 'Terminated')
        await this.call('DELETE', `/instances/${encodeURIComponent(i.providerID)}`);
    }
  }
}

export async function groupNodes(client: KubeClient, group: string): Promise<NodeLike[]> {
  return (await client.list<NodeLike>(Nodes, { labelSelector: `${GROUP_LABEL}=${group}` })).items;
}

export { isReady } from '../../src/runtime/conditions.ts';

export const imageOf = (n: NodeLike): string | undefined => n.metadata.annotations?.['nodewarden.dev/image'];

export async function createScalingGroups(
  client: KubeClient,
  nodeVersion: string,
  groups: GroupDef[],
): Promise<void> {
  for (const g of groups) {
    await client.create(ScalingGroups.type, {
      apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
      kind: 'ScalingGroup',
      metadata: { name: g.id },
      spec: { groupId: g.id, nodeVersion, role: g.role, min: 1, max: 100 },
    });
  }
}

export async function createNodeVersion(
  client: KubeClient,
  name: string,
  image: string,
  strategy: Record<string, unknown>,
): Promise<void> {
  await client.create(NodeVersions.type, {
    apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
    kind: 'NodeVersion',
    metadata: { name },
    spec: { image, strategy },
  });
}

interface NV extends K8sObject {
  metadata: NonNullable<K8sObject['metadata']>;
  spec: { image: string };
  status?: {
    observedGeneration?: number;
    conditions?: { type: string; status: string; reason: string; message: string }[];
    replaced?: number;
    lastError?: string;
  };
}

export async function getNodeVersion(client: KubeClient, name: string): Promise<NV> {
  return client.get<NV>(NodeVersions.type, name);
}

/** The rollout of the current spec is complete, as `nodewarden upgrade --wait` decides it. */
export const rolloutDone = (nv: NV): boolean => done(nv as unknown as Parameters<typeof done>[0]);

export async function removeFleet(
  client: KubeClient,
  cloud: TestCloud,
  nodeVersion: string,
  groups: GroupDef[],
) {
  await client.delete(NodeVersions.type, nodeVersion, undefined, { ignoreNotFound: true });
  for (const g of groups) {
    await client.delete(ScalingGroups.type, g.id, undefined, { ignoreNotFound: true });
    await cloud.deleteGroupInstances(g.id).catch(() => {});
  }
}

export { Upgrade };
