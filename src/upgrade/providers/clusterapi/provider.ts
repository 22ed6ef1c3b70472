// The CloudProvider of Cluster API: scaling groups are a Cluster's worker
// MachineDeployments, instances their Machines (a Node is found by its
// providerID), a new image is a new immutable infrastructure machine template
// swapped into the MachineDeployment. Talks to the API server of the
// management cluster (where Cluster API runs), never to a cloud. Reading
// Cluster API's objects is objects.ts; changing a group's size, replicas.ts.
import { CapiLabels, MachineDeployments } from '../../../api/clusterapi.ts';
import type { KubeClient } from '../../../runtime/client.ts';
import { isAlreadyExists } from '../../../runtime/errors.ts';
import type { K8sObject } from '../../../runtime/resources.ts';
import {
  type CloudDeferral,
  CloudError,
  type CloudInstance,
  type CloudProvider,
  type CreatedNode,
  type GroupListing,
  type InstanceState,
  type ScalingGroupInfo,
} from '../interface.ts';
import { getPath } from './image-paths.ts';
import { ClusterApiObjects } from './objects.ts';
import {
  cloneTemplate,
  instanceState,
  launchesNotListed,
  nodeNameOf,
  scalingGroupsOf,
  strategyDecision,
} from './planner.ts';
import { GroupScaler } from './replicas.ts';

export interface ClusterApiProviderOptions {
  client: KubeClient;
  /** Template kind → image path, besides the known ones. */
  imagePaths?: Readonly<Record<string, string>>;
  /** Whether a MachineDeployment with RollingUpdate may be switched to OnDelete. */
  setOnDelete?: boolean;
  /** Only MachineDeployments of this namespace; all when absent. */
  namespace?: string;
  /** How long createNode waits for the new Machine to get its providerID. Default 60 s. */
  createTimeoutMs?: number;
  /** How long deleteNode waits for Cluster API to start deleting the Machine. Default 30 s. */
  deleteWaitMs?: number;
}

export class ClusterApiProvider implements CloudProvider {
  private readonly client: KubeClient;
  private readonly o: ClusterApiProviderOptions;
  private readonly objects: ClusterApiObjects;
  private readonly scaler: GroupScaler;
  /** providerIDs createNode has answered with (each new Machine goes to one caller). */
  private readonly claimed = new Set<string>();

  constructor(o: ClusterApiProviderOptions) {
    this.client = o.client;
    this.o = o;
    this.objects = new ClusterApiObjects(o.client, o.imagePaths ?? {}, o.namespace);
    this.scaler = new GroupScaler(o.client, this.objects);
  }

  async nodeImage(providerID: string): Promise<string> {
    const m = await this.objects.machineOf(providerID);
    if (!m) throw new CloudError(`clusterapi: no Machine has providerID ${providerID}`, { retryable: false });
    return this.objects.machineImage(m);
  }

  async scalingGroupId(providerID: string): Promise<string> {
    const m = await this.objects.machineOf(providerID);
    if (!m) throw new CloudError(`clusterapi: no Machine has providerID ${providerID}`, { retryable: false });
    const md = m.metadata.labels?.[CapiLabels.deploymentName];
    if (!md) {
      const cp = m.metadata.labels?.[CapiLabels.controlPlane] !== undefined;
      throw new CloudError(
        `clusterapi: Machine ${m.metadata.namespace}/${m.metadata.name} belongs to no MachineDeployment` +
          (cp
            ? ' (a control-plane Machine: its control-plane provider replaces it, nodewarden never does)'
            : ''),
        { retryable: false },
      );
    }
    return `${m.metadata.namespace}/${md}`;
  }

