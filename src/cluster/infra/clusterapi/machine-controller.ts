// The simulated infrastructure's machine controller, as a Cluster API
// infrastructure provider's is: for each NodewardenMachine it sets the
// providerID, "boots" it (registers a kwok Node after the boot delay, labelled
// with the image), reports it provisioned (status.initialization.provisioned
// for the v1beta2 contract, status.ready for v1beta1), and on deletion removes
// the Node before letting the machine go. A machine annotated never-boot stays
// unprovisioned forever, as an instance that hangs in firmware would.
import type { V1Node } from '@kubernetes/client-node';
import { isNotFound } from '../../../runtime/errors.ts';
import { isBeingDeleted, patchFinalizer } from '../../../runtime/finalizers.ts';
import type { ControllerHost } from '../../../runtime/host.ts';
import { done, type Request, type Result, requeueAfter } from '../../../runtime/reconcile.ts';
import { type K8sObject, Nodes } from '../../../runtime/resources.ts';
import { updateStatusIfChanged } from '../../../runtime/status.ts';
import { simulatedNode } from '../../fleet.ts';
import {
  NEVER_BOOT_ANNOTATION,
  type NodewardenCluster,
  NodewardenClusters,
  type NodewardenMachine,
  NodewardenMachines,
} from './api.ts';

const NM = NodewardenMachines.type;
const FINALIZER = 'infrastructure.nodewarden.dev/machine';
const DEFAULT_BOOT_DELAY_S = 2;
/** Labels Cluster API puts on the machines of a MachineDeployment (copied to the infrastructure machine). */
const DEPLOYMENT_LABEL = 'cluster.x-k8s.io/deployment-name';

export interface MachineControllerOptions {
  /** The kubelet version the Nodes report. */
  kubeletVersion: string;
}

/** The providerID of a machine: stable, and known before the machine boots, as a cloud's instance id is. */
export function machineProviderID(m: Pick<NodewardenMachine, 'metadata'>): string {
  return `nodewarden://${m.metadata.namespace}/${m.metadata.name}`;
}

/** The Node a machine registers: named after its Cluster API Machine, as most providers' hostnames are. */
export function machineNodeName(m: Pick<NodewardenMachine, 'metadata'>): string {
  const owner = m.metadata.ownerReferences?.find((r) => r.kind === 'Machine');
  return owner?.name ?? m.metadata.name ?? '';
}

/** What to do with a machine now: a pure function of the machine and the clock. */
export type MachineStep =
  | { kind: 'setProviderID'; providerID: string }
  | { kind: 'neverBoot' }
  | { kind: 'waitForBoot'; inMs: number }
  | { kind: 'boot' }
  | { kind: 'booted' };

export function planMachine(m: NodewardenMachine, now: number): MachineStep {
  if (!m.spec.providerID) return { kind: 'setProviderID', providerID: machineProviderID(m) };
  if (m.status?.initialization?.provisioned) return { kind: 'booted' };
  if (m.metadata.annotations?.[NEVER_BOOT_ANNOTATION] === 'true') return { kind: 'neverBoot' };
  const created = Date.parse(m.metadata.creationTimestamp ?? '');
  const bootAt =
    (Number.isNaN(created) ? now : created) + (m.spec.bootDelaySeconds ?? DEFAULT_BOOT_DELAY_S) * 1000;
  return bootAt > now ? { kind: 'waitForBoot', inMs: bootAt - now } : { kind: 'boot' };
}

export function setupNodewardenMachines(host: ControllerHost, opts: MachineControllerOptions): void {
  const r = new NodewardenMachineReconciler(host, opts);
  host
    .controller('nodewardenmachine')
    .for(NM)
    .withWorkers(4)
    .complete((req) => r.reconcile(req));
  // The infrastructure cluster: the local cluster is there already, so it is provisioned at once.
  host
    .controller('nodewardencluster')
    .for(NodewardenClusters.type)
    .complete(async (req) => {
      const c = host.cache.get<NodewardenCluster & K8sObject>(
        NodewardenClusters.type,
        req.name,
        req.namespace,
      );
      if (!c || isBeingDeleted(c)) return done();
      const status = { ...c.status, initialization: { provisioned: true }, ready: true };
      await updateStatusIfChanged(host.client, NodewardenClusters.type, c, status, { write: 'merge' });
      return done();
    });
}

export class NodewardenMachineReconciler {
  private readonly host: ControllerHost;
  private readonly opts: MachineControllerOptions;

  constructor(host: ControllerHost, opts: MachineControllerOptions) {
    this.host = host;
    this.opts = opts;
  }

  async reconcile(req: Request): Promise<Result> {
    const m = this.host.cache.get<NodewardenMachine & K8sObject>(NM, req.name, req.namespace);
    if (!m) return done();
    if (isBeingDeleted(m)) return this.shutDown(m);
    if (await patchFinalizer(this.host.client, NM, m, FINALIZER, 'add')) return done();
    const step = planMachine(m, Date.now());
    switch (step.kind) {
      case 'setProviderID':
        await this.host.client.patch(
          NM,
          req.name,
          req.namespace,
          { spec: { providerID: step.providerID } },
          { type: 'merge' },
        );
        return done();
      case 'neverBoot':
      case 'booted':
        return done();
      case 'waitForBoot':
        return requeueAfter(step.inMs);
      case 'boot':
        return this.boot(m);
    }
  }

  /** Registers the machine's Node (as its kubelet would) and reports the machine provisioned. */
  private async boot(m: NodewardenMachine & K8sObject): Promise<Result> {
    const name = machineNodeName(m);
    if (!m.spec.adoptExistingNode) await this.registerNode(m, name);
    await updateStatusIfChanged(
      this.host.client,
      NM,
      m,
      {
        ...m.status,
        initialization: { provisioned: true },
        ready: true,
        addresses: [{ type: 'Hostname', address: name }],
        bootedAt: new Date().toISOString(),
      },
      { write: 'merge' },
    );
    return done();
  }

  private async registerNode(m: NodewardenMachine & K8sObject, name: string): Promise<void> {
    const node: V1Node = simulatedNode({
      name,
      zone: m.spec.zone ?? 'zone-a',
      instanceType: 'nodewarden-machine',
      pool: m.spec.pool ?? m.metadata.labels?.[DEPLOYMENT_LABEL] ?? 'clusterapi',
      controlPlane: false,
      cpu: '4',
      memory: '16Gi',
      pods: 110,
      kubeletVersion: this.opts.kubeletVersion,
      providerID: m.spec.providerID,
      image: m.spec.image,
      bootID: m.metadata.uid ?? name,
    });
    await this.host.client.createIfAbsent(Nodes, node as K8sObject);
  }

  /** The machine is going: its Node goes first (a deleted instance's kubelet stops), then our finalizer. */
  private async shutDown(m: NodewardenMachine & K8sObject): Promise<Result> {
    if (!m.spec.adoptExistingNode) await this.deregisterNode(m);
    await patchFinalizer(this.host.client, NM, m, FINALIZER, 'remove');
    return done();
  }

  /** Deletes the machine's Node, only if it is this machine's (a Node of that name could be another's). */
  private async deregisterNode(m: NodewardenMachine): Promise<void> {
    const name = machineNodeName(m);
    try {
      const node = await this.host.client.get<V1Node>(Nodes, name);
      if (node.spec?.providerID === m.spec.providerID)
        await this.host.client.delete(Nodes, name, undefined, { ignoreNotFound: true });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
