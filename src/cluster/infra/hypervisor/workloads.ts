// The workload clusters themselves: each one's real control plane under the
// add-on's folder (control-plane.ts), its kubeconfig published into the
// management cluster, and the Nodes its VMs become. What the planner decides,
// this does, one call per action, idempotent so a retry or a restart repeats
// it safely.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { KUBECONFIG_KEY } from '../../../api/vm-image.ts';
import type { KubeClient } from '../../../runtime/client.ts';
import { isAlreadyExists, isConflict, isNotFound } from '../../../runtime/errors.ts';
import { type K8sObject, Nodes, Secrets } from '../../../runtime/resources.ts';
import { CLUSTER_NAME, type ControlPlanes, clusterClient } from '../../control-plane.ts';
import { KWOK_NODE_ANNOTATION } from '../../fleet.ts';
import { type NodeOfVm, type SecretRef, vmNode } from './vm-pods.ts';

/** Labels on what the hypervisor writes into the management cluster. */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'nodewarden-simulated-hypervisor' };

/**
 * kwokctl has kwok manage every node; a VM powered off must drop out of kwok's
 * hands while its Node stays, so a workload cluster's kwok manages only the
 * Nodes carrying its annotation (checked: with the annotation removed, kwok
 * neither renews the node's lease nor rewrites its conditions).
 */