  async createNode(groupId: string): Promise<CreatedNode> {
    const md = await this.objects.deployment(groupId);
    const before = new Set((await this.objects.machinesOfGroup(md)).map((m) => m.metadata.name));
    await this.scaler.scaleUp(groupId);
    const deadline = Date.now() + (this.o.createTimeoutMs ?? 60_000);
    while (Date.now() < deadline) {
      // Two creates at once both see both new Machines: each takes one no other took.
      const fresh = (await this.objects.machinesOf(md)).find(
        (m) => !before.has(m.metadata.name) && m.spec.providerID && !this.claimed.has(m.spec.providerID),
      );
      if (fresh?.spec.providerID) {
        this.claimed.add(fresh.spec.providerID);
        return { nodeName: nodeNameOf(fresh), providerID: fresh.spec.providerID };
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    // The machine may still come: listGroup counts it as a launch, and lists it once it has a providerID.
    throw new CloudError(`clusterapi: ${groupId} scaled up, but no new Machine got a providerID in time`, {
      retryable: false,
    });
  }

  async listGroup(groupId: string): Promise<GroupListing> {
    // Asked each round: a removal of ours a stopped operator left half done is finished first.
    const md = await this.scaler.resume(groupId);
    const machines = await this.objects.machinesWithImages(md);
    const instances: CloudInstance[] = [];
    for (const { machine: m, image } of machines) {
      const state = instanceState(m);
      if (!m.spec.providerID || state === 'Terminated') continue;
      instances.push({
        providerID: m.spec.providerID,
        nodeName: nodeNameOf(m),
        image,
        state,
        createdAt: Date.parse(m.metadata.creationTimestamp ?? '') || 0,
      });
    }
    // From the same read: a Machine is either listed or a launch, never both, never neither.
    const requestedLaunches = launchesNotListed(
      md,
      machines.map((x) => x.machine),
      Date.now(),
    );
    return { instances, requestedLaunches };
  }

  async deleteNode(providerID: string): Promise<void> {
    const m = await this.objects.machineOf(providerID);
    if (!m) return;
    const group = m.metadata.labels?.[CapiLabels.deploymentName];
    if (!group)
      throw new CloudError(`clusterapi: Machine ${m.metadata.name} belongs to no MachineDeployment`, {
        retryable: false,
      });
    await this.scaler.scaleDown(m, `${m.metadata.namespace}/${group}`, this.o.deleteWaitMs ?? 30_000);
  }

  async nodeState(providerID: string): Promise<InstanceState> {
    const m = await this.objects.machineOf(providerID);
    return m ? instanceState(m) : 'Terminated';
  }

  async scalingGroupImage(groupId: string): Promise<string> {
    const md = await this.usableDeployment(groupId);
    const { template, path } = await this.objects.template(md);
    const image = getPath(template, path);
    if (image === undefined)
      throw new CloudError(`clusterapi: ${template.kind} ${template.metadata.name} has no image at ${path}`, {
        retryable: false,
      });
    return image;
  }

  async setScalingGroupImage(groupId: string, image: string): Promise<CloudDeferral | undefined> {
    const current = await this.objects.template(await this.usableDeployment(groupId));
    if (getPath(current.template, current.path) === image) return undefined;
    // Swapped only while Cluster API's MachineSets are settled: see templateSwapHold.
    return this.scaler.switchTemplate(groupId, async (md) => {
      const { template, path, type } = await this.objects.template(md);
      if (getPath(template, path) === image) return;
      const clone = cloneTemplate(template, path, image);
      try {
        await this.client.create(type, clone as K8sObject);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      await this.client.patch(
        MachineDeployments,
        md.metadata.name ?? '',
        md.metadata.namespace,
        { spec: { template: { spec: { infrastructureRef: { name: clone.metadata.name } } } } },
        { type: 'merge' },
      );
    });
  }

  async listScalingGroups(clusterId: string): Promise<ScalingGroupInfo[]> {
    return scalingGroupsOf(await this.objects.deployments(), clusterId);
  }

  autoscalingCloudProvider(): string {
    return 'clusterapi';
  }

  /** The group, when its strategy lets us replace its machines (set to OnDelete with the operator's consent). */
  private async usableDeployment(groupId: string) {
    const md = await this.objects.deployment(groupId);
    const d = strategyDecision(md, this.o.setOnDelete ?? false);
    if (d.kind === 'refuse') throw new CloudError(d.message, { retryable: false });
    if (d.kind === 'setOnDelete')
      await this.client.patch(
        MachineDeployments,
        md.metadata.name ?? '',
        md.metadata.namespace,
        { spec: { rollout: { strategy: { type: 'OnDelete', rollingUpdate: null } } } },
        { type: 'merge' },
      );
    return md;
  }
}
