// Pure decisions of the clusterapi provider ("decide, then act"): which
// MachineDeployments are scaling groups, whether a group's rollout strategy
// lets us replace its machines, the immutable template a new image needs, a
// Machine's instance state, and how to remove one chosen Machine exactly.
import { createHash } from 'node:crypto';
import {
  CapiAnnotations,
  CapiLabels,
  type Machine,
  type MachineDeployment,
  type MachineSet,
} from '../../../api/clusterapi.ts';
import type { ObjectMeta } from '../../../runtime/resources.ts';
import type { InstanceState, ScalingGroupInfo } from '../interface.ts';
import { getPath, setPath } from './image-paths.ts';

/** On a template this provider made: the template it was cloned from (the first of the line). */
export const CLONED_FROM_LABEL = 'upgrade.nodewarden.dev/cloned-from';

/** A group's id: `<namespace>/<MachineDeployment name>`. */
export function groupIdOf(md: { metadata: ObjectMeta }): string {
  return `${md.metadata.namespace}/${md.metadata.name}`;
}

export function parseGroupId(groupId: string): { namespace: string; name: string } {
  const [namespace, name, ...rest] = groupId.split('/');
  if (!namespace || !name || rest.length)
    throw new Error(`"${groupId}" is not <namespace>/<MachineDeployment>`);
  return { namespace, name };
}

/** `--cluster-id`: `<namespace>/<cluster>` or a cluster name in any namespace. */
export function clusterMatches(md: MachineDeployment, clusterId: string): boolean {
  const [a, b] = clusterId.split('/');
  return b === undefined
    ? md.spec.clusterName === a
    : md.metadata.namespace === a && md.spec.clusterName === b;
}

/**
 * The cluster's scaling groups: its MachineDeployments, all worker groups (control-plane
 * machines belong to a control-plane provider, never to a MachineDeployment). The
 * autoscaler knows a MachineDeployment as MachineDeployment/<namespace>/<name>.
 */
export function scalingGroupsOf(mds: readonly MachineDeployment[], clusterId: string): ScalingGroupInfo[] {
  return mds
    .filter((md) => clusterMatches(md, clusterId) && !md.metadata.deletionTimestamp)
    .map((md) => ({
      groupId: groupIdOf(md),
      name: `${md.spec.clusterName}-${md.metadata.name}`,
      role: 'Worker' as const,
      autoscalerGroupName: `MachineDeployment/${md.metadata.namespace}/${md.metadata.name}`,
    }));
}

export type StrategyDecision = { kind: 'ok' } | { kind: 'setOnDelete' } | { kind: 'refuse'; message: string };

/**
 * nodewarden replaces machines itself, so Cluster API's own rollout must not: the group's
 * strategy must be OnDelete, or be made so when the operator was allowed to (a flag).
 */
export function strategyDecision(md: MachineDeployment, mayChangeStrategy: boolean): StrategyDecision {
  const type = md.spec.rollout?.strategy?.type ?? 'RollingUpdate';
  if (type === 'OnDelete') return { kind: 'ok' };
  if (mayChangeStrategy) return { kind: 'setOnDelete' };
  return {
    kind: 'refuse',
    message:
      `MachineDeployment ${groupIdOf(md)} rolls out with strategy ${type}: Cluster API would replace its machines itself ` +
      'and fight this rollout. Set spec.rollout.strategy.type: OnDelete on it, or start the operator with ' +
      '--clusterapi-set-on-delete to let nodewarden set it.',
  };
}

export interface TemplateObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: unknown;
  [k: string]: unknown;
}

/**
 * The template for `image`: a copy of `current` with the image at `path`, named after the
 * template it descends from and a hash of its spec, so the same image always yields the
 * same name (a repeated call finds it made) and a template is never changed in place.
 */
export function cloneTemplate(current: TemplateObject, path: string, image: string): TemplateObject {
  const origin = current.metadata.labels?.[CLONED_FROM_LABEL] ?? current.metadata.name ?? 'template';
  const withImage = setPath({ spec: current.spec }, path, image);
  const hash = createHash('sha256').update(JSON.stringify(withImage.spec)).digest('hex').slice(0, 10);
  const name = `${origin.slice(0, 253 - hash.length - 1)}-${hash}`;
  return {
    apiVersion: current.apiVersion,
    kind: current.kind,
    metadata: {
      name,
      namespace: current.metadata.namespace,
      labels: { ...current.metadata.labels, [CLONED_FROM_LABEL]: origin },
      ...(current.metadata.annotations ? { annotations: { ...current.metadata.annotations } } : {}),
    },
    spec: withImage.spec,
  };
}

/**
 * Why a group's template may not be swapped yet, or undefined when it may. Cluster API's
 * OnDelete rollout, once the template changes, cuts each old MachineSet's replicas down to
 * the Machines its status counts (core/reconcilers/machinedeployment, ondelete), and makes
 * up the difference in the new set. A set still growing when it turns old (a Machine asked
 * for and not made yet, or made and not yet counted in its status) was cut back, and its
 * MachineSet controller then deleted one of its Machines at random: after a retarget a
 * replaced node's heir vanished, and the group's count no longer matched its Machines. So
 * the swap waits for Cluster API to have given the MachineDeployment's replicas to its sets
 * and for each set to count every Machine it was asked for.
 */
export function templateSwapHold(md: MachineDeployment, sets: readonly MachineSet[]): string | undefined {
  const live = sets.filter((s) => !s.metadata.deletionTimestamp);
  const asked = live.reduce((n, s) => n + (s.spec.replicas ?? 0), 0);
  const want = md.spec.replicas ?? 0;
  if (asked !== want)
    return `its MachineSets hold ${asked} replicas, the MachineDeployment ${want}: Cluster API has not settled them yet`;
  const growing = live.find((s) => (s.spec.replicas ?? 0) > (s.status?.replicas ?? 0));
  if (growing)
    return `MachineSet ${growing.metadata.name} counts ${growing.status?.replicas ?? 0} of its ${growing.spec.replicas} Machines`;
  return undefined;
}