const KWOK_ANNOTATED_NODES_ONLY = [
  'kwok-controller=manage-all-nodes=false',
  `kwok-controller=manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
];

export class WorkloadClusters {
  readonly planes: ControlPlanes;
  private readonly management: KubeClient;
  private starting: Promise<unknown> = Promise.resolve();

  constructor(planes: ControlPlanes, management: KubeClient) {
    this.planes = planes;
    this.management = management;
  }

  /**
   * Creates the cluster's control plane, or starts it from its saved state and
   * hands its Nodes to the kwok that now runs (as a restarted local cluster
   * does); resolves to the API server's URL once it answers.
   */
  async start(id: string): Promise<string> {
    return this.oneAtATime(() => this.startNow(id));
  }

  // kwokctl picks each component's port as the first free one it finds: two
  // control planes created side by side pick the same ones (seen: the second
  // never answered). So one control plane starts at a time.
  private oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.starting.then(fn, fn);
    this.starting = run.catch(() => {});
    return run;
  }

  private async startNow(id: string): Promise<string> {
    const started = Date.now();
    if (this.planes.exists(planeName(id))) {
      await this.planes.start(planeName(id));
      await this.planes.waitForApi(planeName(id), 60_000);
      await this.withClient(id, (c) => this.planes.handOverNodes(planeName(id), c, started));
    } else {
      // A creation cut short leaves a folder kwokctl cannot start from.
      if (existsSync(this.planes.dir(planeName(id)))) await this.remove(id);
      try {
        await this.planes.create(planeName(id), { extraArgs: KWOK_ANNOTATED_NODES_ONLY });
        await this.planes.waitForApi(planeName(id), 60_000);
      } catch (err) {
        await this.remove(id).catch(() => {}); // no half-started components left running
        throw err;
      }
    }
    return this.planes.clientConfig(planeName(id)).getCurrentCluster()?.server ?? '';
  }

  /** The admin kubeconfig, self-contained (certificates inline): it is read where the files are not. */
  kubeconfig(id: string): string {
    const kc = this.planes.clientConfig(planeName(id));
    const cluster = kc.getCurrentCluster();
    const user = kc.getCurrentUser();
    if (!cluster || !user)
      throw new Error(`the kubeconfig of workload cluster "${id}" names no cluster or user`);
    const inline = (data: string | undefined, file: string | undefined) =>
      data ?? (file ? readFileSync(file).toString('base64') : undefined);
    const name = `nodewarden-kvm-${id}`;
    return stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name,
          cluster: {
            server: cluster.server,
            'certificate-authority-data': inline(cluster.caData, cluster.caFile),
          },
        },
      ],
      users: [
        {
          name,
          user: {
            'client-certificate-data': inline(user.certData, user.certFile),
            'client-key-data': inline(user.keyData, user.keyFile),
          },
        },
      ],
      contexts: [{ name, context: { cluster: name, user: name } }],
      'current-context': name,
    });
  }

  /** Creates or updates the Secret (server-side apply: one call either way). */
  async writeKubeconfig(id: string, ref: SecretRef): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: ref.name, namespace: ref.namespace, labels: MANAGED_BY },
      type: 'Opaque',
      data: { [KUBECONFIG_KEY]: Buffer.from(this.kubeconfig(id)).toString('base64') },
    };
    await this.management.patch(Secrets, ref.name, ref.namespace, body, { type: 'apply', force: true });
  }

  /** The VM's Node, Ready under kwok: created, or taken back from a VM of its name that went off. */
  bootNode(cluster: string, vm: NodeOfVm): Promise<void> {
    return this.withClient(cluster, (client) => bootNodeWith(client, vm));
  }

  /**
   * The VM is off: kwok stops playing its kubelet (its annotation goes) and its
   * Node reads what the node controller writes once a kubelet stops posting:
   * every condition Unknown. The Node stays; whoever owns it deletes it.
   */
  powerOffNode(cluster: string, name: string): Promise<void> {
    return this.withClient(cluster, (client) => powerOffNodeWith(client, name));
  }

  /** Stops the control plane and deletes its state and the Secret; done when nothing is left. */
  async remove(id: string, secret?: SecretRef): Promise<void> {
    if (this.planes.exists(planeName(id))) await this.planes.stop(planeName(id), { bestEffort: true });
    await this.planes.delete(planeName(id));
    rmSync(this.planes.dir(planeName(id)), { recursive: true, force: true });
    if (secret)
      await this.management.delete(Secrets, secret.name, secret.namespace, { ignoreNotFound: true });
  }

  /** Stops every control plane that runs (the daemon goes down); their state stays. */
  async stopAll(ids: readonly string[]): Promise<void> {
    await Promise.all(
      ids
        .filter((id) => this.planes.exists(planeName(id)))
        .map((id) => this.planes.stop(planeName(id), { bestEffort: true })),
    );
  }

  /** Where the control planes live (for the console and tests). */
  dir(id: string): string {
    return this.planes.dir(planeName(id));
  }

  // A client per call, closed after it: calls are few (a boot, a power-off), and
  // keep-alive TLS sockets to every workload cluster would hold memory for nothing.
  private async withClient<T>(id: string, fn: (client: KubeClient) => Promise<T>): Promise<T> {
    const client = clusterClient(this.planes.clientConfig(planeName(id)));
    try {
      return await fn(client);
    } finally {
      client.close();
    }
  }
}

/** The VM's Node, Ready under kwok: created, or taken back from a VM of its name that went off. */
async function bootNodeWith(client: KubeClient, vm: NodeOfVm): Promise<void> {
  const node = vmNode(vm);
  try {
    await client.create(Nodes, node as K8sObject);
    return;
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
  // The name is taken by a powered-off VM's Node: the new VM is that node booted again.
  await retryOnConflict(async () => {
    const current = await client.get<V1Node>(Nodes, vm.name);
    const next: V1Node = {
      ...current,
      metadata: {
        ...current.metadata,
        labels: node.metadata?.labels,
        annotations: { ...current.metadata?.annotations, ...node.metadata?.annotations },
      },
      spec: { ...current.spec, taints: node.spec?.taints },
    };
    const updated = await client.update<V1Node>(Nodes, next as V1Node & K8sObject);
    // Without a Ready condition, kwok initialises the node anew: Ready, with this VM's versions.
    await client.updateStatus<V1Node>(Nodes, {
      ...updated,
      status: { ...node.status, conditions: [] },
    } as V1Node & K8sObject);
  });
}

/** The VM's Node drops out of kwok's hands and reads as a Node whose kubelet stopped posting. */
async function powerOffNodeWith(client: KubeClient, name: string): Promise<void> {
  try {
    await client.patch(
      Nodes,
      name,
      undefined,
      { metadata: { annotations: { [KWOK_NODE_ANNOTATION]: null } } },
      { type: 'merge' },
    );
  } catch (err) {
    if (isNotFound(err)) return; // deleted already: nothing is left to turn off
    throw err;
  }
  // A heartbeat kwok had under way when the annotation went may land after ours: look again.
  for (let attempt = 0; attempt < 3; attempt++) {
    if (!(await markUnknown(client, name))) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Every condition of the Node Unknown, as the node controller writes it; false when it was so already. */
async function markUnknown(client: KubeClient, name: string): Promise<boolean> {
  let changed = false;
  await retryOnConflict(async () => {
    const node = await client.get<V1Node>(Nodes, name);
    const now = new Date().toISOString();
    const before = node.status?.conditions ?? [];
    changed = before.some((c) => c.status !== 'Unknown');
    if (!changed) return;
    const conditions = before.map((c) =>
      c.status === 'Unknown'
        ? c
        : {
            ...c,
            status: 'Unknown',
            reason: 'NodeStatusUnknown',
            message: 'Kubelet stopped posting node status.',
            lastTransitionTime: now as unknown as Date,
          },
    );
    await client.updateStatus<V1Node>(Nodes, { ...node, status: { ...node.status, conditions } } as V1Node &
      K8sObject);
  });
  return changed;
}

/**
 * The control plane's name (its folder): the cluster id, or, for an id kwokctl
 * does not take as a name (longer than 32, say), one made from it.
 */
export function planeName(id: string): string {
  if (CLUSTER_NAME.test(id)) return id;
  const hash = createHash('sha256').update(id).digest('hex').slice(0, 8);
  const stem = id
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+/, '')
    .slice(0, 22)
    .replace(/-+$/, '');
  return `${stem || 'kvm'}-${hash}`;
}

async function retryOnConflict(fn: () => Promise<void>, attempts = 5): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isConflict(err) || i >= attempts) throw err;
    }
  }
}

/** The folder the workload control planes live under, inside the add-on's folder. */
export function workloadsDir(addonDir: string): string {
  return join(addonDir, 'workloads');
}
