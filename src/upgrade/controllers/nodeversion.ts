// NodeVersionReconciler: one round of a rolling upgrade per reconcile. It
// annotates new nodes with their group and image (asked of the cloud once),
// pauses the cluster autoscaler while the rollout runs, asks the pure planner
// what to do, carries that out, and writes status. It never waits inside a
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
import type { Action } from '../rollout/actions.ts';
import { drainBlocks } from '../rollout/blocked.ts';
import { clampMessage } from '../rollout/budgets.ts';
import type { RolloutProblem } from '../rollout/causes.ts';
import { classifyNodes } from '../rollout/classify.ts';
import { boundsOf, type NodeObject, observe } from '../rollout/observe.ts';
import { planRollout } from '../rollout/planner.ts';
import { nextStatus, rolloutActive } from '../rollout/status.ts';
import { NodeAnnotator } from './annotate.ts';
import { RolloutApplier } from './apply.ts';
import { pauseAutoscalers, restoreAutoscalers } from './autoscaler-pause.ts';
import { Expectations } from './expectations.ts';
import { providerIDChanged } from './pendingnode.ts';

const NV = NodeVersions.type;
const SG = ScalingGroups.type;
const PN = PendingNodes.type;
const NM = NodeMaintenances.type;
const AS = AutoscalingStrategies.type;
const BY_NODE_VERSION = 'nodeVersion';
const A = Upgrade.annotations;

/** While a rollout runs, look again at least this often (deadlines, backoffs, missed events). */
const ACTIVE_RESYNC_MS = 10_000;

export interface NodeVersionOptions {
  cloud: CloudProvider;
}

type NodeVersionObject = NodeVersion & K8sObject;
type Node = NodeObject;

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

/**
 * Replacements finished since `since`: heirs made since then whose donor is gone. Counted
 * from the nodes each round, so a lost status write or a restart loses nothing.
 */
function countReplaced(nodes: readonly Node[], state: ReturnType<typeof observe>, since: number): number {
  const ours = new Set(state.nodes.map((n) => n.name));
  return nodes.filter((n) => {
    const ann = n.metadata.annotations ?? {};
    const created = Date.parse(n.metadata.creationTimestamp ?? '');
    return ours.has(n.metadata.name ?? '') && ann[A.replaces] && !ann[A.donor] && created >= since;
  }).length;
}

/** Our maintenances of nodes that are gone (the operator stopped between the two deletes). */
function strayDrains(maintenances: readonly NodeMaintenance[], nodes: readonly Node[]): Action[] {
  const names = new Set(nodes.map((n) => n.metadata.name));
  return maintenances
    .filter((m) => !names.has(m.spec.nodeName))
    .map(
      (m) =>
        ({
          type: 'cancelDrain',
          cause: 'nodeGone',
          node: m.spec.nodeName,
          reason: 'its node is gone',
        }) as const,
    );
}

/** Donors waiting out a drain backoff keep the rollout Degraded until they drain. */
function backoffProblems(
  state: ReturnType<typeof observe>,
  c: ReturnType<typeof classifyNodes>,
  nodes: ReadonlyMap<string | undefined, Node>,
): RolloutProblem[] {
  const observed = new Map(state.nodes.map((n) => [n.name, n]));
  const out: RolloutProblem[] = [];
  for (const name of [...c.donors, ...c.obsolete]) {
    const retryAt = observed.get(name)?.drainRetryAt;
    if (retryAt === undefined || retryAt <= state.now) continue;
    const why = nodes.get(name)?.metadata.annotations?.[A.drainLastError];
    out.push({
      cause: 'drainBackoff',
      message: `drain of node ${name} failed${why ? `: ${why}` : ''}; retrying at ${new Date(retryAt).toISOString()}`,
    });
  }
  return out;
}

