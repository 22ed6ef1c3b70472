// Carries out the planner's actions against the API server and the cloud.
// Each action is one or two idempotent writes, ordered so that a restart
// between any two of them leaves a state the next round repairs: the cloud
// instance goes before its Node object (no instance is leaked), a pairing is
// annotated on the donor first (a half-made pair is dissolved, never acted on).

import type { KubernetesObject } from '@kubernetes/client-node';
import { Maintenance, type NodeMaintenance, NodeMaintenances } from '../../api/maintenance.ts';
import { type NodeVersion, type PendingNode, PendingNodes } from '../../api/upgrade.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { ApiError, isNotFound } from '../../runtime/errors.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { liveness } from '../../runtime/live.ts';
import { ownerReference } from '../../runtime/owners.ts';
import type { ReconcileContext } from '../../runtime/reconcile.ts';
import { apiVersionOf, type K8sObject, Nodes } from '../../runtime/resources.ts';
import { problemKind, replacementDuration, upgradeActions, upgradeProblems } from '../metrics.ts';
import { Upgrade } from '../names.ts';
import type { CloudProvider } from '../providers/interface.ts';
import { type Action, actionKey } from '../rollout/actions.ts';
import { type DrainBlock, refusedDrain } from '../rollout/blocked.ts';
import type { ActionCauses, RolloutProblem } from '../rollout/causes.ts';
import { type NodeObject, nodeReadyTimeoutMs, strategyOf } from '../rollout/observe.ts';

const A = Upgrade.annotations;
const NM = NodeMaintenances.type;
const PN = PendingNodes.type;
/** How long a deleted instance has to reach Terminated before its PendingNode complains. */
const LEAVE_DEADLINE_MS = 5 * 60_000;
const DRAIN_RETRY_BASE_MS = 30_000;
const DRAIN_RETRY_MAX_MS = 10 * 60_000;

/** The name of the NodeMaintenance that drains `node` for a rollout. */
export function maintenanceName(node: string): string {
  return `upgrade-${node}`.slice(0, 253);
}

/** Backoff before draining a node again after its n-th failed drain. */
export function drainRetryDelayMs(failures: number): number {
  return Math.min(DRAIN_RETRY_MAX_MS, DRAIN_RETRY_BASE_MS * 2 ** Math.max(0, failures - 1));
}

export interface ApplyResult {
  problems: RolloutProblem[];
  replaced: number;
  /** Drains whose NodeMaintenance an admission webhook refused: they wait, they did not fail. */
  refused: DrainBlock[];
  /** The round stopped early: the API server showed its plan was made from a cache that was behind. */
  cacheBehind: boolean;
}

/** An admission webhook's "no" (the API server's message names it), as opposed to any other failure. */
export function isAdmissionDenial(err: unknown): err is ApiError {
  return err instanceof ApiError && /admission webhook .* denied the request/.test(err.message);
}

export interface ApplyDeps {
  client: KubeClient;
  cloud: CloudProvider;
  events: EventRecorder;
  /** Our NodeMaintenances, by node name (to read a failed drain's error). */
  maintenance(node: string): NodeMaintenance | undefined;
  node(name: string): NodeObject | undefined;
  /** Told of each PendingNode and NodeMaintenance we create or delete (see expectations.ts). */
  wrote?: (kind: 'pending' | 'drain', op: 'created' | 'deleted', name: string, obj?: K8sObject) => void;
}

export class RolloutApplier {
  private readonly d: ApplyDeps;
  private readonly nv: NodeVersion & K8sObject;
  private readonly now: Date;
  private readonly log: ReconcileContext['log'];
  readonly result: ApplyResult = { problems: [], replaced: 0, refused: [], cacheBehind: false };
  /** stillOutdated's answer per group, this round. */
  private readonly outdatedConfirmed = new Map<string, Promise<boolean>>();
  /** The annotations this round wrote, by node (null: removed): the API server holds them, the cache not yet. */
  private readonly annotated = new Map<string, Record<string, string | null>>();

