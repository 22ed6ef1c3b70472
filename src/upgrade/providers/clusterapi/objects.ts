// Reading Cluster API's objects as the clusterapi provider needs them: a
// group's MachineDeployment and MachineSets, the Machines of a group or of a
// providerID, the infrastructure template a group launches and the image a
// Machine runs. Provider kinds (the infrastructure's) are found from their CRDs.
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
import { isNotFound } from '../../../runtime/errors.ts';
import {
  builtInKind,
  CustomResourceDefinitions,
  type K8sObject,
  type ResourceType,
} from '../../../runtime/resources.ts';
import { CloudError } from '../interface.ts';
import { getPath, imagePathOf, machineImagePath } from './image-paths.ts';
import { parseGroupId, type TemplateObject } from './planner.ts';

const CONTRACT_LABEL = 'cluster.x-k8s.io/v1beta2';

type InfraMachine = K8sObject & { spec?: { providerID?: string } };

export class ClusterApiObjects {
  private readonly client: KubeClient;
  private readonly imagePaths: Readonly<Record<string, string>>;
  private readonly namespace: string | undefined;
  /** Provider kinds by group/kind, found from their CRDs once. */
  private readonly kinds = new Map<string, ResourceType>();

  constructor(client: KubeClient, imagePaths: Readonly<Record<string, string>>, namespace?: string) {
    this.client = client;
    this.imagePaths = imagePaths;
    this.namespace = namespace;
  }

  async deployment(groupId: string): Promise<MachineDeployment> {
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

  async deployments(): Promise<MachineDeployment[]> {
    const opts = this.namespace ? { namespace: this.namespace } : {};
    return (await this.client.list<MachineDeployment>(MachineDeployments, opts)).items;
  }

  async machineSetsOf(md: MachineDeployment): Promise<MachineSet[]> {
    return (
      await this.client.list<MachineSet>(MachineSets, {
        namespace: md.metadata.namespace,
        labelSelector: `${CapiLabels.deploymentName}=${md.metadata.name}`,
      })
    ).items;
  }

  async machinesOf(md: MachineDeployment): Promise<Machine[]> {
    const list = await this.client.list<Machine>(Machines, {
      namespace: md.metadata.namespace,
      labelSelector: `${CapiLabels.deploymentName}=${md.metadata.name}`,
    });
    return this.withProviderIDs(list.items);
  }

  async machineOf(providerID: string): Promise<Machine | undefined> {
    const list = await this.client.list<Machine>(
      Machines,
      this.namespace ? { namespace: this.namespace } : {},
    );
    return (await this.withProviderIDs(list.items)).find((m) => m.spec.providerID === providerID);
  }

  /** The Machine now, or undefined once it is gone. */
  async machineNow(m: Machine): Promise<Machine | undefined> {
    try {
      return await this.client.get<Machine>(Machines, m.metadata.name ?? '', m.metadata.namespace);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The infrastructure template a group launches, where its image is, and its kind. */
  async template(
    md: MachineDeployment,
  ): Promise<{ template: TemplateObject; path: string; type: ResourceType }> {
    const ref = md.spec.template.spec.infrastructureRef;
    const path = imagePathOf(ref.kind, this.imagePaths);
    if (!path)
      throw new CloudError(
        `clusterapi: nodewarden does not know where a ${ref.kind} keeps its image; give it with --clusterapi-image-path ${ref.kind}=spec.template.spec.<field>`,
        { retryable: false },
      );
    const type = await this.kindOf(ref.apiGroup, ref.kind);
    const template = await this.client.get<TemplateObject>(type, ref.name, md.metadata.namespace);
    return { template, path, type };
  }

  /** The image a Machine runs, from its infrastructure machine (at its template's path, less the template's part). */
  async machineImage(m: Machine): Promise<string> {
    const ref = m.spec.infrastructureRef;
    const tplPath = imagePathOf(`${ref.kind}Template`, this.imagePaths);
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
  async kindOf(group: string, kind: string): Promise<ResourceType> {
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
          .then((t) => this.client.get<InfraMachine>(t, ref.name, m.metadata.namespace))
          .catch(() => undefined);
        const providerID = infra?.spec?.providerID;
        return providerID ? { ...m, spec: { ...m.spec, providerID } } : m;
      }),
    );
  }
}
