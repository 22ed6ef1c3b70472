// Samples the cluster from outside the operator, several times a second: what
// the invariants need (maintenances first, then nodes: see Sample.nodes), the
// cloud's instances, and the Lease holder. A sample that fails (the API server
// restarting) is counted as missed, never as passed.
import { NodeMaintenances } from '../../src/api/maintenance.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { type K8sObject, Nodes, PodDisruptionBudgets, Pods } from '../../src/runtime/resources.ts';
import type { ClusterCloud } from '../harness/cloud.ts';
import type { HolderSample, InvariantChecker, Sample } from './invariants.ts';
import type { Replicas } from './replicas.ts';

type Obj = K8sObject & { metadata: NonNullable<K8sObject['metadata']> };
interface PodLike extends Obj {
  spec?: { nodeName?: string };
  status?: { conditions?: { type: string; status: string; reason?: string }[] };
}
/** The reason of a pod's DisruptionTarget condition, set by whoever is deleting it. */
export function disruptionOf(p: Pick<PodLike, 'status'>): { disruption?: string } {
  const c = p.status?.conditions?.find((x) => x.type === 'DisruptionTarget' && x.status === 'True');
  return c?.reason ? { disruption: c.reason } : {};
}

interface PdbLike extends Obj {
  spec: { minAvailable?: number; selector?: { matchLabels?: Record<string, string> } };
}
interface NodeLike extends Obj {
  spec?: { unschedulable?: boolean; taints?: { key: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

/**
 * A leader is at work when it renewed the Lease this recently: it renews every 2 s (a little
 * more with jitter), and one that cannot renew for 10 s steps down; 5 s allows one late renewal.
 */
export const LEADER_AT_WORK_MS = 5_000;

/** How many of the latest samples are kept, for the state before a violation (~5 s at two lanes). */
const RECENT = 40;

export class Sampler {
  readonly holders: HolderSample[] = [];
  /** The latest samples, oldest first: what led up to a violation. */
  readonly recent: Sample[] = [];
  missed = 0;
  /** More of the sample, read beside the rest (the bare-metal load's hosts, addresses and VMs). */
  readonly extras: (() => Promise<Partial<Sample>>)[] = [];
  private stopped = false;

  private readonly client: KubeClient;
  private readonly cloud: ClusterCloud;
  private readonly namespace: string;
  private readonly replicas: Replicas;
  private readonly checker: InvariantChecker;
  private readonly onViolation: (message: string, sample: Sample) => void;

  constructor(
    client: KubeClient,
    cloud: ClusterCloud,
    namespace: string,
    replicas: Replicas,
    checker: InvariantChecker,
    onViolation: (message: string, sample: Sample) => void,
  ) {
    this.client = client;
    this.cloud = cloud;
    this.namespace = namespace;
    this.replicas = replicas;
    this.checker = checker;
    this.onViolation = onViolation;
  }

  /**
   * Samples every `everyMs` in each of `lanes` loops, started apart: on a busy machine one
   * sample can take longer than the period, and the rate must not fall with it.
   */
  async run(everyMs: number, lanes = 2): Promise<void> {
    await Promise.all(
      Array.from({ length: lanes }, async (_, i) => {
        await new Promise((r) => setTimeout(r, (i * everyMs) / lanes));
        await this.lane(everyMs);
      }),
    );
  }

  private async lane(everyMs: number): Promise<void> {
    while (!this.stopped) {
      const started = Date.now();
      try {
        const s = await this.sample();
        this.recent.push(s);
        if (this.recent.length > RECENT) this.recent.shift();
        for (const v of this.checker.check(s)) this.onViolation(`${v.invariant}: ${v.message}`, s);
      } catch {
        this.missed++;
      }
      await new Promise((r) => setTimeout(r, Math.max(0, everyMs - (Date.now() - started))));
    }
  }

  stop(): void {
    this.stopped = true;
  }

  async sample(): Promise<Sample> {
    const c = this.client;
    const at = Date.now();
    // The nodes are read between two reads of the maintenances, and a node is owned by a
    // maintenance in either: one that ends in the gap is in the first (it restores the node
    // before it goes), one that begins in the gap is in the second (it is made before it
    // cordons). One read of each, in either order, reports the other case as a violation.
    const maintenances = () =>
      c.list<Obj & { spec: { nodeName: string } }>(NodeMaintenances.type).then((m) => m.items);
    const [lease, [nms, nodes], pods, pdbs, instances, ...extras] = await Promise.all([
      this.replicas.lease(c).then((l) => ({ ...l, readAt: Date.now() })),
      maintenances().then(async (before) => {
        const nodes = await c.list<NodeLike>(Nodes);
        return [[...before, ...(await maintenances())], nodes] as const;
      }),
      c.list<PodLike>(Pods, { namespace: this.namespace }),
      c.list<PdbLike>(PodDisruptionBudgets, { namespace: this.namespace }),
      this.cloud.call<{ groupId: string; state: string }[]>('GET', '/instances'),
      ...this.extras.map((read) => read()),
    ]);
    const holder = lease.holder;
    this.holders.push({ at, holder });
    return {
      ...Object.assign({}, ...(extras as Partial<Sample>[])),
      at,
      leaderAtWork: lease.renewedAt !== undefined && lease.readAt - lease.renewedAt <= LEADER_AT_WORK_MS,
      maintained: nms.map((m) => m.spec.nodeName),
      nodes: nodes.items.map((n) => ({
        name: n.metadata.name!,
        ready: n.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') === true,
        unschedulable: n.spec?.unschedulable === true,
        taints: (n.spec?.taints ?? []).map((t) => t.key),
      })),
      pods: pods.items.map((p) => ({
        name: p.metadata.name ?? '',
        namespace: p.metadata.namespace ?? '',
        labels: p.metadata.labels ?? {},
        ready: p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') === true,
        deleting: !!p.metadata.deletionTimestamp,
        ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
        ...disruptionOf(p),
      })),
      pdbs: pdbs.items.map((p) => ({
        namespace: p.metadata.namespace ?? '',
        name: p.metadata.name!,
        matchLabels: p.spec.selector?.matchLabels ?? {},
        minAvailable: p.spec.minAvailable ?? 0,
      })),
      instances: instances.map((i) => ({ groupId: i.groupId, state: i.state })),
    };
  }
}
