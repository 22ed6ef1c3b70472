// Mirrors the simulated cloud's instances into the cluster: a kwok-managed
// Node for every instance that becomes Ready, removed when the instance is
// deleted; and one catch-up pass when the cloud starts again.
import type { V1Node } from '@kubernetes/client-node';
import type { KubeClient } from '../../../runtime/client.ts';
import { type K8sObject, Nodes } from '../../../runtime/resources.ts';
import { Labels, simulatedNode } from '../../fleet.ts';
import type { CloudState, Instance, ScalingGroup } from './state.ts';

/** The label carrying the image an instance booted from. */
export const IMAGE_LABEL = Labels.image;
/** The label carrying the scaling group id of an instance. */
export const GROUP_LABEL = Labels.scalingGroup;

/** The Node object a Ready instance registers as: labelled like the fleet's nodes of its pool. */
export function instanceNode(instance: Instance, group: ScalingGroup): V1Node {
  const version = instance.kubernetesVersion.startsWith('v')
    ? instance.kubernetesVersion
    : `v${instance.kubernetesVersion}`;
  return simulatedNode({
    name: instance.nodeName,
    zone: instance.zone,
    instanceType: group.instanceType,
    pool: group.name,
    controlPlane: group.role === 'ControlPlane',
    cpu: group.cpu,
    memory: group.memory,
    pods: group.pods,
    kubeletVersion: version,
    labels: { ...group.labels, ...(instance.rack ? { [Labels.rack]: instance.rack } : {}) },
    providerID: instance.providerID,
    image: instance.image,
    scalingGroup: group.id,
    bootID: instance.providerID,
  });
}

export interface NodeSyncOptions {
  /** Told about Node create/delete failures (after the client's own retries). */
  onError?: (err: unknown, instance: Instance) => void;
  /** First wait before registering a Ready instance again after a failure (doubles up to 10 s). Default 500 ms. */
  retryMs?: number;
}

const RETRY_MAX_MS = 10_000;

/** Mirrors instances into the cluster: a Node per Ready instance, removed with the instance. */
export class NodeSync {
  private readonly client: KubeClient;
  private readonly onError: (err: unknown, instance: Instance) => void;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly retryMs: number;
  private detach: (() => void) | undefined;
  private stopped = false;

  constructor(client: KubeClient, opts: NodeSyncOptions = {}) {
    this.client = client;
    this.onError = opts.onError ?? (() => {});
    this.retryMs = opts.retryMs ?? 500;
  }

  attach(state: CloudState): void {
    this.detach?.();
    this.stopped = false;
    this.detach = state.onInstance((event, instance) => {
      const group = state.getGroup(instance.groupId);
      if (event === 'ready' && group) this.track(this.register(state, instance, group), instance);
      else if (event === 'deleted') this.track(this.deleteNode(instance), instance);
    });
  }

  /**
   * Creates the instance's Node, trying again while the instance stays Ready, as a kubelet
   * keeps registering: found by the fault soak, a Node whose one try met a restarting API
   * server was never made, and its instance, Ready in the cloud, never joined.
   */
  private async register(state: CloudState, instance: Instance, group: ScalingGroup): Promise<void> {
    for (let wait = this.retryMs; ; wait = Math.min(RETRY_MAX_MS, wait * 2)) {
      try {
        return await this.createNode(instance, group);
      } catch (err) {
        this.onError(err, instance);
        await new Promise((r) => setTimeout(r, wait));
        if (this.stopped || state.getInstance(instance.providerID)?.state !== 'Ready') return;
      }
    }
  }

  private track(p: Promise<void>, instance: Instance): void {
    const q = p.catch((err) => this.onError(err, instance));
    this.inFlight.add(q);
    void q.finally(() => this.inFlight.delete(q));
  }

  async createNode(instance: Instance, group: ScalingGroup): Promise<void> {
    await this.client.createIfAbsent(Nodes, instanceNode(instance, group) as K8sObject);
  }

  async deleteNode(instance: Instance): Promise<void> {
    await this.client.delete(Nodes, instance.nodeName, undefined, { ignoreNotFound: true });
  }

  /**
   * Brings the cluster in line with the cloud once, e.g. when the cloud starts again:
   * a Node for every Ready instance that has none (as a rebooted kubelet re-registers),
   * none for Terminated instances. Returns how many Nodes it created and deleted.
   */
  async reconcile(state: CloudState): Promise<{ created: number; deleted: number }> {
    const names = new Set(
      (await this.client.listAll<V1Node>(Nodes)).items.map((n) => n.metadata?.name ?? ''),
    );
    let created = 0;
    let deleted = 0;
    for (const i of state.listInstances()) {
      const group = state.getGroup(i.groupId);
      if (i.state === 'Ready' && group && !names.has(i.nodeName)) {
        await this.createNode(i, group);
        created++;
      } else if (i.state === 'Terminated' && names.has(i.nodeName)) {
        await this.deleteNode(i);
        deleted++;
      }
    }
    return { created, deleted };
  }

  /** Waits for the Node creations and deletions under way. */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.detach?.();
    this.detach = undefined;
    await this.settle();
  }
}
