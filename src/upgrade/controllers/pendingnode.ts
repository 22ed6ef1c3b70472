// PendingNodeReconciler: follows an instance that should join the cluster or
// leave it. Join is reached when the cloud says Ready and the Node object is
// there (the CR stays: the NodeVersion controller deletes it once it paired
// the node); Leave is reached when the instance is Terminated (the CR goes).
// A join that misses its deadline is given up: instance and Node deleted, the
// goal turned to Leave, so the rollout's budget frees up and it replaces the
// node instead of waiting on it forever.
// Anchor: the Constellation PendingNode controller (upgrades.md §3). Ours also
// gives up at once on an instance the cloud reports Failed, or gone after a
// grace period (anchor #2545: a node that died before joining held the upgrade
// for the whole join deadline), polls faster while an instance boots or shuts
// down, and re-sends the delete of an instance that outlives its Leave deadline.
import { type PendingNode, type PendingNodeStatusType, PendingNodes } from '../../api/upgrade.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import {
  type CacheReader,
  type ControllerHost,
  type ReconcilerDeps,
  reconcilerDeps,
} from '../../runtime/host.ts';
import { generationChanged, type UpdatePredicate } from '../../runtime/predicates.ts';
import {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
} from '../../runtime/reconcile.ts';
import { type K8sObject, Nodes } from '../../runtime/resources.ts';
import { updateStatusIfChanged } from '../../runtime/status.ts';
import { CloudError, type CloudProvider, type InstanceState } from '../providers/interface.ts';

const PN = PendingNodes.type;
const BY_NODE_NAME = 'pendingnode.nodeName';

/** The anchor's recheck period. */
export const RECHECK_MS = 30_000;
/**
 * While an instance boots or shuts down. Pending nodes hold the rollout's surge
 * budget and nobody watches the cloud, so noticing the end of the transition
 * soon is what keeps a rollout moving; 5 s is a few cheap reads per node.
 */
export const TRANSITION_RECHECK_MS = 5_000;
/**
 * Some clouds do not list an instance for a while after creating it (read after
 * write), and report it as Terminated meanwhile; only after this long do we
 * believe a joining instance is really gone.
 */
export const VANISHED_GRACE_MS = 2 * 60_000;

type PendingNodeObject = PendingNode & K8sObject;
type NodeObject = K8sObject & { spec?: { providerID?: string } };

export interface PendingObservation {
  goal: 'Join' | 'Leave';
  /** Epoch ms; absent when the goal has none. */
  deadline?: number;
  state: InstanceState;
  /** The Node object of this very instance exists. */
  nodeExists: boolean;
  /** How long the PendingNode has existed, ms. */
  ageMs: number;
  now: number;
}

export type PendingDecision =
  /** Join reached: report it and wait for the NodeVersion controller. */
  | { kind: 'joined' }
  /** Leave reached: delete the PendingNode. */
  | { kind: 'left' }
  /** Give up the join: delete instance and Node, switch the goal to Leave. */
  | { kind: 'abandon'; reason: string }
  /** Not there yet: look again later; `overdue` when a Leave deadline has passed. */
  | { kind: 'wait'; requeueAfterMs: number; overdue: boolean };

/** When to look again: at the deadline, or sooner while the instance is between states. */
export function nextCheckMs(state: InstanceState, deadline: number | undefined, now: number): number {
  const period = state === 'Creating' || state === 'Terminating' ? TRANSITION_RECHECK_MS : RECHECK_MS;
  if (deadline === undefined) return period;
  // Never 0: a zero requeue means "done" to the controller.
  return Math.max(1, Math.min(period, Math.ceil(deadline - now)));
}

export function decidePendingNode(o: PendingObservation): PendingDecision {
  const pastDeadline = o.deadline !== undefined && o.now >= o.deadline;
  if (o.goal === 'Join') {
    if (o.nodeExists && o.state === 'Ready') return { kind: 'joined' };
    if (pastDeadline) return { kind: 'abandon', reason: `did not join before its deadline (${o.state})` };
    if (o.state === 'Failed') return { kind: 'abandon', reason: 'the cloud reports the instance Failed' };
    if (o.state === 'Terminated' && o.ageMs >= VANISHED_GRACE_MS)
      return { kind: 'abandon', reason: 'the instance was terminated before it joined' };
    return { kind: 'wait', requeueAfterMs: nextCheckMs(o.state, o.deadline, o.now), overdue: false };
  }
  if (o.state === 'Terminated') return { kind: 'left' };
  if (pastDeadline) return { kind: 'wait', requeueAfterMs: RECHECK_MS, overdue: true };
  return { kind: 'wait', requeueAfterMs: nextCheckMs(o.state, o.deadline, o.now), overdue: false };
}

/** A Node is this instance's unless it names another one (the kubelet may not have set providerID yet). */
export function isNodeOf(node: NodeObject | undefined, providerID: string): boolean {
  if (!node || node.metadata?.deletionTimestamp) return false;
  const id = node.spec?.providerID;
  return !id || id === providerID;
}

export const providerIDChanged: UpdatePredicate = (o, n) =>
  (o as NodeObject).spec?.providerID !== (n as NodeObject).spec?.providerID;

