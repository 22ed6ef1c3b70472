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
import { PlanCheck } from './plan-check.ts';

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
  /** The API server asked, before the actions never taken back, whether the plan's view holds. */
  private readonly live: PlanCheck;

  constructor(deps: ApplyDeps, nv: NodeVersion & K8sObject, now: Date, log: ReconcileContext['log']) {
    this.d = deps;
    this.nv = nv;
    this.now = now;
    this.log = log;
    this.live = new PlanCheck(deps.client, deps.node, log);
  }

  /**
   * Applies every action in order; one that fails is reported and the rest still run,
   * except those that require it (they wait for the next round's plan). A round whose
   * plan proves to come from a cache that was behind stops there (PlanCheck: stillSurplus, stillUnjoined,
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
        if (!(await this.live.stillOutdated(a.group, a.outdated))) {
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
        if (a.cause === 'neverJoined' && a.node && !(await this.live.stillUnjoined(a.node))) {
          this.result.cacheBehind = true;
          return;
        }
        return this.deleteNode(a.node, a.providerID, a.cause, a.reason);
      case 'deletePending':
        await this.d.client.delete(PN, a.name, undefined, { ignoreNotFound: true });
        this.d.wrote?.('pending', 'deleted', a.name);
        return;
      case 'markObsolete':
        if (!(await this.live.stillSurplus(a.node, a.donor))) {
          // WHY: the same stale view planned the rest of the round: an heir given up frees its
          // donor, whose drain the round then cancels and for which it launches a new instance.
          this.result.cacheBehind = true;
          return;
        }
        this.d.events.normal(this.nv, 'NodeObsolete', 'Replace', `node ${a.node} is surplus: ${a.reason}`);
        return this.annotate(a.node, { [A.obsolete]: 'true' });
    }
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
    this.live.wrote(heir, annotations);
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

  private async annotate(node: string, annotations: Record<string, string | null>): Promise<void> {
    try {
      await this.d.client.patch(Nodes, node, undefined, { metadata: { annotations } }, { type: 'merge' });
      this.live.wrote(node, annotations);
    } catch (err) {
      // Gone already: nothing left to mark (a clearPairing of a deleted heir, say).
      if (!isNotFound(err)) throw err;
    }
  }
}