  constructor(deps: ApplyDeps, nv: NodeVersion & K8sObject, now: Date, log: ReconcileContext['log']) {
    this.d = deps;
    this.nv = nv;
    this.now = now;
    this.log = log;
  }

  /**
   * Applies every action in order; one that fails is reported and the rest still run,
   * except those that require it (they wait for the next round's plan). A round whose
   * plan proves to come from a cache that was behind stops there (stillSurplus, stillUnjoined,
   * stillOutdated).
   */
  async applyAll(actions: readonly Action[]): Promise<void> {
    const failed = new Set<string>();
    for (const action of actions) {
      if (this.result.cacheBehind) {
        this.log.info(
          { action },
          'rollout action skipped: the round was planned from a cache that was behind',
        );
        continue;
      }
      if (action.requires && failed.has(action.requires)) {
        this.log.debug({ action }, 'rollout action skipped: what it requires failed');
        continue;
      }
      try {
        await this.apply(action);
        upgradeActions.inc({ node_version: this.nv.metadata.name, action: action.type });
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        const key = actionKey(action);
        if (key) failed.add(key);
        if (action.type === 'drain' && isAdmissionDenial(err)) {
          this.result.refused.push(refusedDrain(action.node, message));
          this.log.info({ action, err: message }, 'drain refused by admission; it waits');
          continue;
        }
        this.problem({
          cause: 'actionFailed',
          action: action.type,
          message: `${action.type} failed: ${message}`,
        });
        this.log.warn({ action, err: message }, 'rollout action failed');
      }
    }
  }

  /** Reports a problem in status and counts it in the metric its cause belongs to. */
  private problem(p: RolloutProblem): void {
    this.result.problems.push(p);
    const kind = problemKind(p);
    if (kind) upgradeProblems.inc({ node_version: this.nv.metadata.name, kind });
  }

  private async apply(a: Action): Promise<void> {
    this.log.debug({ action: a }, 'rollout action');
    switch (a.type) {
      case 'createNode':
        if (!(await this.stillOutdated(a.group, a.outdated))) {
          this.result.cacheBehind = true;
          return;
        }
        return this.createNode(a.group);
      case 'adoptInstance':
        await this.recordJoin(a.group, a.nodeName, a.providerID, a.createdAt);
        this.d.events.normal(
          this.nv,
          'AdoptedNode',
          'Replace',
          `instance ${a.nodeName} of group ${a.group} was launched but never recorded; now awaited as a new node`,
        );
        return;
      case 'pair':
        return this.pair(a.donor, a.heir, a.labels);
      case 'clearPairing':
        return this.annotate(a.node, {
          [A.donor]: null,
          [A.heir]: null,
          [A.pairedAt]: null,
          [A.drainFailures]: null,
          [A.drainRetryAt]: null,
          [A.drainLastError]: null,
        });
      case 'drain':
        return this.drain(a.node, a.reason);
      case 'drainFailed':
        return this.drainFailed(a.node);
      case 'cancelDrain':
        return this.deleteDrain(a.node);
      case 'deleteNode':
        if (a.cause === 'neverJoined' && a.node && !(await this.stillUnjoined(a.node))) {
          this.result.cacheBehind = true;
          return;
        }
        return this.deleteNode(a.node, a.providerID, a.cause, a.reason);
      case 'deletePending':
        await this.d.client.delete(PN, a.name, undefined, { ignoreNotFound: true });
        this.d.wrote?.('pending', 'deleted', a.name);
        return;
      case 'markObsolete':
        if (!(await this.stillSurplus(a.node, a.donor))) {
          // WHY: the same stale view planned the rest of the round: an heir given up frees its
          // donor, whose drain the round then cancels and for which it launches a new instance.
          this.result.cacheBehind = true;
          return;
        }
        this.d.events.normal(this.nv, 'NodeObsolete', 'Replace', `node ${a.node} is surplus: ${a.reason}`);
        return this.annotate(a.node, { [A.obsolete]: 'true' });
    }
  }

