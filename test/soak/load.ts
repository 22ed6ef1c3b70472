// The soak's load: PDB-protected Deployments, a DaemonSet and unmanaged pods
// on the fleet; NodeMaintenances created and deleted over time (seeded); and a
// rolling upgrade of the cloud's groups at a surge, with one instance that
// never joins. Everything here goes through the API server as a user's tools would.
import { NodeMaintenances } from '../../src/api/maintenance.ts';
import { seededRandom } from '../../src/cluster/infra/kit/random.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import {
  DaemonSets,
  Deployments,
  type K8sObject,
  Nodes,
  PodDisruptionBudgets,
  Pods,
} from '../../src/runtime/resources.ts';
import type { ClusterCloud } from '../harness/cloud.ts';
import {
  createNodeVersion,
  createScalingGroups,
  type GroupDef,
  OLD_IMAGE,
  TestCloud,
} from '../harness/rollout.ts';
import type { GroupBudget } from './invariants.ts';
import { SteppedLoad } from './stepping.ts';

export const NEW_IMAGE = 'nwos-2.0.0';
export const LOAD_LABEL = 'soak.nodewarden.dev/load';
const NM = NodeMaintenances.type;

export interface LoadOptions {
  namespace: string;
  seed: number;
  deployments: number;
  replicas: number;
  unmanagedPods: number;
  /** NodeMaintenances made over the run. */
  maintenances: number;
  /** At most this many at once. */
  concurrentMaintenances: number;
  groups: number;
  groupSize: number;
  maxSurge: number;
  nodeReadyTimeout: string;
  /** The pool whose nodes the maintenance churn names (default `worker`, the fleet's). */
  maintenancePool?: string;
}

const app = (name: string) => ({ app: name, [LOAD_LABEL]: 'true' });

export async function createWorkloads(client: KubeClient, o: LoadOptions): Promise<void> {
  const ns = o.namespace;
  for (let i = 0; i < o.deployments; i++) {
    const name = `web-${i}`;
    await client.create(Deployments, {
      metadata: { name, namespace: ns },
      spec: {
        replicas: o.replicas,
        selector: { matchLabels: app(name) },
        template: {
          metadata: { labels: app(name) },
          spec: { containers: [{ name, image: `example/${name}:1` }] },
        },
      },
    });
    await client.create(PodDisruptionBudgets, {
      metadata: { name, namespace: ns },
      spec: { minAvailable: o.replicas - 1, selector: { matchLabels: app(name) } },
    });
  }
  await client.create(DaemonSets, {
    metadata: { name: 'agent', namespace: ns },
    spec: {
      selector: { matchLabels: app('agent') },
      template: {
        metadata: { labels: app('agent') },
        spec: {
          tolerations: [{ operator: 'Exists' }],
          containers: [{ name: 'agent', image: 'example/agent:1' }],
        },
      },
    },
  });
  for (let i = 0; i < o.unmanagedPods; i++) {
    await client.create(Pods, {
      metadata: { name: `lone-${i}`, namespace: ns, labels: app('lone') },
      spec: { containers: [{ name: 'lone', image: 'example/lone:1' }] },
    });
  }
}

/** The rollout: cloud groups of the old image, their ScalingGroups, and a NodeVersion of the new one. */
export async function startRollout(
  client: KubeClient,
  cloud: ClusterCloud,
  o: LoadOptions,
): Promise<{ nodeVersion: string; groups: GroupBudget[]; defs: GroupDef[] }> {
  const nodeVersion = 'soak';
  const defs: GroupDef[] = Array.from({ length: o.groups }, (_, i) => ({
    id: `soak-g${i}`,
    role: 'Worker' as const,
    size: o.groupSize,
  }));
  const tc = await TestCloud.connect(client);
  await tc.createGroups('soak', defs);
  await cloud.call('POST', '/faults', { neverJoinNext: { [defs[0]!.id]: 1 } });
  await createScalingGroups(client, nodeVersion, defs);
  await createNodeVersion(client, nodeVersion, NEW_IMAGE, {
    maxSurge: o.maxSurge,
    maxUnavailable: 0,
    nodeReadyTimeout: o.nodeReadyTimeout,
  });
  return {
    nodeVersion,
    defs,
    // The planner's overall surge bounds each group too.
    groups: defs.map((d) => ({ id: d.id, size: d.size, maxSurge: o.maxSurge, maxUnavailable: 0 })),
  };
}
export { OLD_IMAGE };

