// Whether each support service of a TenantCluster has a pod running, and if
// not, why — from the pods alone, as `kubectl describe` would tell it: the
// scheduler's Unschedulable message, the kubelet's waiting reason
// (ErrImagePull, CrashLoopBackOff, …), a failing readiness probe. Pure: the
// controller hands in the cluster's pods from the cache and writes the answer
// as the ServicesRunning condition (and an Event when it changes).
import type { ConditionUpdate } from '../runtime/conditions.ts';
import {
  CLUSTER_LABEL,
  COMPONENT_LABEL,
  MANAGED_BY_LABEL,
  SERVICE_COMPONENTS,
  type ServiceComponent,
  type ServiceField,
} from './services/index.ts';

/** Every support-service pod nodewarden makes, whatever its cluster (the pods' informer). */
export const SERVICE_POD_SELECTOR = `${MANAGED_BY_LABEL}=nodewarden,${CLUSTER_LABEL},${COMPONENT_LABEL} in (${Object.values(SERVICE_COMPONENTS).join(',')})`;

/** One cluster's support-service pods, as the cache is asked for them. */
export const clusterPodSelector = (cluster: string) => `${SERVICE_POD_SELECTOR},${CLUSTER_LABEL}=${cluster}`;

/** The fields of a Pod this reads (a core/v1 Pod fits). */
export interface ServicePod {
  metadata: {
    name?: string;
    labels?: Record<string, string>;
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date;
  };
  spec?: { nodeName?: string };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: {
      name: string;
      ready: boolean;
      state?: { waiting?: { reason?: string; message?: string } };
    }[];
  };
}

/** Why a service has no pod running. */
export type PodTrouble =
  | 'NoPod'
  | 'Scheduling'
  | 'Unschedulable'
  | 'ContainerWaiting'
  | 'ContainerCreating'
  | 'NotReady'
  | 'Failed';

export interface ServicePodState {
  component: ServiceComponent;
  running: boolean;
  /** The pod told about (the newest), if any. */
  pod?: string;
  node?: string;
  trouble?: PodTrouble;
  /** For a waiting container, the kubelet's reason (ImagePullBackOff, CrashLoopBackOff, …). */
  detail?: string;
  message?: string;
  /** While an older pod serves: the newer one (its Deployment's rollout) not ready yet, and why. */
  replacing?: { pod?: string; message?: string };
}

/** One state per service the spec asks for, in SERVICE_COMPONENTS' order. */
export function servicePodStates(
  fields: readonly ServiceField[],
  pods: readonly ServicePod[],
): ServicePodState[] {
  return (Object.entries(SERVICE_COMPONENTS) as [ServiceField, ServiceComponent][])
    .filter(([field]) => fields.includes(field))
    .map(([, component]) => {
      const mine = pods.filter((p) => p.metadata.labels?.[COMPONENT_LABEL] === component);
      const live = mine.filter((p) => !p.metadata.deletionTimestamp).sort(byNewest);
      const newest = live[0];
      if (!newest) return { component, running: false, trouble: 'NoPod', message: 'no pod yet' };
      const ready = live.find(isReady);
      if (!ready) return { component, running: false, ...where(newest), ...troubleOf(newest) };
      if (ready === newest) return { component, running: true, ...where(ready) };
      // An older pod serves while the newest, its replacement, is not ready: a rollout under way.
      const { message } = troubleOf(newest);
      const replacing = { ...(newest.metadata.name ? { pod: newest.metadata.name } : {}), message };
      return { component, running: true, ...where(ready), replacing };
    });
}

function where(p: ServicePod): { pod?: string; node?: string } {
  return {
    ...(p.metadata.name ? { pod: p.metadata.name } : {}),
    ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
  };
}

