// Changing a group's size through Cluster API: one more Machine is the
// MachineDeployment's replicas + 1; removing one chosen Machine annotates it
// and lowers its MachineSet and its MachineDeployment by one (cluster-autoscaler
// lowers the MachineDeployment alone). Each change tests the count it read, and
// one group's changes in this process go one at a time.
import {
  type Machine,
  type MachineDeployment,
  MachineDeployments,
  type MachineSet,
  MachineSets,
  Machines,
} from '../../../api/clusterapi.ts';
import type { KubeClient } from '../../../runtime/client.ts';
import type { ObjectMeta, ResourceType } from '../../../runtime/resources.ts';
import { type CloudDeferral, CloudError } from '../interface.ts';
import type { ClusterApiObjects } from './objects.ts';
import {
  groupIdOf,
  parsePause,
  pauseValue,
  planScaleDown,
  recordScaleDown,
  SCALED_DOWN_ANNOTATION,
  scaledDownFor,
  templateSwapHold,
} from './planner.ts';

/** How soon a template swap held back (templateSwapHold) is tried again. */
const SWAP_RECHECK_MS = 1_000;

/** Cluster API's controllers skip an object carrying it. */
export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';

/** A JSON pointer to an annotation. */
const annotationPath = (key: string) =>
  `/metadata/annotations/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;

/**
 * The JSON patch setting an object's replicas if they are still what we read (a failed
 * test is 422: someone moved the count), recording the Machine it was lowered for and
 * lifting our own pause in the same write.
 */
export function replicaPatch(
  obj: { metadata: ObjectMeta; spec: { replicas?: number } },
  replicas: number,
  scaledDownRecord?: string,
): unknown[] {
  const ops: unknown[] = [
    { op: 'test', path: '/spec/replicas', value: obj.spec.replicas ?? 0 },
    { op: 'replace', path: '/spec/replicas', value: replicas },
  ];
  const annotations = obj.metadata.annotations;
  if (parsePause(annotations?.[PAUSED_ANNOTATION]))
    ops.push({ op: 'remove', path: annotationPath(PAUSED_ANNOTATION) });
  if (scaledDownRecord !== undefined)
    ops.push(
      annotations
        ? { op: 'add', path: annotationPath(SCALED_DOWN_ANNOTATION), value: scaledDownRecord }
        : { op: 'add', path: '/metadata/annotations', value: { [SCALED_DOWN_ANNOTATION]: scaledDownRecord } },
    );
  return ops;
}

export class GroupScaler {
  private readonly client: KubeClient;
  private readonly objects: ClusterApiObjects;
  /** The change of each group's counts under way (see serialize). */
  private readonly groupLocks = new Map<string, Promise<void>>();

  constructor(client: KubeClient, objects: ClusterApiObjects) {
    this.client = client;
    this.objects = objects;
  }

  /** One more Machine in the group. */
  scaleUp(groupId: string): Promise<void> {
    return this.serialize(groupId, async () => {
      const md = await this.finishInterrupted(await this.objects.deployment(groupId));
      await this.setReplicas(MachineDeployments, md, (md.spec.replicas ?? 0) + 1);
    });
  }

  /** The Machine removed and its group one smaller; returns once Cluster API is deleting it (or a while passed). */
  async scaleDown(m: Machine, groupId: string, waitMs: number): Promise<void> {
    await this.serialize(groupId, () => this.scaleDownFor(m, groupId));
    await this.untilDeleting(m, waitMs);
  }

  /**
   * Runs `swap` (the template swap) once the group's MachineSets are settled (see
   * templateSwapHold), in turn with this process's other changes of the group, so no
   * scale-up of ours lands between the check and the swap. Else a deferral: Cluster API
   * settles its sets within a second or two, so it is no error and no reason to back off.
   */
  switchTemplate(
    groupId: string,
    swap: (md: MachineDeployment) => Promise<void>,
  ): Promise<CloudDeferral | undefined> {
    return this.serialize(groupId, async () => {
      const md = await this.finishInterrupted(await this.objects.deployment(groupId));
      const hold = templateSwapHold(md, await this.objects.machineSetsOf(md));
      if (hold)
        return { reason: `${groupId} keeps its template for now: ${hold}`, retryAfterMs: SWAP_RECHECK_MS };
      await swap(md);
      return undefined;
    });
  }

  /** Finishes a removal of ours that stopped between its two writes (see finishInterrupted); the group after. */
  resume(groupId: string): Promise<MachineDeployment> {
    return this.serialize(groupId, async () =>
      this.finishInterrupted(await this.objects.deployment(groupId)),
    );
  }

  /**
   * Waits (a while) for Cluster API to start deleting the Machine, as a cloud's delete call
   * returns once the instance is terminating: the rollout counts it gone from then on, and
   * a Machine still alive then would let it create more than its surge.
   */
  private async untilDeleting(m: Machine, waitMs: number): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      const now = await this.objects.machineNow(m);
      if (!now || now.metadata.deletionTimestamp) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * Marks the Machine and lowers its group by one: its own MachineSet, then the
   * MachineDeployment, paused in between (Cluster API would otherwise answer the lowered
   * set by growing another one back before our second write lands).
   */
  private async scaleDownFor(m: Machine, groupId: string): Promise<void> {
    let md = await this.finishInterrupted(await this.objects.deployment(groupId));
    const name = m.metadata.name ?? '';
    if (scaledDownFor(md).has(name)) return;
    const existing = new Set((await this.objects.machinesOfGroup(md)).map((x) => x.metadata.name ?? ''));
    const sets = await this.objects.machineSetsOf(md);
    const plan = planScaleDown(md, sets, m);
    if (!plan) return;
    const ns = m.metadata.namespace;
    await this.client.patch(
      Machines,
      name,
      ns,
      { metadata: { annotations: plan.annotate } },
      { type: 'merge' },
    );
    const own = sets.find((x) => x.metadata.name === plan.machineSet?.name);
    if (own && plan.machineSet && !scaledDownFor(own).has(name)) {
      const pause = pauseValue({ machine: name, from: md.spec.replicas ?? 0, to: plan.replicas });
      md = await this.client.patch<MachineDeployment>(
        MachineDeployments,
        md.metadata.name ?? '',
        ns,
        { metadata: { annotations: { [PAUSED_ANNOTATION]: pause } } },
        { type: 'merge' },
      );
      await this.setReplicas(
        MachineSets,
        own,
        plan.machineSet.replicas,
        recordScaleDown(own, name, existing),
      );
    }
    await this.setReplicas(MachineDeployments, md, plan.replicas, recordScaleDown(md, name, existing));
  }

  /**
   * A MachineDeployment we paused between lowering a set and itself (the operator stopped
   * in between): the second write done now, as the pause says; only the pause lifted when
   * the set was not lowered after all (the removal is asked for again) or the replicas
   * moved meanwhile (someone else's write wins). Returns it as it is after.
   */
  private async finishInterrupted(md: MachineDeployment): Promise<MachineDeployment> {
    const intent = parsePause(md.metadata.annotations?.[PAUSED_ANNOTATION]);
    if (!intent) return md;
    const setLowered = (await this.objects.machineSetsOf(md)).some((x) =>
      scaledDownFor(x).has(intent.machine),
    );
    const pending = setLowered && (md.spec.replicas ?? 0) === intent.from;
    const existing = new Set((await this.objects.machinesOfGroup(md)).map((x) => x.metadata.name ?? ''));
    await this.setReplicas(
      MachineDeployments,
      md,
      pending ? intent.to : (md.spec.replicas ?? 0),
      pending ? recordScaleDown(md, intent.machine, existing) : undefined,
    );
    return this.objects.deployment(groupIdOf(md));
  }

  /** One change of a group's counts at a time in this process: each reads what the last one wrote. */
  private serialize<T>(groupId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.groupLocks.get(groupId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.groupLocks.set(groupId, settled);
    void settled.then(() => {
      if (this.groupLocks.get(groupId) === settled) this.groupLocks.delete(groupId);
    });
    return next;
  }

  /** Sets replicas if they are still what we read, so two callers never both move from the same count. */
  private async setReplicas(
    type: ResourceType,
    obj: MachineDeployment | MachineSet,
    replicas: number,
    scaledDownRecord?: string,
  ): Promise<void> {
    try {
      await this.client.patch(
        type,
        obj.metadata.name ?? '',
        obj.metadata.namespace,
        replicaPatch(obj, replicas, scaledDownRecord),
        { type: 'json' },
      );
    } catch (err) {
      // A failed test (the count moved since we read it): read again and retry.
      throw new CloudError(
        `clusterapi: set replicas of ${type.kind} ${groupIdOf(obj)} to ${replicas}: ${(err as Error).message}`,
        { retryable: true, cause: err },
      );
    }
  }
}
