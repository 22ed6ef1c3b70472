// A TenantCluster's status from a plan: the hosts per role with their rack,
// address and health, the counts, and the Ready/Scheduled/ServicesReady/
// ServicesRunning conditions at the generation they describe. Pure.
import { RACK_LABEL } from '../api/baremetal.ts';
import type {
  TenantCluster,
  TenantClusterStatusType,
  TenantHostStatusType,
  TenantRole,
} from '../api/tenant.ts';
import { type ConditionUpdate, setCondition } from '../runtime/conditions.ts';
import type { ClaimedHost } from './claims.ts';
import { describeShortfalls } from './scheduling/explain.ts';
import { hostKey } from './scheduling/host-view.ts';
import { type Holding, type HostFacts, interfacesFor, type TenantPlan } from './scheduling/planner.ts';
import { type ServicePodState, servicesRunningCondition } from './service-pods.ts';

/** The anchor's Ready reasons, plus ours for a failed host. */
export type ReadyReason =
  | 'ReconciliationSucceeded'
  | 'Progressing'
  | 'Unschedulable'
  | 'UnableToApplyLabels'
  | 'InfraServiceFailure'
  | 'HostFailed';

export interface StatusInput {
  tc: TenantCluster;
  plan: TenantPlan;
  labelsOf: (h: Holding) => Record<string, string>;
  facts: ReadonlyMap<string, HostFacts>;
  /** Claims that did not land this pass (a conflict): the pick is being retried. */
  labelsPending?: string;
  /** undefined: no services asked for; [] all applied. */
  serviceProblems?: { service: string; message: string }[];
  /** Each service's pod: running, or why not (service-pods.ts); undefined when none is asked for. */
  servicePods?: readonly ServicePodState[];
  now?: Date;
}

export function hostStatus(
  tc: TenantCluster,
  h: Holding,
  labels: Record<string, string>,
  facts?: HostFacts,
): TenantHostStatusType {
  const key = tc.spec.nodes[h.role]?.topologyKey;
  const ids = interfacesFor(tc.spec, h.role);
  const ips = facts?.ok ? facts.ips : {};
  const ip = ids.map((id) => ips[id]).find((x) => !!x) ?? Object.values(ips)[0];
  return {
    name: h.host.name,
    namespace: h.host.namespace,
    ...(key && labels[key] ? { domain: labels[key] } : {}),
    ...(labels[RACK_LABEL] ? { rack: labels[RACK_LABEL] } : {}),
    ...(ip ? { ip } : {}),
    standby: h.standby,
    health: h.healthy ? 'Healthy' : 'Failed',
    ...(h.healthReason ? { healthReason: h.healthReason.slice(0, 1024) } : {}),
  };
}

/** The roster's healthy hosts as the services renderer takes them (a host whose Secrets failed is left out). */
export function claimedHosts(
  plan: TenantPlan,
  labelsOf: (h: Holding) => Record<string, string>,
  facts: ReadonlyMap<string, HostFacts>,
): ClaimedHost[] {
  const out: ClaimedHost[] = [];
  for (const h of plan.roster) {
    const f = facts.get(hostKey(h.host));
    if (!h.healthy || !f?.ok) continue;
    const rack = labelsOf(h)[RACK_LABEL];
    out.push({
      name: h.host.name,
      namespace: h.host.namespace,
      role: h.role,
      standby: h.standby,
      ...(rack ? { rack } : {}),
      ips: { ...f.ips },
      bmc: { ...f.bmc },
    });
  }
  return out;
}

export function buildStatus(input: StatusInput): TenantClusterStatusType {
  const { tc, plan } = input;
  const generation = tc.metadata.generation ?? 0;
  const hosts: Partial<Record<TenantRole, TenantHostStatusType[]>> = {};
  for (const h of plan.roster) {
    const list = hosts[h.role] ?? [];
    hosts[h.role] = list;
    list.push(hostStatus(tc, h, input.labelsOf(h), input.facts.get(hostKey(h.host))));
  }
  const desired = Object.values(tc.spec.nodes).reduce(
    (n, s) => n + s.count.active + (s.count.standby ?? 0),
    0,
  );
  const scheduled = scheduledCondition(input);
  const services = servicesCondition(input.serviceProblems);
  const running = servicesRunningCondition(input.servicePods);
  const ready = readyCondition(
    scheduled,
    plan.roster.filter((h) => !h.healthy),
    services,
  );
  let conditions = tc.status?.conditions;
  for (const c of [ready, scheduled, services, running]) {
    conditions = setCondition(
      conditions,
      { ...c, message: c.message.slice(0, 32768), observedGeneration: generation },
      input.now,
    );
  }
  return {
    observedGeneration: generation,
    conditions,
    hosts,
    desiredHosts: desired,
    claimedHosts: plan.roster.length,
  };
}

function scheduledCondition({ plan, labelsPending }: StatusInput): ConditionUpdate {
  const type = 'Scheduled';
  if (plan.shortfalls.length > 0)
    return { type, status: 'False', reason: 'Unschedulable', message: describeShortfalls(plan.shortfalls) };
  if (labelsPending) return { type, status: 'False', reason: 'UnableToApplyLabels', message: labelsPending };
  return { type, status: 'True', reason: 'Scheduled', message: `${plan.roster.length} hosts claimed` };
}

function servicesCondition(problems: StatusInput['serviceProblems']): ConditionUpdate {
  const type = 'ServicesReady';
  if (problems === undefined)
    return { type, status: 'True', reason: 'NoServices', message: 'spec.services asks for none' };
  if (problems.length > 0)
    return {
      type,
      status: 'False',
      reason: 'InfraServiceFailure',
      message: problems.map((p) => `${p.service}: ${p.message}`).join('; '),
    };
  return { type, status: 'True', reason: 'ServicesApplied', message: 'support services applied' };
}

/** Ready: scheduled first, then no failed host, then the services. */
function readyCondition(
  scheduled: ConditionUpdate,
  failed: readonly Holding[],
  services: ConditionUpdate,
): ConditionUpdate {
  const type = 'Ready';
  if (scheduled.status !== 'True')
    return { type, status: 'False', reason: scheduled.reason, message: scheduled.message };
  if (failed.length > 0)
    return {
      type,
      status: 'False',
      reason: 'HostFailed',
      message: failed.map((f) => `${f.host.name}: ${f.healthReason ?? 'failed'}`).join('; '),
    };
  if (services.status !== 'True')
    return { type, status: 'False', reason: 'InfraServiceFailure', message: services.message };
  return {
    type,
    status: 'True',
    reason: 'ReconciliationSucceeded',
    message: 'hosts claimed and services applied',
  };
}