/** The image a template launches, at `path`. */
export function templateImage(t: TemplateObject, path: string): string | undefined {
  return getPath(t, path);
}

/** A Machine's phase as the instance states the upgrade controllers know. */
export function instanceState(m: Machine): InstanceState {
  if (m.metadata.deletionTimestamp) return 'Terminating';
  switch (m.status?.phase) {
    case 'Pending':
    case 'Provisioning':
    case 'Provisioned':
      return 'Creating';
    case 'Running':
      return 'Ready';
    case 'Deleting':
      return 'Terminating';
    case 'Deleted':
      return 'Terminated';
    case 'Failed':
      return 'Failed';
    default:
      return m.metadata.creationTimestamp ? 'Creating' : 'Unknown';
  }
}

/**
 * The launches a MachineDeployment asks for that its listed instances show none of, by when each
 * was asked for: its live Machines with no providerID yet (their creation), and the replicas
 * no Machine answers yet (now: Cluster API makes the Machine within seconds). Fewer Machines
 * than replicas only: more is a removal of ours whose Machine is not deleting yet.
 */
export function launchesNotListed(
  md: MachineDeployment,
  machines: readonly Machine[],
  now: number,
): number[] {
  const live = machines.filter((m) => !m.metadata.deletionTimestamp);
  const unprovisioned = live
    .filter((m) => !m.spec.providerID)
    .map((m) => Date.parse(m.metadata.creationTimestamp ?? '') || now);
  const unmade = Math.max(0, (md.spec.replicas ?? 0) - live.length);
  return [...unprovisioned, ...Array.from({ length: unmade }, () => now)];
}

/** The node name a Machine registers (or will): its nodeRef, else its own name, as most providers name hosts. */
export function nodeNameOf(m: Machine): string {
  return m.status?.nodeRef?.name ?? m.metadata.name ?? '';
}

export interface ScaleDownPlan {
  /** The annotations the Machine gets first: chosen for deletion, and Cluster API's drain skipped (ours is done). */
  annotate: Record<string, string>;
  /** Its own MachineSet's replicas after: lowered by us, so Cluster API never picks which set shrinks. */
  machineSet?: { name: string; replicas: number };
  /** The MachineDeployment's replicas after. */
  replicas: number;
}

/**
 * Removing one chosen Machine and shrinking its group by one, as cluster-autoscaler does
 * (annotate it, lower replicas). Its own MachineSet is lowered too: left to Cluster API,
 * an OnDelete MachineDeployment shrinks the oldest old set first, or first aligns an old
 * set whose Machines are fewer than its replicas (seen against the real manager after a
 * retarget), and the chosen Machine stayed. Undefined when it is already on its way out.
 */
export function planScaleDown(
  md: MachineDeployment,
  sets: readonly MachineSet[],
  machine: Machine,
): ScaleDownPlan | undefined {
  if (machine.metadata.deletionTimestamp) return undefined;
  const replicas = Math.max(0, (md.spec.replicas ?? 0) - 1);
  const annotate = { [CapiAnnotations.deleteMachine]: 'true', [CapiAnnotations.excludeNodeDraining]: 'true' };
  const own = machine.metadata.labels?.[CapiLabels.setName];
  const set = sets.find((s) => s.metadata.name === own);
  if (!set) return { annotate, replicas };
  return {
    annotate,
    replicas,
    machineSet: { name: own ?? '', replicas: Math.max(0, (set.spec.replicas ?? 0) - 1) },
  };
}

/**
 * While we lower a Machine's set and then its MachineDeployment, the MachineDeployment is
 * paused (Cluster API's controllers skip it) with this value: what the second write will
 * do, so an operator stopped between the two finishes it on its next look.
 */
export interface PauseIntent {
  machine: string;
  from: number;
  to: number;
}

const PAUSE_PREFIX = 'nodewarden: removing Machine';

export function pauseValue(i: PauseIntent): string {
  return `${PAUSE_PREFIX} ${i.machine}, replicas ${i.from} to ${i.to}`;
}

/** Ours (written by pauseValue), else undefined: a pause anyone else set is left alone. */
export function parsePause(value: string | undefined): PauseIntent | undefined {
  const m = /^nodewarden: removing Machine (\S+), replicas (\d+) to (\d+)$/.exec(value ?? '');
  return m ? { machine: m[1] ?? '', from: Number(m[2]), to: Number(m[3]) } : undefined;
}

/**
 * On a MachineDeployment (and a MachineSet we lowered): the Machines whose removal lowered its replicas, written in the
 * same patch as the replicas, so a repeated deleteNode (a lost answer, a restart) knows
 * it asked already and never lowers twice. Names of Machines gone are dropped on each write.
 */
export const SCALED_DOWN_ANNOTATION = 'upgrade.nodewarden.dev/scaled-down-for';

export function scaledDownFor(md: { metadata: ObjectMeta }): Set<string> {
  const v = md.metadata.annotations?.[SCALED_DOWN_ANNOTATION] ?? '';
  return new Set(v.split(',').filter(Boolean));
}

/** The record after asking for `machine`'s removal, keeping only Machines that still exist. */
export function recordScaleDown(
  md: { metadata: ObjectMeta },
  machine: string,
  existing: ReadonlySet<string>,
): string {
  const kept = [...scaledDownFor(md)].filter((m) => existing.has(m));
  return [...new Set([...kept, machine])].sort().join(',');
}
