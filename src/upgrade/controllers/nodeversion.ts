// NodeVersionReconciler: one round of a rolling upgrade per reconcile. It
// observes (annotating new nodes with their group and image, asked of the cloud
// once, and listing the groups' instances), has the pure round planner decide
// everything (actions, the autoscaler's pause, what the rollout waits for),
// carries that out, and writes status once. It never waits inside a
// round: joins, drains and deletions are noticed through the cache, so a
// restarted operator picks the rollout up from what the cluster shows.
import { type NodeMaintenance, NodeMaintenances } from '../../api/maintenance.ts';
import {
  AutoscalingStrategies,
  type NodeVersion,
  type NodeVersionStatusType,
  NodeVersions,
  type PendingNode,
  PendingNodes,
  type ScalingGroup,
  ScalingGroups,
} from '../../api/upgrade.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { isReady } from '../../runtime/conditions.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { patchFinalizer } from '../../runtime/finalizers.ts';
import {
  type CacheReader,
  type ControllerHost,
  type ReconcilerDeps,
  reconcilerDeps,
} from '../../runtime/host.ts';
import {
  annotationsChanged,
  anyOf,
  deletionOrFinalizersChanged,
  generationChanged,
  labelsChanged,
  type UpdatePredicate,
} from '../../runtime/predicates.ts';
import {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
} from '../../runtime/reconcile.ts';
import { type K8sObject, Nodes } from '../../runtime/resources.ts';
import { saveStatus } from '../../runtime/status.ts';
import { rolloutProgress, upgradeNodes } from '../metrics.ts';
import { nodeVersionOf, Upgrade } from '../names.ts';
import type { CloudInstance, CloudProvider } from '../providers/interface.ts';
import { drainBlocks } from '../rollout/blocked.ts';
import { clampMessage } from '../rollout/budgets.ts';
import type { RolloutProblem } from '../rollout/causes.ts';
import type { ObservedState } from '../rollout/classify.ts';
import { boundsOf, type NodeObject } from '../rollout/observe.ts';
import { planRound, type RolloutRound, type RoundSnapshot } from '../rollout/round.ts';
import { nextStatus, rolloutStarting } from '../rollout/status.ts';
import { NodeAnnotator, untoldRefusals } from './annotate.ts';
import { type ApplyResult, RolloutApplier } from './apply.ts';
import { autoscalerRunning, pauseAutoscalers, restoreAutoscalers } from './autoscaler-pause.ts';
import { Expectations } from './expectations.ts';
import { providerIDChanged } from './pendingnode.ts';

const NV = NodeVersions.type;
const SG = ScalingGroups.type;
const PN = PendingNodes.type;
const NM = NodeMaintenances.type;
const AS = AutoscalingStrategies.type;
const BY_NODE_VERSION = 'nodeVersion';

/** While a rollout runs, look again at least this often (deadlines, backoffs, missed events). */
const ACTIVE_RESYNC_MS = 10_000;

export interface NodeVersionOptions {
  cloud: CloudProvider;
}

type NodeVersionObject = NodeVersion & K8sObject;
type Node = NodeObject;

const nameOf = (o: K8sObject): string => o.metadata?.name ?? '';

const labelledNodeVersion = (o: K8sObject): string[] => {
  const v = o.metadata?.labels?.[Upgrade.labels.nodeVersion];
  return v ? [v] : [];
};

const readyChanged: UpdatePredicate = (o, n) => isReady(o as Node) !== isReady(n as Node);
/** Node updates that can change a rollout: readiness, providerID, pairing annotations, labels. */
const nodeRolloutChanged = anyOf(readyChanged, providerIDChanged, annotationsChanged, labelsChanged);