const isReady = (p: ServicePod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

const time = (t: string | Date | undefined) => (t ? new Date(t).getTime() : 0);
const byNewest = (a: ServicePod, b: ServicePod) =>
  time(b.metadata.creationTimestamp) - time(a.metadata.creationTimestamp) ||
  (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');

/** The first thing that keeps the pod from running, in the order a pod meets them. */
function troubleOf(p: ServicePod): Pick<ServicePodState, 'trouble' | 'detail' | 'message'> {
  const scheduled = p.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False')
    return {
      trouble: 'Unschedulable',
      message: scheduled.message ?? scheduled.reason ?? 'not scheduled',
    };
  if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded')
    return { trouble: 'Failed', message: `pod ${p.status.phase}` };
  const waiting = p.status?.containerStatuses?.find((c) => c.state?.waiting?.reason)?.state?.waiting;
  if (waiting && waiting.reason !== 'ContainerCreating')
    return {
      trouble: 'ContainerWaiting',
      detail: waiting.reason ?? '',
      message: `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`,
    };
  // The scheduler has not decided yet: Unschedulable is its word to say, not ours to guess.
  if (!p.spec?.nodeName) return { trouble: 'Scheduling', message: 'waiting for the scheduler' };
  if (p.status?.phase !== 'Running')
    return { trouble: 'ContainerCreating', message: `starting on ${p.spec.nodeName}` };
  return { trouble: 'NotReady', message: `running on ${p.spec.nodeName} but not ready (its probe fails)` };
}

/** What the API server takes as a condition's reason. */
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

function runningMessage(s: ServicePodState): string {
  const on = `${s.component} on ${s.node ?? '?'}`;
  if (!s.replacing) return on;
  return `${on} (being replaced by ${s.replacing.pod ?? 'a new pod'}: ${s.replacing.message ?? ''})`;
}

/**
 * ServicesRunning: True when every service asked for has a Ready pod (reason
 * RollingOut while an older one serves for a newer not yet ready); else
 * False with the first trouble as the reason (the scheduler's word first:
 * an Unschedulable pod is the one a user must act on) and every one said.
 */
export function servicesRunningCondition(states: readonly ServicePodState[] | undefined): ConditionUpdate {
  const type = 'ServicesRunning';
  if (!states || states.length === 0)
    return { type, status: 'True', reason: 'NoServices', message: 'spec.services asks for none' };
  const down = states.filter((s) => !s.running);
  if (down.length === 0) {
    // Still True while a pod is replaced (the old one serves), but not yet the spec as it is now.
    const rolling = states.some((s) => s.replacing);
    return {
      type,
      status: 'True',
      reason: rolling ? 'RollingOut' : 'Running',
      message: states.map(runningMessage).join(', '),
    };
  }
  const first = down.find((s) => s.trouble === 'Unschedulable') ?? down[0];
  return {
    type,
    status: 'False',
    reason: [first?.detail, first?.trouble].find((r) => r && REASON.test(r)) ?? 'NotRunning',
    message: down.map((s) => `${s.component}${s.pod ? ` (${s.pod})` : ''}: ${s.message ?? ''}`).join('; '),
  };
}

/** The Event a turn of ServicesRunning deserves, if any. */
export interface ServicesEvent {
  type: 'Normal' | 'Warning';
  reason: 'ServiceNotRunning' | 'ServicesRunning';
  message: string;
}

/** Reasons every new pod passes through: said in the condition, not worth a Warning. */
const ON_THE_WAY = new Set(['NoPod', 'Scheduling', 'ContainerCreating']);

type Said = Pick<ConditionUpdate, 'status' | 'reason' | 'message'>;

/**
 * A Warning when ServicesRunning turns False for something a user acts on
 * (the scheduler's verdict, the kubelet's, a failing probe); a Normal Event
 * when it turns True again after one. A pod on its way up is no Event.
 */
export function servicesEvent(was: Said | undefined, now: Said | undefined): ServicesEvent | undefined {
  if (!now || (was?.status === now.status && was.reason === now.reason)) return undefined;
  if (now.status === 'False')
    return ON_THE_WAY.has(now.reason ?? '')
      ? undefined
      : { type: 'Warning', reason: 'ServiceNotRunning', message: now.message ?? '' };
  if (was?.status === 'False' && !ON_THE_WAY.has(was.reason ?? ''))
    return { type: 'Normal', reason: 'ServicesRunning', message: now.message ?? '' };
  return undefined;
}
