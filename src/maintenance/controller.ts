// NodeMaintenanceReconciler: cordon, taint, label, lease, then drain in short
// steps — each reconcile fires the evictions that are due and requeues, so no
// worker ever waits on a drain (the anchor blocks a worker for 30 s per try,
// medik8s #164) and a hundred maintenances proceed side by side. Every step
// leaves its mark in status first, so a restart resumes instead of redoing.
// The reconcile walks named steps to the one that decides the round, and the
// next status follows from that step alone (nextMaintenanceStatus in status.ts);
// it is saved once, at the end.
import {
  Maintenance,
  type NodeMaintenance,
  type NodeMaintenanceStatusType,
  NodeMaintenances,
} from '../api/maintenance.ts';
import { DrainTracker, drainStep, type Pod } from '../drain/index.ts';
import type { KubeClient } from '../runtime/client.ts';
import { isNotFound } from '../runtime/errors.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { hasFinalizer, patchFinalizer } from '../runtime/finalizers.ts';
import {
  type CacheReader,
  type ControllerHost,
  type ReconcilerDeps,
  reconcilerDeps,
} from '../runtime/host.ts';
import { FirstActionCheck } from '../runtime/live.ts';
import { anyOf, deletionOrFinalizersChanged, generationChanged } from '../runtime/predicates.ts';
import {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
} from '../runtime/reconcile.ts';
import { type K8sObject, Nodes, Pods } from '../runtime/resources.ts';
import { saveStatus } from '../runtime/status.ts';
import { acquireNodeLease, type LeaseResult, type NodeLeaseOptions, releaseNodeLease } from './lease.ts';
import { countMaintenancesFrom, drainDuration } from './metrics.ts';
import { enterMaintenancePatch, leaveMaintenancePatch, type NodeObject } from './node-state.ts';
import { validateMaintenanceSpec } from './spec.ts';
import { type MaintenanceStep, nextLook, nextMaintenanceStatus } from './status.ts';

export const NM = NodeMaintenances.type;
const BY_NODE = 'spec.nodeName';

type Nm = NodeMaintenance & K8sObject;
type Status = NodeMaintenanceStatusType;

/** How the reconciler runs: the node lease it holds during a maintenance, and how many workers reconcile. */
export interface NodeMaintenanceReconcilerOptions {
  lease: NodeLeaseOptions;
  workers?: number;
}

export function setupNodeMaintenance(host: ControllerHost, opts: NodeMaintenanceReconcilerOptions): void {
  const r = new NodeMaintenanceReconciler(reconcilerDeps(host, 'nodewarden.dev/maintenance'), opts);
  // Counted from the cache when Prometheus scrapes, not on every reconcile.
  countMaintenancesFrom(() => host.cache.list<Nm>(NM));
  host.cache.addIndex<Nm>(NM, BY_NODE, (nm) => [nm.spec.nodeName]);
  const byNode = (node: string | undefined) =>
    node ? host.cache.byIndex<Nm>(NM, BY_NODE, node).map((nm) => ({ name: nm.metadata.name! })) : [];
  host
    .controller('nodemaintenance')
    .for(NM, { predicates: [anyOf(generationChanged, deletionOrFinalizersChanged)] })
    .watches(Nodes, (node) => byNode(node.metadata?.name))
    .watches(Pods, (pod) => byNode((pod.spec as { nodeName?: string } | undefined)?.nodeName))
    .withWorkers(opts.workers ?? 16)
    .complete((req, ctx) => r.reconcile(req, ctx));
}