interface NodeLike extends K8sObject {
  metadata: NonNullable<K8sObject['metadata']>;
}
interface NMLike extends K8sObject {
  metadata: NonNullable<K8sObject['metadata']>;
  spec: { nodeName: string };
  status?: { phase?: string };
}

/**
 * The workers a new maintenance may name: those no maintenance names, a deleting one included.
 * WHY: the admission webhook refuses a second NodeMaintenance for a node while another still
 * names it, even one being deleted (src/maintenance/webhook.ts); the soak's replicas run
 * without webhooks, so the churn keeps the rule itself. Not kept, it made one while the last
 * was waiting for a leader to finish it, and the two fought over the node's cordon.
 */
export function freeWorkers(
  workers: readonly string[],
  maintenances: readonly { spec: { nodeName: string } }[],
): string[] {
  const named = new Set(maintenances.map((m) => m.spec.nodeName));
  return workers.filter((n) => !named.has(n)).sort();
}

/**
 * NodeMaintenances of fleet workers (never the cloud groups' nodes: the rollout
 * drains those), created at seeded moments and deleted once Succeeded (after a
 * seeded hold) or after `maxAgeMs`, whatever their phase.
 */
export class MaintenanceChurn extends SteppedLoad {
  created = 0;
  deleted = 0;
  private readonly random: () => number;
  private readonly o: LoadOptions;
  private readonly client: KubeClient;
  private readonly born = new Map<string, { at: number; holdMs: number }>();

  constructor(client: KubeClient, o: LoadOptions) {
    super();
    this.client = client;
    this.o = o;
    this.random = seededRandom(o.seed ^ 0x5eed);
  }

  /** Runs until stop(): one step every `everyMs`. */
  run(everyMs: number, maxAgeMs: number): Promise<void> {
    return this.stepEvery(everyMs, () => this.step(maxAgeMs));
  }

  /** Deletes every maintenance the churn made. */
  async drainAll(): Promise<void> {
    for (const nm of await this.ours())
      if (!nm.metadata.deletionTimestamp) await this.remove(nm.metadata.name!);
  }

  private async ours(): Promise<NMLike[]> {
    return (await this.client.list<NMLike>(NM, { labelSelector: `${LOAD_LABEL}=true` })).items;
  }

  private async remove(name: string): Promise<void> {
    await this.client.delete(NM, name, undefined, { ignoreNotFound: true });
    this.born.delete(name);
    this.deleted++;
  }

  private async step(maxAgeMs: number): Promise<void> {
    const now = Date.now();
    const all = await this.ours();
    // Being deleted already (its finalizer at work): not ours to delete or count again.
    const live = all.filter((m) => !m.metadata.deletionTimestamp);
    for (const nm of live) {
      const b = this.born.get(nm.metadata.name!) ?? { at: now, holdMs: 0 };
      const age = now - b.at;
      if ((nm.status?.phase === 'Succeeded' && age > b.holdMs) || age > maxAgeMs)
        await this.remove(nm.metadata.name!);
    }
    if (this.created >= this.o.maintenances || live.length >= this.o.concurrentMaintenances) return;
    const workers = freeWorkers(
      (
        await this.client.list<NodeLike>(Nodes, {
          labelSelector: `nodewarden.dev/pool=${this.o.maintenancePool ?? 'worker'}`,
        })
      ).items.map((n) => n.metadata.name!),
      all,
    );
    if (!workers.length) return;
    const node = workers[Math.floor(this.random() * workers.length)]!;
    const name = `soak-${this.created}-${node}`.slice(0, 63);
    await this.client.create(NM, {
      apiVersion: 'maintenance.nodewarden.dev/v1alpha1',
      kind: 'NodeMaintenance',
      metadata: { name, labels: { [LOAD_LABEL]: 'true' } },
      spec: { nodeName: node, reason: 'soak' },
    } as never);
    this.born.set(name, { at: now, holdMs: 1_000 + Math.floor(this.random() * 8_000) });
    this.created++;
  }
}
