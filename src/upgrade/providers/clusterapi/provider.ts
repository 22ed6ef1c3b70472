// The CloudProvider of Cluster API: scaling groups are a Cluster's worker
// MachineDeployments, instances their Machines (a Node is found by its
// providerID), a new image is a new immutable infrastructure machine template
// swapped into the MachineDeployment. Talks to the API server of the
// management cluster (where Cluster API runs), never to a cloud.
import {
  CapiLabels,
  type Machine,
  type MachineDeployment,
  MachineDeployments,
  type MachineSet,
  MachineSets,
  Machines,
} from '../../../api/clusterapi.ts';
import type { KubeClient } from '../../../runtime/client.ts';
import { isAlreadyExists, isNotFound } from '../../../runtime/errors.ts';
import {
  builtInKind,
  CustomResourceDefinitions,
  type K8sObject,
  type ResourceType,
} from '../../../runtime/resources.ts';
import {
  CloudError,
  type CloudInstance,
  type CloudProvider,
  type CreatedNode,
  type InstanceState,
  type ScalingGroupInfo,
} from '../interface.ts';
import { getPath, imagePathOf, machineImagePath } from './image-paths.ts';
import {
  cloneTemplate,
  groupIdOf,
  instanceState,
  nodeNameOf,
  parseGroupId,
  planScaleDown,
  recordScaleDown,
  SCALED_DOWN_ANNOTATION,
  scaledDownFor,
  scalingGroupsOf,
  strategyDecision,
  type TemplateObject,
} from './planner.ts';

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

const CONTRACT_LABEL = 'cluster.x-k8s.io/v1beta2';
/** Cluster API's controllers skip an object carrying it. */
const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';
/** Its value when we paused a MachineDeployment between two writes (any later count change of ours unpauses it). */
const PAUSED_BY_US = 'nodewarden: lowering one MachineSet and its MachineDeployment together';

export class ClusterApiProvider implements CloudProvider {
  private readonly client: KubeClient;
  private readonly o: ClusterApiProviderOptions;
  /** The change of each group's counts under way (see serialize). */
  private readonly groupLocks = new Map<string, Promise<void>>();
  /** Provider kinds by group/kind, found from their CRDs once. */
  private readonly kinds = new Map<string, ResourceType>();

  constructor(o: ClusterApiProviderOptions) {
    this.client = o.client;
    this.o = o;
  }

  async nodeImage(providerID: string): Promise<string> {
    const m = await this.machineOf(providerID);
    if (!m) throw new CloudError(`clusterapi: no Machine has providerID ${providerID}`, { retryable: false });
    return this.machineImage(m);
  }

  async scalingGroupId(providerID: string): Promise<string> {
    const m = await this.machineOf(providerID);
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
    const md = await this.deployment(groupId);
    const before = new Set((await this.machinesOf(md)).map((m) => m.metadata.name));
    await this.serialize(groupId, async () => {
      const now = await this.deployment(groupId);
      await this.setReplicas(MachineDeployments, now, (now.spec.replicas ?? 0) + 1);
    });
    const deadline = Date.now() + (this.o.createTimeoutMs ?? 60_000);
    while (Date.now() < deadline) {
      const fresh = (await this.machinesOf(md)).find(
        (m) => !before.has(m.metadata.name) && m.spec.providerID,
      );
      if (fresh?.spec.providerID) return { nodeName: nodeNameOf(fresh), providerID: fresh.spec.providerID };
      await new Promise((r) => setTimeout(r, 250));
    }
    // The machine may still come: listInstances finds it once it has a providerID.
    throw new CloudError(`clusterapi: ${groupId} scaled up, but no new Machine got a providerID in time`, {
      retryable: false,
    });
  }

  async listInstances(groupId: string): Promise<CloudInstance[]> {
    const md = await this.deployment(groupId);
    const machines = (await this.machinesOf(md)).filter((m) => m.spec.providerID);
    const out: CloudInstance[] = [];
    for (const m of machines) {
      const state = instanceState(m);
      if (state === 'Terminated') continue;
      out.push({
        providerID: m.spec.providerID ?? '',
        nodeName: nodeNameOf(m),
        image: await this.machineImage(m).catch(() => ''),
        state,
        createdAt: Date.parse(m.metadata.creationTimestamp ?? '') || 0,
      });
    }
    return out;
  }

  async deleteNode(providerID: string): Promise<void> {
    const m = await this.machineOf(providerID);
    if (!m) return;
    const group = m.metadata.labels?.[CapiLabels.deploymentName];
    if (!group)
      throw new CloudError(`clusterapi: Machine ${m.metadata.name} belongs to no MachineDeployment`, {
        retryable: false,
      });
    const groupId = `${m.metadata.namespace}/${group}`;
    await this.serialize(groupId, () => this.scaleDownFor(m, groupId));
    await this.untilDeleting(m);
  }