export function setupNodeVersions(host: ControllerHost, opts: NodeVersionOptions): void {
  const r = new NodeVersionReconciler(reconcilerDeps(host, 'nodewarden.dev/upgrade'), opts);
  const cache = host.cache;
  cache.addIndex<ScalingGroup & K8sObject>(SG, BY_NODE_VERSION, (sg) => [nodeVersionOf(sg)]);
  cache.addIndex(PN, BY_NODE_VERSION, labelledNodeVersion);
  cache.addIndex(NM, BY_NODE_VERSION, labelledNodeVersion);
  const toRequests = (names: string[]) => names.map((name) => ({ name }));
  const all = () => cache.list(NV).map((nv) => ({ name: nv.metadata?.name ?? '' }));
  host
    .controller('nodeversion')
    .for(NV, { predicates: [anyOf(generationChanged, deletionOrFinalizersChanged)] })
    .watches(SG, (sg) => toRequests([nodeVersionOf(sg as ScalingGroup & K8sObject)]))
    .watches(PN, (pn) => toRequests(labelledNodeVersion(pn)))
    .watches(NM, (nm) => toRequests(labelledNodeVersion(nm)))
    .watches(Nodes, all, { predicates: [nodeRolloutChanged] })
    .watches(AS, all)
    .complete((req, ctx) => r.reconcile(req, ctx));
}

/** What one round read, beside the snapshot the plan is made from: for the applier and the status. */
interface RoundReading {
  snapshot: RoundSnapshot;
  /** Problems met while annotating new nodes (asking the cloud). */
  annotateProblems: RolloutProblem[];
  expect: RoundExpectations;
}

interface RoundExpectations {
  pending: Expectations<PendingNode & K8sObject>;
  drains: Expectations<NodeMaintenance & K8sObject>;
}