  /**
   * Whether a node the plan marks surplus is, read live, as the plan saw it (and, for an heir
   * given up, its donor still there). WHY: the plan comes from the cache, and a replica that just
   * took the lease may hold one its watches stopped feeding (a partition). The soak saw new leaders
   * give up an heir that had joined, replaced its donor and turned Ready, and take heirs already
   * released from their donors for mints without one; each was drained and deleted, and the group
   * stayed short (seed 20261124). A surplus mark is never taken back; a round skipped costs little.
   */
  private async stillSurplus(node: string, donor: string | undefined): Promise<boolean> {
    const cached = this.d.node(node);
    const live = cached ? await liveness(this.d.client, Nodes, cached) : 'gone';
    const donorGone =
      donor !== undefined &&
      (await this.d.client.get(Nodes, donor).then(
        () => false,
        (err: unknown) => (isNotFound(err) ? true : Promise.reject(err)),
      ));
    if (live === 'current' && !donorGone) return true;
    this.log.info({ node, donor, live, donorGone }, 'not marked surplus: the cache was behind');
    return false;
  }

  /**
   * Whether the API server holds the node of a Join past its deadline as the plan saw it: absent,
   * or as cached (registered, not yet annotated). WHY: a replica that had just taken the lease, its
   * connections being reset, planned from a cache in which a node that had registered and turned
   * Ready 45 s before had not joined; it deleted the instance as never joined and launched another
   * (seed 20261124, busy cores: 6 instances for a group of 5). A deleted instance is not taken back.
   */
  private async stillUnjoined(node: string): Promise<boolean> {
    const cached = this.d.node(node);
    const live = cached
      ? await liveness(this.d.client, Nodes, cached)
      : await this.d.client.get(Nodes, node).then(
          () => 'registered' as const,
          (err: unknown) => (isNotFound(err) ? ('current' as const) : Promise.reject(err)),
        );
    if (live === 'current') return true;
    this.log.info({ node, live }, 'not deleted as never joined: the cache was behind');
    return false;
  }

  /**
   * Whether the API server holds each outdated node a launch was counted from as the plan saw it:
   * the same object (uid), still unpaired and outdated. Asked once per group and round. WHY: a
   * replica that took the lease after a partition launched two instances into a group 0.3 s after
   * taking over, counted from two outdated nodes its cache still held 20 s after they had been
   * replaced and deleted (seed 20261124, busy cores): 7 launched for 5, one left as a sixth node.
   * A launch is not taken back; a round skipped costs little.
   */
  private async stillOutdated(group: string, outdated: readonly string[]): Promise<boolean> {
    let answer = this.outdatedConfirmed.get(group);
    if (!answer) {
      answer = this.liveNodes(outdated).then((live) => {
        const behind = outdated.filter((name) => !this.asPlanned(name, live.get(name)));
        if (behind.length) this.log.info({ group, behind }, 'no launch: the cache was behind');
        return behind.length === 0;
      });
      this.outdatedConfirmed.set(group, answer);
    }
    return answer;
  }

  /**
   * The named nodes as the API server holds them (absent: gone): a GET for one, one LIST for
   * several, where a GET each made a launching round cost a request per outdated node it counted.
   */
  private async liveNodes(names: readonly string[]): Promise<Map<string, NodeObject>> {
    const [only] = names;
    if (names.length === 1 && only !== undefined) {
      const node = await this.d.client.get<NodeObject>(Nodes, only).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      return new Map(node ? [[only, node]] : []);
    }
    const wanted = new Set(names);
    const all = names.length ? (await this.d.client.listAll<NodeObject>(Nodes)).items : [];
    return new Map(
      all.filter((n) => wanted.has(n.metadata.name ?? '')).map((n) => [n.metadata.name ?? '', n]),
    );
  }