  /**
   * Waits (a while) for Cluster API to start deleting the Machine, as a cloud's delete call
   * returns once the instance is terminating: the rollout counts it gone from then on, and
   * a Machine still alive then would let it create more than its surge.
   */
  private async untilDeleting(m: Machine): Promise<void> {
    const deadline = Date.now() + (this.o.deleteWaitMs ?? 30_000);
    while (Date.now() < deadline) {
      try {
        const now = await this.client.get<Machine>(Machines, m.metadata.name ?? '', m.metadata.namespace);
        if (now.metadata.deletionTimestamp) return;
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Marks the Machine and lowers its group by one, its own MachineSet first when Cluster API would shrink another. */
  private async scaleDownFor(m: Machine, groupId: string): Promise<void> {
    let md = await this.deployment(groupId);
    const name = m.metadata.name ?? '';
    if (scaledDownFor(md).has(name)) return;
    const existing = new Set((await this.machinesOf(md)).map((x) => x.metadata.name ?? ''));
    const sets = (
      await this.client.list<MachineSet>(MachineSets, {
        namespace: md.metadata.namespace,
        labelSelector: `${CapiLabels.deploymentName}=${md.metadata.name}`,
      })
    ).items;
    const plan = planScaleDown(md, sets, m);
    if (!plan) return;
    const ns = m.metadata.namespace;
    await this.client.patch(
      Machines,
      name,
      ns,
      { metadata: { annotations: plan.annotate } },
      { type: 'merge' },
    );
    const own = plan.machineSet && sets.find((x) => x.metadata.name === plan.machineSet?.name);
    if (own && plan.machineSet && !scaledDownFor(own).has(name)) {
      // Cluster API would answer the lowered set by growing the newest one back before our
      // second write lands: the MachineDeployment is paused (its controller skips it) from
      // here until the write that lowers its replicas, which also unpauses it.
      md = await this.client.patch<MachineDeployment>(
        MachineDeployments,
        md.metadata.name ?? '',
        ns,
        { metadata: { annotations: { [PAUSED_ANNOTATION]: PAUSED_BY_US } } },
        { type: 'merge' },
      );
      await this.setReplicas(
        MachineSets,
        own,
        plan.machineSet.replicas,
        recordScaleDown(own, name, existing),
      );
    }
    await this.setReplicas(MachineDeployments, md, plan.replicas, recordScaleDown(md, name, existing));
  }

  /** One change of a group's counts at a time in this process: each reads what the last one wrote. */
  private serialize<T>(groupId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.groupLocks.get(groupId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.groupLocks.set(groupId, settled);
    void settled.then(() => {
      if (this.groupLocks.get(groupId) === settled) this.groupLocks.delete(groupId);
    });
    return next;
  }

  async nodeState(providerID: string): Promise<InstanceState> {
    const m = await this.machineOf(providerID);
    return m ? instanceState(m) : 'Terminated';
  }

  async scalingGroupImage(groupId: string): Promise<string> {
    const md = await this.usableDeployment(groupId);
    const { template, path } = await this.template(md);
    const image = getPath(template, path);
    if (image === undefined)
      throw new CloudError(`clusterapi: ${template.kind} ${template.metadata.name} has no image at ${path}`, {
        retryable: false,
      });
    return image;
  }

  async setScalingGroupImage(groupId: string, image: string): Promise<void> {
    const md = await this.usableDeployment(groupId);
    const { template, path, type } = await this.template(md);
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
  }

  async listScalingGroups(clusterId: string): Promise<ScalingGroupInfo[]> {
    const mds = (
      await this.client.list<MachineDeployment>(
        MachineDeployments,
        this.o.namespace ? { namespace: this.o.namespace } : {},
      )
    ).items;
    return scalingGroupsOf(mds, clusterId);
  }

  autoscalingCloudProvider(): string {
    return 'clusterapi';
  }

  /**
   * Sets the group's replicas if they are still what we read: a JSON patch testing the old
   * value, so two callers never both move from the same count (and CAPI's status writes,
   * which change the resourceVersion, do not get in the way).
   */
  private async setReplicas(
    type: ResourceType,
    md: MachineDeployment | MachineSet,
    replicas: number,
    scaledDownRecord?: string,
  ): Promise<void> {
    const ops: unknown[] = [
      { op: 'test', path: '/spec/replicas', value: md.spec.replicas ?? 0 },
      { op: 'replace', path: '/spec/replicas', value: replicas },
    ];
    if (md.metadata.annotations?.[PAUSED_ANNOTATION] === PAUSED_BY_US)
      ops.push({ op: 'remove', path: `/metadata/annotations/${PAUSED_ANNOTATION.replace('/', '~1')}` });
    if (scaledDownRecord !== undefined)
      ops.push(
        md.metadata.annotations
          ? {
              op: 'add',
              path: `/metadata/annotations/${SCALED_DOWN_ANNOTATION.replace('/', '~1')}`,
              value: scaledDownRecord,
            }
          : {
              op: 'add',
              path: '/metadata/annotations',
              value: { [SCALED_DOWN_ANNOTATION]: scaledDownRecord },
            },
      );
    try {
      await this.client.patch(type, md.metadata.name ?? '', md.metadata.namespace, ops, {
        type: 'json',
      });
    } catch (err) {
      // A failed test is 422 (the count moved since we read it): read again and retry.
      throw new CloudError(
        `clusterapi: set replicas of ${type.kind} ${groupIdOf(md)} to ${replicas}: ${(err as Error).message}`,
        {
          retryable: true,
          cause: err,
        },
      );
    }
  }

  private async deployment(groupId: string): Promise<MachineDeployment> {
    const { namespace, name } = parseGroupId(groupId);
    try {
      return await this.client.get<MachineDeployment>(MachineDeployments, name, namespace);
    } catch (err) {
      if (isNotFound(err))
        throw new CloudError(`clusterapi: no MachineDeployment ${groupId}`, { retryable: false });
      throw new CloudError(`clusterapi: get MachineDeployment ${groupId}: ${(err as Error).message}`, {
        retryable: true,
        cause: err,
      });
    }
  }

  /** The group, when its strategy lets us replace its machines (set to OnDelete with the operator's consent). */
  private async usableDeployment(groupId: string): Promise<MachineDeployment> {
    const md = await this.deployment(groupId);
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

  private async template(
    md: MachineDeployment,
  ): Promise<{ template: TemplateObject; path: string; type: ResourceType }> {
    const ref = md.spec.template.spec.infrastructureRef;
    const path = imagePathOf(ref.kind, this.o.imagePaths ?? {});
    if (!path)
      throw new CloudError(
        `clusterapi: nodewarden does not know where a ${ref.kind} keeps its image; give it with --clusterapi-image-path ${ref.kind}=spec.template.spec.<field>`,
        { retryable: false },
      );
    const type = await this.kindOf(ref.apiGroup, ref.kind);
    const template = await this.client.get<TemplateObject>(type, ref.name, md.metadata.namespace);
    return { template, path, type };
  }

  private async machineImage(m: Machine): Promise<string> {
    const ref = m.spec.infrastructureRef;
    const tplPath = imagePathOf(`${ref.kind}Template`, this.o.imagePaths ?? {});
    if (!tplPath)
      throw new CloudError(`clusterapi: no image path known for ${ref.kind}`, { retryable: false });
    const infra = await this.client.get<K8sObject>(
      await this.kindOf(ref.apiGroup, ref.kind),
      ref.name,
      m.metadata.namespace,
    );
    const image = getPath(infra, machineImagePath(tplPath));
    if (image === undefined)
      throw new CloudError(`clusterapi: ${ref.kind} ${ref.name} has no image`, { retryable: false });
    return image;
  }

  /** A provider kind's served version, from its CRD's contract label (as Cluster API itself finds it). */
  private async kindOf(group: string, kind: string): Promise<ResourceType> {
    const key = `${group}/${kind}`;
    const known = this.kinds.get(key);
    if (known) return known;
    const plural = `${kind.toLowerCase()}${kind.endsWith('s') ? 'es' : 's'}`;
    const crd = await this.client.get<K8sObject>(CustomResourceDefinitions, `${plural}.${group}`);
    const versions = crd.metadata?.labels?.[CONTRACT_LABEL]?.split('_') ?? [];
    const version = versions[versions.length - 1];
    if (!version)
      throw new CloudError(`clusterapi: CRD ${plural}.${group} has no ${CONTRACT_LABEL} label`, {
        retryable: false,
      });
    const type = builtInKind(group, version, kind, plural, true);
    this.kinds.set(key, type);
    return type;
  }

  private async machinesOf(md: MachineDeployment): Promise<Machine[]> {
    const list = await this.client.list<Machine>(Machines, {
      namespace: md.metadata.namespace,
      labelSelector: `${CapiLabels.deploymentName}=${md.metadata.name}`,
    });
    return this.withProviderIDs(list.items);
  }

  private async machineOf(providerID: string): Promise<Machine | undefined> {
    const list = await this.client.list<Machine>(
      Machines,
      this.o.namespace ? { namespace: this.o.namespace } : {},
    );
    return (await this.withProviderIDs(list.items)).find((m) => m.spec.providerID === providerID);
  }

  /**
   * Cluster API copies an infrastructure machine's providerID to its Machine only once the
   * machine is provisioned; a machine that never finishes booting has one on its
   * infrastructure machine alone. Found against the real manager: such a Machine was
   * invisible here, so a machine that never booted could be neither followed nor removed.
   */
  private async withProviderIDs(machines: Machine[]): Promise<Machine[]> {
    return Promise.all(
      machines.map(async (m) => {
        if (m.spec.providerID || m.metadata.deletionTimestamp) return m;
        const ref = m.spec.infrastructureRef;
        const infra = await this.kindOf(ref.apiGroup, ref.kind)
          .then((t) =>
            this.client.get<K8sObject & { spec?: { providerID?: string } }>(
              t,
              ref.name,
              m.metadata.namespace,
            ),
          )
          .catch(() => undefined);
        const providerID = infra?.spec?.providerID;
        return providerID ? { ...m, spec: { ...m.spec, providerID } } : m;
      }),
    );
  }
}