export class NodeVersionReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly cloud: CloudProvider;
  private readonly events: EventRecorder;
  private readonly annotator: NodeAnnotator;
  private readonly recordedGroups = new Map<string, string[]>();
  private readonly expectations = new Map<string, RoundExpectations>();
  /** Per NodeVersion: the cloud's refusals of nodes it has said in its status (see untoldRefusals). */
  private readonly toldRefusals = new Map<string, Set<string>>();

  constructor(ctx: ReconcilerDeps, opts: NodeVersionOptions) {
    this.client = ctx.client;
    this.cache = ctx.cache;
    this.cloud = opts.cloud;
    this.events = ctx.events;
    this.annotator = new NodeAnnotator(ctx.client, opts.cloud);
  }

  /** Observe (cache, cloud), plan (pure), apply, and save the status once. */
  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    let nv = this.cache.get<NodeVersionObject>(NV, req.name);
    if (!nv) return done();
    if (nv.metadata.deletionTimestamp) return this.finalize(nv);
    if (await patchFinalizer(this.client, NV, nv, Upgrade.finalizer, 'add')) return done(); // the change requeues us
    const now = new Date();
    const reading = await this.observe(nv, now.getTime(), ctx);
    const round = planRound(reading.snapshot);
    nv = await this.recordStart(nv, round, now);
    const applied = await this.apply(nv, reading, round, now, ctx);
    const status = nextStatus(
      nv,
      round.classification,
      round.state,
      {
        problems: [...reading.annotateProblems, ...applied.problems, ...round.problems],
        replaced: round.replaced,
        blocked: [...drainBlocks(reading.snapshot.maintenances), ...applied.refused].sort((a, b) =>
          a.node < b.node ? -1 : a.node > b.node ? 1 : 0,
        ),
        ...(round.waitingFor.length ? { waitingFor: round.waitingFor.join('; ') } : {}),
      },
      now,
    );
    this.announce(nv, status);
    this.record(req.name, status);
    const keepGoing = round.active || round.planned > 0;
    return saveStatus(
      this.client,
      NV,
      nv,
      status,
      keepGoing ? requeueAfter(this.nextWake(round.state)) : done(),
    );
  }

  /**
   * A rollout's startTime, written before its first round acts. Written only with the
   * round's status, an operator stopped in that round (inside a slow createNode, say) left
   * none: the next one stamped a later start, counted the nodes already made as up to date
   * rather than its own new nodes, and made a replacement for every outdated node besides
   * (a surplus node each, the rollout done with them).
   */
  private async recordStart(
    nv: NodeVersionObject,
    round: RolloutRound,
    now: Date,
  ): Promise<NodeVersionObject> {
    const startTime = rolloutStarting(nv.status, round.active, now);
    if (!startTime || round.planned === 0) return nv;
    return this.client.patch<NodeVersionObject>(
      NV,
      nv.metadata.name ?? '',
      undefined,
      { status: { startTime, finishTime: null } },
      { type: 'merge', subresource: 'status' },
    );
  }

  /** Deleted mid-rollout: give the autoscaler back. What we created is owned by the
   * NodeVersion and goes with it (garbage collection; our drains end, nodes uncordon). */
  private async finalize(nv: NodeVersionObject): Promise<Result> {
    await restoreAutoscalers(this.client, this.cache, this.events, nv);
    await patchFinalizer(this.client, NV, nv, Upgrade.finalizer, 'remove');
    this.expectations.delete(nv.metadata.name ?? '');
    this.toldRefusals.delete(nv.metadata.name ?? '');
    return done();
  }

  /** What the round is planned from: the cache, with new nodes annotated and the cloud's instances. */
  private async observe(nv: NodeVersionObject, now: number, ctx: ReconcileContext): Promise<RoundReading> {
    const name = nv.metadata.name ?? '';
    const cache = this.cache;
    const groups = cache.byIndex<ScalingGroup & K8sObject>(SG, BY_NODE_VERSION, name);
    const annotated = await this.annotator.annotate(cache.list<Node>(Nodes), ctx.log);
    const refusals = untoldRefusals(annotated.refusals, this.toldRefusals.get(name) ?? new Set());
    this.toldRefusals.set(name, refusals.told);
    const expect = this.expectationsOf(name);
    const pending = expect.pending.view(
      cache.byIndex<PendingNode & K8sObject>(PN, BY_NODE_VERSION, name),
      nameOf,
      now,
    );
    // A maintenance on its way out (finalizer) is over for us: its Failed phase was handled.
    const maintenances = expect.drains
      .view(cache.byIndex<NodeMaintenance & K8sObject>(NM, BY_NODE_VERSION, name), nameOf, now)
      .filter((m) => !m.metadata.deletionTimestamp);
    const listed = await this.readCloud(groups, ctx);
    const snapshot: RoundSnapshot = {
      nodeVersion: nv,
      groups,
      nodes: annotated.nodes,
      pending,
      maintenances,
      ...(listed ?? {}),
      // WHY: without the cloud's list an unrecorded launch is invisible; creating now could double it.
      mayCreate: listed !== undefined,
      autoscalerRunning: autoscalerRunning(cache),
      refused: annotated.refused,
      now,
    };
    return { snapshot, annotateProblems: [...annotated.problems, ...refusals.problems], expect };
  }

  /** Carries the round out: the autoscaler first, then the actions in order. */
  private async apply(
    nv: NodeVersionObject,
    { snapshot, expect }: RoundReading,
    round: RolloutRound,
    now: Date,
    ctx: ReconcileContext,
  ): Promise<ApplyResult> {
    // A surge beyond what the groups hold is clamped in observe; said once per spec change, not per round.
    const clamp = round.state.strategy.surgeClamp;
    if (clamp && nv.metadata.generation !== nv.status?.observedGeneration)
      this.events.warning(nv, 'SurgeClamped', 'Clamp', clampMessage(clamp, boundsOf(snapshot.groups)));
    if (round.autoscalers === 'pause') await pauseAutoscalers(this.client, this.cache, this.events, nv);
    else await restoreAutoscalers(this.client, this.cache, this.events, nv);
    const nodeByName = new Map(snapshot.nodes.map((n) => [n.metadata.name, n]));
    const drainByNode = new Map(snapshot.maintenances.map((m) => [m.spec.nodeName, m]));
    const applier = new RolloutApplier(
      {
        client: this.client,
        cloud: this.cloud,
        events: this.events,
        maintenance: (node) => drainByNode.get(node),
        node: (name) => nodeByName.get(name),
        wrote: (kind, op, name, obj) => {
          const e = kind === 'pending' ? expect.pending : expect.drains;
          if (op === 'created') e.created(name, obj as never, Date.now());
          else e.deleted(name, Date.now());
        },
      },
      nv,
      now,
      ctx.log,
    );
    await applier.applyAll(round.actions);
    if (round.planned)
      ctx.log.info({ actions: round.planned, nodeVersion: nv.metadata.name }, 'rollout round');
    return applier.result;
  }

  /**
   * The groups' instances and the launches asked for and not listed yet, or undefined when
   * the cloud could not say for one of them (no creates this round).
   */
  private async readCloud(
    groups: readonly ScalingGroup[],
    ctx: ReconcileContext,
  ): Promise<Pick<RoundSnapshot, 'instances' | 'requestedLaunches'> | undefined> {
    const instances = new Map<string, CloudInstance[]>();
    const requestedLaunches = new Map<string, number[]>();
    try {
      for (const { spec } of groups) {
        const listed = await this.cloud.listGroup(spec.groupId);
        instances.set(spec.groupId, listed.instances);
        if (listed.requestedLaunches.length) requestedLaunches.set(spec.groupId, listed.requestedLaunches);
      }
      return { instances, requestedLaunches };
    } catch (err) {
      ctx.log.warn(
        { err: (err as Error).message },
        'cannot list the cloud instances; creating no nodes this round',
      );
      return undefined;
    }
  }

  /** The next deadline or backoff still ahead, within the resync period; past ones are handled already. */
  private nextWake(state: ObservedState): number {
    const now = state.now;
    let wake = ACTIVE_RESYNC_MS;
    const consider = (at: number | undefined) => {
      if (at !== undefined && at > now) wake = Math.min(wake, at - now + 100);
    };
    for (const p of state.pending) if (p.goal === 'Join') consider(p.deadline);
    for (const n of state.nodes) consider(n.drainRetryAt);
    return Math.max(250, wake);
  }

  private expectationsOf(name: string): RoundExpectations {
    let e = this.expectations.get(name);
    if (!e) {
      e = {
        pending: new Expectations<PendingNode & K8sObject>(),
        drains: new Expectations<NodeMaintenance & K8sObject>(),
      };
      this.expectations.set(name, e);
    }
    return e;
  }

  /** Events for a rollout starting, a drain becoming blocked, and the rollout finishing. */
  private announce(nv: NodeVersionObject, status: NodeVersionStatusType): void {
    const prev = nv.status;
    const blocked = status.conditions?.find((c) => c.type === 'DrainBlocked');
    const was = prev?.conditions?.find((c) => c.type === 'DrainBlocked');
    // Once per new set of blocked pods, not once per round.
    if (blocked?.status === 'True' && (was?.status !== 'True' || was.message !== blocked.message)) {
      this.events.warning(nv, 'DrainBlocked', 'Drain', blocked.message);
    }
    if (status.startTime && status.startTime !== prev?.startTime) {
      this.events.normal(
        nv,
        'RolloutStarted',
        'Rollout',
        `rolling out ${nv.spec.image}: ${status.counts?.outdated ?? 0} nodes to replace`,
      );
    }
    if (status.finishTime && !prev?.finishTime && status.startTime) {
      const secs = (Date.parse(status.finishTime) - Date.parse(status.startTime)) / 1000;
      this.events.normal(
        nv,
        'RolloutComplete',
        'Rollout',
        `all nodes run ${nv.spec.image}; ${status.replaced ?? 0} replaced in ${secs.toFixed(0)}s`,
      );
    }
  }

  private record(name: string, status: NodeVersionStatusType): void {
    // Groups that left this NodeVersion drop out of the gauge.
    for (const group of this.recordedGroups.get(name) ?? []) {
      if (!status.groups?.some((g) => g.groupId === group)) {
        for (const state of ['upToDate', 'outdated', 'replacing', 'draining']) {
          upgradeNodes.remove({ node_version: name, group, state });
        }
      }
    }
    this.recordedGroups.set(
      name,
      (status.groups ?? []).map((g) => g.groupId),
    );
    for (const g of status.groups ?? []) {
      for (const state of ['upToDate', 'outdated', 'replacing', 'draining'] as const) {
        upgradeNodes.set({ node_version: name, group: g.groupId, state }, g[state]);
      }
    }
    const total = status.counts?.total ?? 0;
    rolloutProgress.set({ node_version: name }, total ? (status.counts?.upToDate ?? 0) / total : 1);
  }
}