  /**
   * Whether the API server holds the node as cached, by what makes a node outdated and free,
   * after this round's own writes (a donor the round paired with a mint was counted as outdated).
   */
  private asPlanned(name: string, live: NodeObject | undefined): boolean {
    const cached = this.d.node(name);
    if (!cached || !live || live.metadata.uid !== cached.metadata.uid) return false;
    const keys = [A.scalingGroup, A.image, A.donor, A.heir, A.obsolete];
    const wrote = this.annotated.get(name) ?? {};
    const was: Record<string, string | null | undefined> = { ...cached.metadata.annotations, ...wrote };
    const is = live.metadata.annotations ?? {};
    return keys.every((k) => (was[k] ?? undefined) === is[k]);
  }

  private async createNode(groupId: string): Promise<void> {
    const { nodeName, providerID } = await this.d.cloud.createNode(groupId);
    await this.recordJoin(groupId, nodeName, providerID, this.now.getTime());
    this.d.events.normal(this.nv, 'CreatingNode', 'Replace', `creating node ${nodeName} in group ${groupId}`);
  }

  /** The Join PendingNode of an instance launched at `launchedAt` (epoch ms): its deadline runs from then. */
  private async recordJoin(groupId: string, nodeName: string, providerID: string, launchedAt: number) {
    const deadline = new Date(launchedAt + nodeReadyTimeoutMs(this.nv));
    const pn = {
      apiVersion: apiVersionOf(PN),
      kind: PN.kind,
      metadata: {
        name: nodeName,
        labels: { [Upgrade.labels.nodeVersion]: this.nv.metadata.name! },
        ownerReferences: this.owners(),
        annotations: { [A.targetImage]: this.nv.spec.image },
      },
      spec: { providerID, groupID: groupId, nodeName, goal: 'Join', deadline: deadline.toISOString() },
    } as PendingNode & K8sObject;
    await this.d.client.createIfAbsent(PN, pn);
    this.d.wrote?.('pending', 'created', nodeName, pn);
  }

  private async pair(donor: string, heir: string, inherited: Record<string, string>): Promise<void> {
    // Labels the heir already has describe the heir (its image, group, zone): they win over the donor's.
    const own = this.d.node(heir)?.metadata.labels ?? {};
    const labels = Object.fromEntries(Object.entries(inherited).filter(([k]) => !(k in own)));
    await this.annotate(donor, { [A.heir]: heir, [A.pairedAt]: this.now.toISOString() });
    const annotations = { [A.donor]: donor, [A.replaces]: donor };
    await this.d.client.patch(
      Nodes,
      heir,
      undefined,
      { metadata: { labels, annotations } },
      { type: 'merge' },
    );
    this.wroteAnnotations(heir, annotations);
    this.d.events.normal(this.nv, 'PairedNodes', 'Replace', `node ${heir} takes over from ${donor}`);
  }

  private async drain(node: string, reason: string): Promise<void> {
    const s = strategyOf(this.nv);
    // A donor leaves once drained: the quorum guard counts the control plane without it.
    const heir = this.d.node(node)?.metadata.annotations?.[A.heir];
    const nm = {
      apiVersion: apiVersionOf(NM),
      kind: NM.kind,
      metadata: {
        name: maintenanceName(node),
        labels: { [Upgrade.labels.nodeVersion]: this.nv.metadata.name! },
        ...(heir ? { annotations: { [Maintenance.replacedByAnnotation]: heir } } : {}),
        ownerReferences: this.owners(),
      },
      spec: {
        nodeName: node,
        reason: `rolling upgrade to ${this.nv.spec.image} (NodeVersion ${this.nv.metadata.name}): ${reason}`,
        timeout: s.drainTimeout,
      },
    } as NodeMaintenance & K8sObject;
    await this.d.client.createIfAbsent(NM, nm);
    this.d.wrote?.('drain', 'created', maintenanceName(node), nm);
    this.d.events.normal(this.nv, 'DrainingNode', 'Drain', `draining node ${node}: ${reason}`);
  }