export class NodeMaintenanceReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly opts: NodeMaintenanceReconcilerOptions;
  private readonly events: EventRecorder;
  /** Drain bookkeeping per maintenance (uid); rebuilt from scratch after a restart, which is safe. */
  private readonly trackers = new Map<string, DrainTracker>();
  /** When we last took or renewed each maintenance's node lease (by uid). */
  private readonly leaseRenewedAt = new Map<string, number>();
  /** Reads each maintenance live once before this process first acts on it. */
  private readonly firstAction: FirstActionCheck;

  constructor(ctx: ReconcilerDeps, opts: NodeMaintenanceReconcilerOptions) {
    this.client = ctx.client;
    this.firstAction = new FirstActionCheck(ctx.client, NM);
    this.cache = ctx.cache;
    this.events = ctx.events;
    this.opts = opts;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const nm = this.cache.get<Nm>(NM, req.name);
    if (!nm) return done();
    // Before this process first acts on a maintenance, the cache is checked against the API
    // server: a replica that just took the lease may still hold one the last leader finished.
    const live = await this.firstAction.check(nm);
    if (live === 'gone') return done(); // its deletion is on the way to the cache
    if (live === 'behind') return requeueAfter(1_000);
    if (nm.metadata.deletionTimestamp) return this.finish(nm, ctx);

    const now = new Date();
    const reached = await this.advance(nm, now, ctx);
    if (reached.step === 'finalizerAdded') return done(); // the finalizer change requeues us
    const status = nextMaintenanceStatus({ nm, reached, now });
    this.report(nm, reached, status, now, ctx);
    return this.save(nm, status, nextLook(reached, status, this.leaseRenewMs()));
  }

  /**
   * Runs the steps in order — spec, finalizer, node, lease, record, cordon, drain — and
   * stops at the first that decides this round, saying what it found there. Each step
   * that writes leaves a state the next round resumes from.
   */
  private async advance(
    nm: Nm,
    now: Date,
    ctx: ReconcileContext,
  ): Promise<MaintenanceStep | { step: 'finalizerAdded' }> {
    if (nm.status?.phase === 'Failed') return { step: 'alreadyFailed' };
    // Everything the spec asks for is checked before anything changes: a podSelector that does not
    // parse used to be found only by the drain, after the node was cordoned and tainted.
    const problems = validateMaintenanceSpec(nm.spec);
    if (problems.length > 0) return { step: 'invalidSpec', problems };
    if (await this.addFinalizer(nm)) return { step: 'finalizerAdded' };
    const node = this.cache.get<NodeObject & K8sObject>(Nodes, nm.spec.nodeName);
    if (!node) return { step: 'nodeMissing' };
    const lease = await this.holdLease(nm, now);
    if (!lease.held) return { step: 'leaseHeldElsewhere', holder: lease.holder };
    // Record whether the node was schedulable BEFORE cordoning it, so delete restores only what we changed.
    if (nm.status?.nodeWasSchedulable === undefined) {
      const live = await this.liveNode(nm.spec.nodeName);
      if (!live) return { step: 'nodeMissing' };
      return { step: 'schedulableRecorded', nodeWasSchedulable: live.spec?.unschedulable !== true };
    }
    await this.cordon(nm, node, ctx);
    if (nm.status?.phase === 'Succeeded') return { step: 'cordoned' };
    return this.drain(nm, now);
  }

  /** Adds the finalizer and announces the maintenance; true when it was missing. */
  private async addFinalizer(nm: Nm): Promise<boolean> {
    if (!(await patchFinalizer(this.client, NM, nm, Maintenance.finalizer, 'add'))) return false;
    this.events.normal(
      nm,
      'BeginMaintenance',
      'Begin',
      `maintenance of node ${nm.spec.nodeName} begins: ${nm.spec.reason ?? 'no reason given'}`,
    );
    return true;
  }

  /** Cordons, taints and labels the node, unless it already is. */
  private async cordon(nm: Nm, node: NodeObject & K8sObject, ctx: ReconcileContext): Promise<void> {
    const patch = enterMaintenancePatch(node, nm);
    if (!patch) return;
    await this.client.patch(Nodes, nm.spec.nodeName, undefined, patch, { type: 'merge' });
    ctx.log.info({ node: nm.spec.nodeName }, 'node cordoned and tainted');
  }

  /** One drain step over the pods on the node; an Event for each pod a disruption budget newly refused. */
  private async drain(nm: Nm, now: Date): Promise<MaintenanceStep> {
    const pods = this.cache.podsByNode<Pod>(nm.spec.nodeName);
    // The spec was validated above, so the drain's own parse of podSelector cannot throw here.
    const step = await drainStep(
      this.client,
      this.tracker(nm),
      pods,
      {
        // After a restart the tracker is new: progress still counts against the set recorded at the start.
        evictionPods: nm.status?.evictionPods,
        gracePeriodSeconds: nm.spec.gracePeriodSeconds ?? -1,
        podSelector: nm.spec.podSelector,
        deleteEmptyDirData: nm.spec.deleteEmptyDirData ?? true,
        evictUnmanagedPods: nm.spec.evictUnmanagedPods ?? true,
        ignoreDaemonSets: nm.spec.ignoreDaemonSets ?? true,
      },
      now.getTime(),
    );
    for (const b of step.newlyBlocked) {
      this.events.warning(
        nm,
        'EvictionBlocked',
        'Evict',
        `pod ${b.namespace}/${b.name}: ${b.pdb ? `PodDisruptionBudget ${b.pdb}: ` : ''}${b.message}`,
      );
    }
    if (step.done) this.trackers.delete(nm.metadata.uid!);
    return { step: 'drainStepped', podsOnNode: pods.length, drain: step };
  }

  /** The Events, metric and log a round's outcome calls for, before its status is saved. */
  private report(nm: Nm, reached: MaintenanceStep, status: Status, now: Date, ctx: ReconcileContext): void {
    const was = nm.status?.phase;
    if (status.phase === 'Succeeded' && was !== 'Succeeded') {
      drainDuration.observe((now.getTime() - Date.parse(status.startTime!)) / 1000);
      this.events.normal(nm, 'SucceedMaintenance', 'Drain', `node ${nm.spec.nodeName} drained`);
    }
    if (status.phase === 'Failed' && was !== 'Failed')
      this.events.warning(nm, 'FailedMaintenance', 'Drain', status.lastError ?? '');
    if (reached.step === 'invalidSpec')
      ctx.log.info(
        { node: nm.spec.nodeName, problems: reached.problems },
        'invalid spec; the node is left alone',
      );
  }

  /** Deletion: stop draining, give the node back as we found it, release the lease, drop the finalizer. */
  private async finish(nm: Nm, ctx: ReconcileContext): Promise<Result> {
    this.trackers.delete(nm.metadata.uid!);
    if (!hasFinalizer(nm, Maintenance.finalizer)) return done(); // anchor NMO #154: never touch the node after this
    await this.restoreNode(nm, ctx);
    await releaseNodeLease(this.client, nm.spec.nodeName, this.opts.lease);
    this.leaseRenewedAt.delete(nm.metadata.uid!);
    await patchFinalizer(this.client, NM, nm, Maintenance.finalizer, 'remove');
    // A later reconcile of it comes from a cache that has not seen the removal: read it live again.
    this.firstAction.forget(nm.metadata.uid!);
    this.events.normal(nm, 'RemovedMaintenance', 'Uncordon', `maintenance of node ${nm.spec.nodeName} ended`);
    return done();
  }

  /** Removes our taints and label, and uncordons the node only if we cordoned it (read live: see liveNode). */
  private async restoreNode(nm: Nm, ctx: ReconcileContext): Promise<void> {
    const node = await this.liveNode(nm.spec.nodeName);
    if (!node) return;
    const patch = leaveMaintenancePatch(node, nm);
    if (patch) await this.client.patch(Nodes, nm.spec.nodeName, undefined, patch, { type: 'merge' });
    ctx.log.info(
      { node: nm.spec.nodeName, uncordoned: nm.status?.nodeWasSchedulable === true },
      'node restored',
    );
  }

  /**
   * The Node as the API server holds it, for the two decisions made once and never
   * corrected: whether we cordoned it (recorded before the cordon) and how to restore it
   * (the finalizer goes next). A cache may not have seen the last maintenance's uncordon
   * or cordon yet — a new leader's, after a partition: both found by the fault soak.
   */
  private liveNode(name: string): Promise<(NodeObject & K8sObject) | undefined> {
    return this.client
      .get<NodeObject & K8sObject>(Nodes, name)
      .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
  }

  /** Writes status only when it changed (lastUpdate aside), so steady maintenances cost no writes. */
  private async save(nm: Nm, status: Status, result: Result): Promise<Result> {
    const stamped = { ...status, lastUpdate: new Date().toISOString() };
    return saveStatus(this.client, NM, nm, stamped, result, { ignore: ['lastUpdate'] });
  }

  private tracker(nm: Nm): DrainTracker {
    let t = this.trackers.get(nm.metadata.uid!);
    if (!t) {
      t = new DrainTracker();
      this.trackers.set(nm.metadata.uid!, t);
    }
    return t;
  }

  /**
   * Takes or renews the node lease, but asks the API server only when a renewal
   * is due: most reconciles (a pod left, a PDB reopened) need no lease traffic.
   */
  private async holdLease(nm: Nm, now: Date): Promise<LeaseResult> {
    const uid = nm.metadata.uid!;
    const renewed = this.leaseRenewedAt.get(uid);
    if (renewed !== undefined && now.getTime() - renewed < this.leaseRenewMs())
      return { held: true, renewed: false };
    const lease = await acquireNodeLease(this.client, nm.spec.nodeName, this.opts.lease, now);
    if (lease.held) this.leaseRenewedAt.set(uid, now.getTime());
    else this.leaseRenewedAt.delete(uid);
    return lease;
  }

  private leaseRenewMs(): number {
    return (this.opts.lease.durationSeconds * 1000) / 4;
  }
}
