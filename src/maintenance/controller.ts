// NodeMaintenanceReconciler: cordon, taint, label, lease, then drain in short
// steps — each reconcile fires the evictions that are due and requeues, so no
// worker ever waits on a drain (the anchor blocks a worker for 30 s per try,
// medik8s #164) and a hundred maintenances proceed side by side. Every step
// leaves its mark in status first, so a restart resumes instead of redoing.
import {
  Maintenance,
  type NodeMaintenance,
  type NodeMaintenanceStatusType,
  NodeMaintenances,
} from '../api/maintenance.ts';
import { DrainTracker, drainStep, type Pod } from '../drain/index.ts';
import type { KubeClient } from '../runtime/client.ts';
import { setCondition } from '../runtime/conditions.ts';
import { parseDuration } from '../runtime/duration.ts';
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
import { describeProblems, validateMaintenanceSpec } from './spec.ts';

export const NM = NodeMaintenances.type;
const BY_NODE = 'spec.nodeName';

export interface MaintenanceOptions {
  lease: NodeLeaseOptions;
  workers?: number;
}

export function setupNodeMaintenance(host: ControllerHost, opts: MaintenanceOptions): void {
  const r = new NodeMaintenanceReconciler(reconcilerDeps(host, 'nodewarden.dev/maintenance'), opts);
  // Counted from the cache when Prometheus scrapes, not on every reconcile.
  countMaintenancesFrom(() => host.cache.list<NodeMaintenance & K8sObject>(NM));
  host.cache.addIndex<NodeMaintenance & K8sObject>(NM, BY_NODE, (nm) => [nm.spec.nodeName]);
  const byNode = (node: string | undefined) =>
    node
      ? host.cache
          .byIndex<NodeMaintenance & K8sObject>(NM, BY_NODE, node)
          .map((nm) => ({ name: nm.metadata.name! }))
      : [];
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
  private readonly opts: MaintenanceOptions;
  private readonly events: EventRecorder;
  /** Drain bookkeeping per maintenance (uid); rebuilt from scratch after a restart, which is safe. */
  private readonly trackers = new Map<string, DrainTracker>();
  /** When we last took or renewed each maintenance's node lease (by uid). */
  private readonly leaseRenewedAt = new Map<string, number>();
  /** Reads each maintenance live once before this process first acts on it. */
  private readonly firstAction: FirstActionCheck;

  constructor(ctx: ReconcilerDeps, opts: MaintenanceOptions) {
    this.client = ctx.client;
    this.firstAction = new FirstActionCheck(ctx.client, NM);
    this.cache = ctx.cache;
    this.events = ctx.events;
    this.opts = opts;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const cache = this.cache;
    const nm = cache.get<NodeMaintenance & K8sObject>(NM, req.name);
    if (!nm) return done();
    // Before this process first acts on a maintenance, the cache is checked against the API
    // server: a replica that just took the lease may still hold one the last leader finished.
    const live = await this.firstAction.check(nm);
    if (live === 'gone') return done(); // its deletion is on the way to the cache
    if (live === 'behind') return requeueAfter(1_000);
    if (nm.metadata.deletionTimestamp) return this.finish(nm, ctx);

    const status: NodeMaintenanceStatusType = structuredClone(nm.status ?? {});
    const now = new Date();
    status.phase ??= 'Pending';
    status.startTime ??= now.toISOString();
    status.observedGeneration = nm.metadata.generation;
    if (status.phase === 'Failed') return this.save(nm, status, done());

    // Everything the spec asks for is checked before anything changes: a podSelector that does not
    // parse used to be found only by the drain, after the node was cordoned and tainted.
    const invalid = validateMaintenanceSpec(nm.spec);
    if (invalid.length > 0) {
      this.fail(nm, status, `invalid spec: ${describeProblems(invalid)}`, now, 'InvalidSpec');
      ctx.log.info({ node: nm.spec.nodeName, problems: invalid }, 'invalid spec; the node is left alone');
      return this.save(nm, status, done());
    }

    if (await patchFinalizer(this.client, NM, nm, Maintenance.finalizer, 'add')) {
      this.events.normal(
        nm,
        'BeginMaintenance',
        'Begin',
        `maintenance of node ${nm.spec.nodeName} begins: ${nm.spec.reason ?? 'no reason given'}`,
      );
      return done(); // the finalizer change requeues us
    }

    const node = cache.get<NodeObject & K8sObject>(Nodes, nm.spec.nodeName);
    if (!node) {
      const msg = `nodes "${nm.spec.nodeName}" not found`;
      this.fail(nm, status, msg, now);
      return this.save(nm, status, done());
    }

    const lease = await this.holdLease(nm, now);
    if (!lease.held) {
      status.lastError = `the lease of node ${nm.spec.nodeName} is held by ${lease.holder}; waiting for it`;
      status.conditions = setCondition(
        status.conditions,
        {
          type: 'Ready',
          status: 'False',
          reason: 'LeaseHeldElsewhere',
          message: status.lastError,
          observedGeneration: nm.metadata.generation,
        },
        now,
      );
      return this.save(nm, status, requeueAfter(10_000));
    }

    // Record whether the node was schedulable BEFORE cordoning it, so delete restores only what we changed.
    if (status.nodeWasSchedulable === undefined) {
      status.nodeWasSchedulable = node.spec?.unschedulable !== true;
      return this.save(nm, status, requeueAfter(1)); // persisted first; the cordon comes next round
    }
    const patch = enterMaintenancePatch(node, nm);
    if (patch) {
      await this.client.patch(Nodes, nm.spec.nodeName, undefined, patch, { type: 'merge' });
      ctx.log.info({ node: nm.spec.nodeName }, 'node cordoned and tainted');
    }
    status.conditions = setCondition(
      status.conditions,
      {
        type: 'Cordoned',
        status: 'True',
        reason: 'NodeCordoned',
        message: `node ${nm.spec.nodeName} is unschedulable and tainted`,
        observedGeneration: nm.metadata.generation,
      },
      now,
    );
    if (status.phase === 'Succeeded') return this.save(nm, status, requeueAfter(this.leaseRenewMs()));
    status.phase = 'Running';

    const timeoutMs = parseDuration(nm.spec.timeout ?? '0');
    const tracker = this.tracker(nm);
    const pods = cache.podsByNode<Pod>(nm.spec.nodeName);
    // The spec was validated above, so the drain's own parse of podSelector cannot throw here.
    const step = await drainStep(
      this.client,
      tracker,
      pods,
      {
        // After a restart the tracker is new: progress still counts against the set recorded at the start.
        evictionPods: status.evictionPods,
        gracePeriodSeconds: nm.spec.gracePeriodSeconds ?? -1,
        podSelector: nm.spec.podSelector,
        deleteEmptyDirData: nm.spec.deleteEmptyDirData ?? true,
        evictUnmanagedPods: nm.spec.evictUnmanagedPods ?? true,
        ignoreDaemonSets: nm.spec.ignoreDaemonSets ?? true,
      },
      now.getTime(),
    );
    status.totalPods ??= pods.length;
    status.evictionPods ??= step.evictionPods;
    status.pendingPods = step.pending;
    status.blockedPods = step.blocked;
    status.drainProgress = step.drainProgress;
    for (const b of step.newlyBlocked) {
      this.events.warning(
        nm,
        'EvictionBlocked',
        'Evict',
        `pod ${b.namespace}/${b.name}: ${b.pdb ? `PodDisruptionBudget ${b.pdb}: ` : ''}${b.message}`,
      );
    }
    const problems = [
      ...step.policyBlocked,
      ...step.errors.map((e) => `${e.namespace}/${e.name}: ${e.message}`),
    ];
    status.lastError = problems.length ? problems.join('; ') : undefined;

    if (step.done) {
      status.phase = 'Succeeded';
      status.drainProgress = 100;
      status.pendingPods = [];
      status.blockedPods = [];
      status.completionTime = now.toISOString();
      status.lastError = undefined;
      drainDuration.observe((now.getTime() - Date.parse(status.startTime)) / 1000);
      status.conditions = setCondition(
        status.conditions,
        {
          type: 'Drained',
          status: 'True',
          reason: 'Drained',
          message: `${status.evictionPods ?? 0} pods evicted`,
          observedGeneration: nm.metadata.generation,
        },
        now,
      );
      status.conditions = setCondition(
        status.conditions,
        {
          type: 'Ready',
          status: 'True',
          reason: 'MaintenanceReady',
          message: `node ${nm.spec.nodeName} is drained and ready for maintenance`,
          observedGeneration: nm.metadata.generation,
        },
        now,
      );
      this.trackers.delete(nm.metadata.uid!);
      this.events.normal(nm, 'SucceedMaintenance', 'Drain', `node ${nm.spec.nodeName} drained`);
      return this.save(nm, status, requeueAfter(this.leaseRenewMs()));
    }
    if (timeoutMs > 0 && now.getTime() - Date.parse(status.startTime) > timeoutMs) {
      this.fail(
        nm,
        status,
        `drain did not finish within ${nm.spec.timeout}: ${step.pending.length} pods left${blockedSummary(step.blocked)}${status.lastError ? `; ${status.lastError}` : ''}`,
        now,
      );
      return this.save(nm, status, done());
    }
    const waiting = `${step.pending.length} pods left${step.blocked.length ? `, ${step.blocked.length} blocked by disruption budgets` : ''}`;
    status.conditions = setCondition(
      status.conditions,
      {
        type: 'Drained',
        status: 'False',
        reason: step.blocked.length ? 'EvictionBlocked' : 'Draining',
        message: waiting,
        observedGeneration: nm.metadata.generation,
      },
      now,
    );
    status.conditions = setCondition(
      status.conditions,
      {
        type: 'Ready',
        status: 'False',
        reason: 'Draining',
        message: waiting,
        observedGeneration: nm.metadata.generation,
      },
      now,
    );
    return this.save(nm, status, requeueAfter(Math.min(5000, Math.max(250, step.nextCheckMs))));
  }

  /** Deletion: stop draining, give the node back as we found it, release the lease, drop the finalizer. */
  private async finish(nm: NodeMaintenance & K8sObject, ctx: ReconcileContext): Promise<Result> {
    this.trackers.delete(nm.metadata.uid!);
    if (!hasFinalizer(nm, Maintenance.finalizer)) return done(); // anchor NMO #154: never touch the node after this
    const node = this.cache.get<NodeObject & K8sObject>(Nodes, nm.spec.nodeName);
    if (node) {
      const patch = leaveMaintenancePatch(node, nm);
      if (patch) await this.client.patch(Nodes, nm.spec.nodeName, undefined, patch, { type: 'merge' });
      ctx.log.info(
        { node: nm.spec.nodeName, uncordoned: nm.status?.nodeWasSchedulable === true },
        'node restored',
      );
    }
    await releaseNodeLease(this.client, nm.spec.nodeName, this.opts.lease);
    this.leaseRenewedAt.delete(nm.metadata.uid!);
    await patchFinalizer(this.client, NM, nm, Maintenance.finalizer, 'remove');
    // A later reconcile of it comes from a cache that has not seen the removal: read it live again.
    this.firstAction.forget(nm.metadata.uid!);
    this.events.normal(nm, 'RemovedMaintenance', 'Uncordon', `maintenance of node ${nm.spec.nodeName} ended`);
    return done();
  }

  private fail(
    nm: NodeMaintenance & K8sObject,
    status: NodeMaintenanceStatusType,
    message: string,
    now: Date,
    reason: 'MaintenanceFailed' | 'InvalidSpec' = 'MaintenanceFailed',
  ): void {
    if (status.phase !== 'Failed') this.events.warning(nm, 'FailedMaintenance', 'Drain', message);
    status.phase = 'Failed';
    status.lastError = message;
    status.completionTime ??= now.toISOString();
    status.conditions = setCondition(
      status.conditions,
      {
        type: 'Ready',
        status: 'False',
        reason,
        message,
        observedGeneration: nm.metadata.generation,
      },
      now,
    );
  }

  /** Writes status only when it changed (lastUpdate aside), so steady maintenances cost no writes. */
  private async save(
    nm: NodeMaintenance & K8sObject,
    status: NodeMaintenanceStatusType,
    result: Result,
  ): Promise<Result> {
    const stamped = { ...status, lastUpdate: new Date().toISOString() };
    return saveStatus(this.client, NM, nm, stamped, result, { ignore: ['lastUpdate'] });
  }

  private tracker(nm: NodeMaintenance & K8sObject): DrainTracker {
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
  private async holdLease(nm: NodeMaintenance & K8sObject, now: Date): Promise<LeaseResult> {
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

/** ", blocked by disruption budgets: ns/a (PDB web), …" — what a timed-out drain was waiting on. */
function blockedSummary(blocked: readonly { namespace: string; name: string; pdb?: string }[]): string {
  if (blocked.length === 0) return '';
  const shown = blocked.slice(0, 5).map((b) => `${b.namespace}/${b.name}${b.pdb ? ` (PDB ${b.pdb})` : ''}`);
  const more = blocked.length > 5 ? ` and ${blocked.length - 5} more` : '';
  return `, blocked by disruption budgets: ${shown.join(', ')}${more}`;
}