  /** Records the failure on the node, removes the maintenance (uncordons) and sets the retry time. */
  private async drainFailed(node: string): Promise<void> {
    const n = this.d.node(node);
    const failures = Number(n?.metadata.annotations?.[A.drainFailures] ?? '0') + 1;
    const retryAt = new Date(this.now.getTime() + drainRetryDelayMs(failures));
    const why = this.d.maintenance(node)?.status?.lastError ?? 'the NodeMaintenance failed';
    await this.annotate(node, {
      [A.drainFailures]: String(failures),
      [A.drainRetryAt]: retryAt.toISOString(),
      [A.drainLastError]: why.slice(0, 1024),
    });
    await this.deleteDrain(node);
    const message = `drain of node ${node} failed (${failures} time${failures > 1 ? 's' : ''}): ${why}; retrying at ${retryAt.toISOString()}`;
    this.d.events.warning(this.nv, 'DrainFailed', 'Drain', message);
    this.problem({ cause: 'drainFailed', message });
  }

  private async deleteNode(
    node: string | undefined,
    providerID: string,
    cause: ActionCauses['deleteNode'],
    reason: string,
  ): Promise<void> {
    // Instance first: a Node deleted before its instance could leave the instance running, unseen.
    await this.d.cloud.deleteNode(providerID);
    if (node) {
      await this.d.client.delete(Nodes, node, undefined, { ignoreNotFound: true });
      await this.deleteDrain(node);
    }
    const name = node ?? providerID.replace(/[^a-z0-9.-]/g, '-').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
    const leave = {
      apiVersion: apiVersionOf(PN),
      kind: PN.kind,
      metadata: {
        name: `leave-${name}`.slice(0, 253),
        labels: { [Upgrade.labels.nodeVersion]: this.nv.metadata.name! },
        ownerReferences: this.owners(),
      },
      spec: {
        providerID,
        groupID: this.d.node(node ?? '')?.metadata.annotations?.[A.scalingGroup] ?? 'unknown',
        nodeName: name,
        goal: 'Leave',
        deadline: new Date(this.now.getTime() + LEAVE_DEADLINE_MS).toISOString(),
      },
    } as PendingNode & K8sObject;
    await this.d.client.createIfAbsent(PN, leave);

    switch (cause) {
      case 'neverJoined': {
        const message = `node ${node ?? providerID} never joined; its instance was deleted and will be replaced`;
        this.d.events.warning(this.nv, 'NodeNeverJoined', 'Replace', message);
        this.problem({ cause: 'neverJoined', message });
        return;
      }
      case 'replaced': {
        this.result.replaced++;
        const pairedAt = Date.parse(this.d.node(node ?? '')?.metadata.annotations?.[A.pairedAt] ?? '');
        if (Number.isFinite(pairedAt)) replacementDuration.observe((this.now.getTime() - pairedAt) / 1000);
        break;
      }
      case 'obsolete':
        break;
    }
    this.d.events.normal(this.nv, 'DeletedNode', 'Replace', `deleted node ${node}: ${reason}`);
  }

  private async deleteDrain(node: string): Promise<void> {
    await this.d.client.delete(NM, maintenanceName(node), undefined, { ignoreNotFound: true });
    this.d.wrote?.('drain', 'deleted', maintenanceName(node));
  }

  /** Owned by the NodeVersion: deleting it removes what it started (and uncordons its drains). */
  private owners() {
    return [
      ownerReference(this.nv as unknown as KubernetesObject, { controller: true, blockOwnerDeletion: true }),
    ];
  }

  private wroteAnnotations(node: string, annotations: Record<string, string | null>): void {
    this.annotated.set(node, { ...this.annotated.get(node), ...annotations });
  }

  private async annotate(node: string, annotations: Record<string, string | null>): Promise<void> {
    try {
      await this.d.client.patch(Nodes, node, undefined, { metadata: { annotations } }, { type: 'merge' });
      this.wroteAnnotations(node, annotations);
    } catch (err) {
      // Gone already: nothing left to mark (a clearPairing of a deleted heir, say).
      if (!isNotFound(err)) throw err;
    }
  }
}
