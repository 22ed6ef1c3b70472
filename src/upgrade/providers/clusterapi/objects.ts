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

  /** The group's Machines, each with its providerID (see withProviderIDs). */
  async machinesOf(md: MachineDeployment): Promise<Machine[]> {
    const machines = await this.machinesOfGroup(md);
    const needed = machines.filter(lacksProviderID);
    if (!needed.length) return machines;
    return withProviderIDs(machines, await this.infraMachinesOf(needed, md.metadata.name));
  }

  /**
   * The group's Machines with the image each runs ('' when its infrastructure machine says
   * none): one LIST of the Machines and one of their infrastructure machines, whatever their number.
   */
  async machinesWithImages(md: MachineDeployment): Promise<{ machine: Machine; image: string }[]> {
    const machines = await this.machinesOfGroup(md);
    const infra = await this.infraMachinesOf(machines, md.metadata.name);
    return withProviderIDs(machines, infra).map((machine) => ({
      machine,
      image: this.imageOf(machine, infra.get(machineKey(machine))) ?? '',
    }));
  }

  async machineOf(providerID: string): Promise<Machine | undefined> {
    const list = await this.client.list<Machine>(
      Machines,
      this.namespace ? { namespace: this.namespace } : {},
    );
    const own = list.items.find((m) => m.spec.providerID === providerID);
    if (own) return own;
    const needed = list.items.filter(lacksProviderID);
    if (!needed.length) return undefined;
    return withProviderIDs(needed, await this.infraMachinesOf(needed)).find(
      (m) => m.spec.providerID === providerID,
    );
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
    if (!imagePathOf(`${ref.kind}Template`, this.imagePaths))
      throw new CloudError(`clusterapi: no image path known for ${ref.kind}`, { retryable: false });
    const infra = await this.client.get<K8sObject>(
      await this.kindOf(ref.apiGroup, ref.kind),
      ref.name,
      m.metadata.namespace,
    );
    const image = this.imageOf(m, infra);
    if (image === undefined)
      throw new CloudError(`clusterapi: ${ref.kind} ${ref.name} has no image`, { retryable: false });
    return image;
  }

  /** The image in a Machine's infrastructure machine, when it holds one where its kind keeps it. */
  private imageOf(m: Machine, infra: K8sObject | undefined): string | undefined {
    const tplPath = imagePathOf(`${m.spec.infrastructureRef.kind}Template`, this.imagePaths);
    return infra && tplPath ? getPath(infra, machineImagePath(tplPath)) : undefined;
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

  /** The group's Machines as listed: a providerID only where the Machine has one itself. */
  async machinesOfGroup(md: MachineDeployment): Promise<Machine[]> {
    const list = await this.client.list<Machine>(Machines, {
      namespace: md.metadata.namespace,
      labelSelector: `${CapiLabels.deploymentName}=${md.metadata.name}`,
    });
    return list.items;
  }

  /**
   * The infrastructure machines of `machines`, by machineKey: one LIST per kind and namespace
   * (narrowed to a MachineDeployment's by the label Cluster API copies from its Machines, when
   * given), where a GET per Machine cost a request per Machine each round; a GET for one the
   * LIST did not hold (a provider that labels differently), none for a Machine on its way out.
   */
  private async infraMachinesOf(
    machines: readonly Machine[],
    deployment?: string,
  ): Promise<Map<string, InfraMachine>> {
    const byKind = Map.groupBy(machines, (m) => {
      const ref = m.spec.infrastructureRef;
      return `${m.metadata.namespace}/${ref.apiGroup}/${ref.kind}`;
    });
    const out = new Map<string, InfraMachine>();
    await Promise.all(
      [...byKind.values()].map(async (group) => {
        const first = group[0];
        if (!first) return;
        const { apiGroup, kind } = first.spec.infrastructureRef;
        const ns = first.metadata.namespace;
        const type = await this.kindOf(apiGroup, kind).catch(() => undefined);
        if (!type) return;
        const selector = deployment ? { labelSelector: `${CapiLabels.deploymentName}=${deployment}` } : {};
        // A LIST refused (an older role without it) falls back to the GETs below.
        const listed =
          group.length > 1
            ? await this.client.list<InfraMachine>(type, { namespace: ns, ...selector }).then(
                (l) => l.items,
                () => [],
              )
            : [];
        const byName = new Map(listed.map((i) => [i.metadata?.name, i]));
        for (const m of group) {
          const name = m.spec.infrastructureRef.name;
          const infra =
            byName.get(name) ??
            (m.metadata.deletionTimestamp
              ? undefined
              : await this.client.get<InfraMachine>(type, name, ns).catch(() => undefined));
          if (infra) out.set(machineKey(m), infra);
        }
      }),
    );
    return out;
  }
}

const machineKey = (m: Machine) => `${m.metadata.namespace}/${m.metadata.name}`;

/** A Machine whose providerID only its infrastructure machine may know yet (see withProviderIDs). */
const lacksProviderID = (m: Machine) => !m.spec.providerID && !m.metadata.deletionTimestamp;

/**
 * Cluster API copies an infrastructure machine's providerID to its Machine only once the
 * machine is provisioned; a machine that never finishes booting has one on its
 * infrastructure machine alone. Found against the real manager: such a Machine was
 * invisible here, so a machine that never booted could be neither followed nor removed.
 */
function withProviderIDs(machines: readonly Machine[], infra: ReadonlyMap<string, InfraMachine>): Machine[] {
  return machines.map((m) => {
    if (m.spec.providerID || m.metadata.deletionTimestamp) return m;
    const providerID = infra.get(machineKey(m))?.spec?.providerID;
    return providerID ? { ...m, spec: { ...m.spec, providerID } } : m;
  });
}