export class NodeVersionReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly cloud: CloudProvider;
  private readonly events: EventRecorder;
  private readonly annotator: NodeAnnotator;
  private readonly recordedGroups = new Map<string, string[]>();
  private readonly expectations = new Map<
    string,
    { pending: Expectations<PendingNode & K8sObject>; drains: Expectations<NodeMaintenance & K8sObject> }
  >();

  constructor(ctx: ReconcilerDeps, opts: NodeVersionOptions) {
    this.client = ctx.client;
    this.cache = ctx.cache;
    this.cloud = opts.cloud;
    this.events = ctx.events;
    this.annotator = new NodeAnnotator(ctx.client, opts.cloud);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const cache = this.cache;
    const nv = cache.get<NodeVersionObject>(NV, req.name);
    if (!nv) return done();
    if (nv.metadata.deletionTimestamp) {
      // Deleted mid-rollout: give the autoscaler back. What we created is owned by the
      // NodeVersion and goes with it (garbage collection; our drains end, nodes uncordon).
      await restoreAutoscalers(this.client, this.cache, this.events, nv);
      await patchFinalizer(this.client, NV, nv, Upgrade.finalizer, 'remove');
      this.expectations.delete(req.name);
      return done();
    }
    if (await patchFinalizer(this.client, NV, nv, Upgrade.finalizer, 'add')) return done(); // the change requeues us
    const now = new Date();
    const groups = cache.byIndex<ScalingGroup & K8sObject>(SG, BY_NODE_VERSION, req.name);
    const annotated = await this.annotator.annotate(cache.list<Node>(Nodes), ctx.log);
    const expect = this.expectationsOf(req.name);
    const t = now.getTime();
    const pending = expect.pending.view(
      cache.byIndex<PendingNode & K8sObject>(PN, BY_NODE_VERSION, req.name),
      (o) => o.metadata.name ?? '',
      t,
    );
    // A maintenance on its way out (finalizer) is over for us: its Failed phase was handled.
    const maintenances = expect.drains
      .view(
        cache.byIndex<NodeMaintenance & K8sObject>(NM, BY_NODE_VERSION, req.name),
        (o) => o.metadata.name ?? '',
        t,
      )
      .filter((m) => !m.metadata.deletionTimestamp);

    const instances = await this.listInstances(groups, ctx);
    const state = observe({
      nodeVersion: nv,
      groups,
      nodes: annotated.nodes,
      pending,
      maintenances,
      ...(instances ? { instances } : {}),
      // WHY: without the cloud's list an unrecorded launch is invisible; creating now could double it.
      mayCreate: instances !== undefined,
      refused: annotated.refused,
      now: t,
    });
    // A surge beyond what the groups hold is clamped in observe; said once per spec change, not per round.
    const clamp = state.strategy.surgeClamp;
    if (clamp && nv.metadata.generation !== nv.status?.observedGeneration)
      this.events.warning(nv, 'SurgeClamped', 'Clamp', clampMessage(clamp, boundsOf(groups)));
    const c = classifyNodes(state);
    const active = rolloutActive(c, state);
    const waiting: string[] = [];
    if (active && !instances) waiting.push("waiting for the cloud to list the groups' instances");
    if (active) {
      if (!(await pauseAutoscalers(this.client, this.cache, this.events, nv))) {
        state.mayCreate = false;
        waiting.push('waiting for the cluster autoscaler to stop');
      }
    } else {
      await restoreAutoscalers(this.client, this.cache, this.events, nv);
    }
    for (const g of groups) {
      const image = g.status?.imageReference;
      if (active && image?.toLowerCase() !== nv.spec.image.toLowerCase()) {
        waiting.push(`waiting for group ${g.spec.groupId} to launch ${nv.spec.image}`);
      }
    }

    const actions = planRollout(state);
    const nodeByName = new Map(annotated.nodes.map((n) => [n.metadata.name, n]));
    const drainByNode = new Map(maintenances.map((m) => [m.spec.nodeName, m]));
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
    await applier.applyAll([...actions, ...strayDrains(maintenances, annotated.nodes)]);
    if (actions.length) ctx.log.info({ actions: actions.length, nodeVersion: req.name }, 'rollout round');

    const startedAt = nv.status?.startTime && !nv.status.finishTime ? Date.parse(nv.status.startTime) : t;
    // A Join the PendingNode controller gave up on is a Leave that still carries its target image.
    const abandoned = pending
      .filter((p) => p.spec.goal === 'Leave' && p.metadata.annotations?.[A.targetImage])
      .map(
        (p): RolloutProblem => ({
          cause: 'joinAbandoned',
          message: `node ${p.spec.nodeName} never joined before its deadline; its instance is deleted and replaced`,
        }),
      );
    const problems: RolloutProblem[] = [
      ...annotated.problems,
      ...applier.result.problems,
      ...backoffProblems(state, c, nodeByName),
      ...abandoned,
    ];
    const status = nextStatus(
      nv,
      c,
      state,
      {
        problems,
        replaced: countReplaced(annotated.nodes, state, startedAt),
        blocked: drainBlocks(maintenances),
        ...(waiting.length ? { waitingFor: waiting.join('; ') } : {}),
      },
      now,
    );
    this.announce(nv, status);
    this.record(req.name, status);
    const result = active || actions.length ? requeueAfter(this.nextWake(state, t)) : done();
    return this.save(nv, status, result);
  }

  /** The groups' instances, or undefined when the cloud could not list one of them (no creates this round). */
  private async listInstances(
    groups: readonly ScalingGroup[],
    ctx: ReconcileContext,
  ): Promise<Map<string, CloudInstance[]> | undefined> {
    const out = new Map<string, CloudInstance[]>();
    try {
      for (const g of groups) out.set(g.spec.groupId, await this.cloud.listInstances(g.spec.groupId));
      return out;
    } catch (err) {
      ctx.log.warn(
        { err: (err as Error).message },
        'cannot list the cloud instances; creating no nodes this round',
      );
      return undefined;
    }
  }

  /** The next deadline or backoff still ahead, within the resync period; past ones are handled already. */
  private nextWake(state: ReturnType<typeof observe>, now: number): number {
    let wake = ACTIVE_RESYNC_MS;
    const consider = (at: number | undefined) => {
      if (at !== undefined && at > now) wake = Math.min(wake, at - now + 100);
    };
    for (const p of state.pending) if (p.goal === 'Join') consider(p.deadline);
    for (const n of state.nodes) consider(n.drainRetryAt);
    return Math.max(250, wake);
  }

  private expectationsOf(name: string) {
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

  /** Writes status only when it changed, so a steady cluster costs no writes. */
  private async save(nv: NodeVersionObject, status: NodeVersionStatusType, result: Result): Promise<Result> {
    return saveStatus(this.client, NV, nv, status, result);
  }
}