export function setupPendingNodes(host: ControllerHost, opts: { cloud: CloudProvider }): void {
  const r = new PendingNodeReconciler(reconcilerDeps(host, 'nodewarden.dev/pendingnode'), opts.cloud);
  host.cache.addIndex<PendingNodeObject>(PN, BY_NODE_NAME, (pn) => [pn.spec.nodeName]);
  host
    .controller('pendingnode')
    .for(PN, { predicates: [generationChanged] })
    // A Node appearing or going is what matters; its heartbeats are not.
    .watches(
      Nodes,
      (node) =>
        host.cache
          .byIndex<PendingNodeObject>(PN, BY_NODE_NAME, node.metadata?.name ?? '')
          .map((pn) => ({ name: pn.metadata.name! })),
      { predicates: [providerIDChanged] },
    )
    .withWorkers(4)
    .complete((req, ctx) => r.reconcile(req, ctx));
}

export class PendingNodeReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly cloud: CloudProvider;
  private readonly events: EventRecorder;

  constructor(ctx: ReconcilerDeps, cloud: CloudProvider) {
    this.client = ctx.client;
    this.cache = ctx.cache;
    this.cloud = cloud;
    this.events = ctx.events;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const pn = this.cache.get<PendingNodeObject>(PN, req.name);
    if (!pn || pn.metadata.deletionTimestamp) return done();
    const { providerID, nodeName, goal } = pn.spec;
    const now = Date.now();
    let state: InstanceState;
    try {
      state = await this.cloud.nodeState(providerID);
    } catch (err) {
      return this.cloudFailure(pn, err, 'GetState');
    }
    const node = this.cache.get<NodeObject>(Nodes, nodeName);
    const deadline = pn.spec.deadline ? Date.parse(pn.spec.deadline) : Number.NaN;
    const created = Date.parse(pn.metadata.creationTimestamp ?? '');
    const decision = decidePendingNode({
      goal,
      deadline: Number.isNaN(deadline) ? undefined : deadline,
      state,
      nodeExists: isNodeOf(node, providerID),
      ageMs: Number.isNaN(created) ? 0 : now - created,
      now,
    });

    switch (decision.kind) {
      case 'joined':
        return this.save(pn, { cspState: state, reachedGoal: true }, done());
      case 'left':
        ctx.log.info({ providerID }, 'instance terminated; pending node done');
        await this.client.delete(PN, pn.metadata.name!, undefined, {
          ignoreNotFound: true,
          preconditions: { uid: pn.metadata.uid },
        });
        return done();
      case 'abandon':
        return this.abandonJoin(pn, state, isNodeOf(node, providerID), decision.reason, ctx);
      case 'wait':
        if (decision.overdue) {
          const failed = await this.leaveOverdue(pn, state, ctx);
          if (failed) return failed;
        }
        return this.save(pn, { cspState: state, reachedGoal: false }, requeueAfter(decision.requeueAfterMs));
    }
  }

  /** The instance never joined in time: delete it (and its Node), and follow it out as a Leave. */
  private async abandonJoin(
    pn: PendingNodeObject,
    state: InstanceState,
    hasNode: boolean,
    reason: string,
    ctx: ReconcileContext,
  ): Promise<Result> {
    const { providerID, nodeName } = pn.spec;
    try {
      await this.cloud.deleteNode(providerID);
    } catch (err) {
      return this.cloudFailure(pn, err, 'DeleteNode');
    }
    if (hasNode) await this.client.delete(Nodes, nodeName, undefined, { ignoreNotFound: true });
    try {
      // The goal change bumps the generation, which brings us back to follow the leave.
      await this.client.patch(
        PN,
        pn.metadata.name!,
        undefined,
        { spec: { goal: 'Leave', deadline: null } },
        { type: 'merge' },
      );
    } catch (err) {
      if (isNotFound(err)) return done(); // deleted meanwhile (the NodeVersion controller gave up on it too)
      throw err;
    }
    this.events.warning(
      pn,
      'JoinAbandoned',
      'DeleteNode',
      `node ${nodeName} (${providerID}) ${reason}; instance deleted, now waiting for it to leave`,
    );
    ctx.log.warn({ providerID, nodeName, reason }, 'join abandoned');
    return this.save(pn, { cspState: state, reachedGoal: false }, done());
  }

  /** Still there past the Leave's deadline: said, and deleted again; a Result only when the cloud failed. */
  private async leaveOverdue(
    pn: PendingNodeObject,
    state: InstanceState,
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    const { providerID } = pn.spec;
    ctx.log.warn({ providerID, state }, 'instance has not left by its deadline');
    this.events.warning(
      pn,
      'LeaveOverdue',
      'DeleteNode',
      `instance ${providerID} is still ${state} past its deadline`,
    );
    // Deleting is idempotent; a lost or refused earlier delete is the usual reason it is still there.
    if (state === 'Terminating') return undefined;
    try {
      await this.cloud.deleteNode(providerID);
      return undefined;
    } catch (err) {
      return this.cloudFailure(pn, err, 'DeleteNode');
    }
  }

  /** Transient errors back off through the queue; others are reported and retried at the recheck period. */
  private cloudFailure(pn: PendingNodeObject, err: unknown, action: string): Result {
    if (!(err instanceof CloudError)) throw err;
    this.events.warning(pn, 'CloudError', action, err.message);
    if (err.retryable) throw err;
    return requeueAfter(RECHECK_MS);
  }

  /**
   * Writes status only when it changed. A merge patch: both fields are ours
   * alone, and it still applies after this round changed the spec.
   */
  private async save(pn: PendingNodeObject, next: PendingNodeStatusType, result: Result): Promise<Result> {
    try {
      await updateStatusIfChanged(this.client, PN, pn, next, { write: 'merge' });
    } catch (err) {
      if (isNotFound(err)) return done(); // deleted meanwhile: nothing left to follow
      throw err;
    }
    return result;
  }
}
