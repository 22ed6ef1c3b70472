// TenantClusterReconciler: observe the hosts, plan (scheduling/planner.ts),
// apply the plan as guarded label writes, apply the support services, write
// status. Many clusters reconcile at once: a claim that loses a race (409)
// is rolled back and the cluster re-plans shortly after, so no cluster hoards
// a partial pick and no host is ever held twice.
import { type BareMetalHost, BareMetalHosts } from '../api/baremetal.ts';
import {
  TENANT_FINALIZER,
  type TenantCluster,
  type TenantClusterStatusType,
  TenantClusters,
} from '../api/tenant.ts';
import type { KubeClient } from '../runtime/client.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { isBeingDeleted, patchFinalizer } from '../runtime/finalizers.ts';
import type { CacheReader, ReconcilerDeps } from '../runtime/host.ts';
import {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
} from '../runtime/reconcile.ts';
import { type K8sObject, Pods } from '../runtime/resources.ts';
import { CONFLICT_REQUEUE_MS, updateStatusIfChanged } from '../runtime/status.ts';
import { ServiceApplier } from './apply-services.ts';
import { HostFactsReader } from './facts.ts';
import { claimLabels, HostLabeler } from './host-labels.ts';
import {
  hostClaims,
  hostFailures,
  hostReleases,
  planSeconds,
  standbyPromotions,
  unschedulable,
} from './metrics.ts';
import { HostReservations } from './reservations.ts';
import { hostKey, viewOfHost } from './scheduling/host-view.ts';
import { type Holding, type HostFacts, planTenantHosts, type TenantPlan } from './scheduling/planner.ts';
import {
  clusterPodSelector,
  type ServicePod,
  type ServicePodState,
  servicePodStates,
  servicesEvent,
} from './service-pods.ts';
import { SERVICE_COMPONENTS, type ServiceField } from './services/index.ts';
import { buildStatus, claimedHosts } from './status.ts';

const TC = TenantClusters.type;
const BMH = BareMetalHosts.type;
/** Secret reads a plan may ask for before it gives up for this pass. */
const MAX_FACT_ROUNDS = 8;
/** Short of hosts or holding a failed one: look again this often even if no host event comes. */
const RETRY_MS = 30_000;

type TenantObject = TenantCluster & K8sObject;

export interface TenantReconcilerOptions {
  sipCompatibleLabels: boolean;
  /** Where jump hosts reach a BMC on the operator's loopback (--jumphost-loopback-at). */
  jumpHostLoopbackAt?: string;
}

export class TenantClusterReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly events: EventRecorder;
  private readonly opts: TenantReconcilerOptions;
  private readonly facts: HostFactsReader;
  private readonly labeler: HostLabeler;
  private readonly services: ServiceApplier;
  private readonly reservations = new HostReservations();

  constructor(deps: ReconcilerDeps, opts: TenantReconcilerOptions) {
    this.client = deps.client;
    this.cache = deps.cache;
    this.events = deps.events;
    this.opts = opts;
    this.facts = new HostFactsReader(deps.client);
    this.labeler = new HostLabeler(deps.client);
    this.services = new ServiceApplier(deps.client, opts.jumpHostLoopbackAt);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const tc = this.cache.get<TenantObject>(TC, req.name, req.namespace);
    if (!tc) return done();
    const deleting = isBeingDeleted(tc);
    if (!deleting && (await patchFinalizer(this.client, TC, tc, TENANT_FINALIZER, 'add'))) return done();

    const cluster = `${tc.metadata.namespace}/${tc.metadata.name}`;
    const stop = planSeconds.startTimer();
    const { plan, byKey } = await this.plan(tc, cluster, deleting);
    stop();

    let outcome: Awaited<ReturnType<TenantClusterReconciler['act']>>;
    try {
      outcome = await this.act(tc, plan, ctx);
    } finally {
      this.reservations.release(cluster);
    }
    if (!outcome.claimed) {
      // Picks not written (a lost race, Secrets still unread) are not held: status and services must not show them.
      const unwritten = new Set(plan.claims.map((c) => hostKey(c.host)));
      plan.roster = plan.roster.filter((h) => !unwritten.has(hostKey(h.host)));
    }
    if (deleting) {
      if (outcome.conflicts > 0) return requeueAfter(200);
      this.services.forget(tc);
      await patchFinalizer(this.client, TC, tc, TENANT_FINALIZER, 'remove');
      return done();
    }
    const labelsOf = (h: Holding) => byKey.get(hostKey(h.host))?.metadata.labels ?? {};
    const rosterHosts = plan.roster.flatMap((h) => byKey.get(hostKey(h.host)) ?? []);
    const facts = await this.facts.read(rosterHosts);
    const serviceProblems = tc.spec.services
      ? await this.services.apply(tc, claimedHosts(plan, labelsOf, facts))
      : undefined;
    const servicePods = tc.spec.services ? this.servicePods(tc) : undefined;

    this.noteFailures(tc, plan);
    for (const s of plan.shortfalls) unschedulable.inc({ role: s.role });
    const status = buildStatus({
      tc,
      plan,
      labelsOf,
      facts,
      ...(outcome.conflicts > 0
        ? { labelsPending: `${outcome.conflicts} claims lost a race; picking again` }
        : {}),
      ...(serviceProblems ? { serviceProblems } : {}),
      ...(servicePods ? { servicePods } : {}),
    });
    this.noteServicePods(tc, status);
    // A stale copy (our own finalizer write, say): the newer one is on its way; write status from it.
    if ((await updateStatusIfChanged(this.client, TC, tc, status)) === 'conflict')
      return requeueAfter(CONFLICT_REQUEUE_MS);
    if (outcome.conflicts > 0) return requeueAfter(100 + Math.floor(Math.random() * 900));
    if (plan.shortfalls.length > 0 || plan.roster.some((h) => !h.healthy)) return requeueAfter(RETRY_MS);
    return done();
  }

  /**
   * Plans, reading the Secrets of the hosts the plan would pick until it needs
   * no more; the final plan is made and its picks reserved with no await in
   * between, so no other worker of this process plans them meanwhile.
   */
  private async plan(
    tc: TenantObject,
    cluster: string,
    deleting: boolean,
  ): Promise<{ plan: TenantPlan; byKey: Map<string, BareMetalHost> }> {
    const facts = new Map<string, HostFacts>();
    for (let round = 0; ; round++) {
      const hosts = this.labeler.overlay(this.cache.list<BareMetalHost>(BMH));
      const byKey = new Map(hosts.map((h) => [`${h.metadata.namespace}/${h.metadata.name}`, h]));
      for (const [k, f] of this.facts.known(hosts)) if (!facts.has(k)) facts.set(k, f);
      const plan = planTenantHosts({
        cluster: { namespace: tc.metadata.namespace ?? 'default', name: tc.metadata.name ?? '' },
        spec: tc.spec,
        hosts: hosts.map((h) => this.reservations.mask(viewOfHost(h), cluster)),
        facts,
        deleting,
      });
      // Provisional picks are reserved too, so other workers look elsewhere while their Secrets are read.
      this.reservations.release(cluster);
      this.reservations.reserve(cluster, [...plan.claims.map((c) => c.host), ...plan.needFacts]);
      if (plan.needFacts.length === 0 || round >= MAX_FACT_ROUNDS) return { plan, byKey };
      const wanted = plan.needFacts.flatMap((r) => byKey.get(hostKey(r)) ?? []);
      for (const [k, f] of await this.facts.read(wanted)) facts.set(k, f);
    }
  }

  /** Promotions first (the quickest cure for a failed host), then claims, then releases. */
  private async act(
    tc: TenantObject,
    plan: TenantPlan,
    ctx: ReconcileContext,
  ): Promise<{ conflicts: number; claimed: boolean }> {
    const cluster = { namespace: tc.metadata.namespace ?? 'default', name: tc.metadata.name ?? '' };
    const label = (h: Holding) =>
      claimLabels({ cluster, role: h.role, standby: h.standby }, this.opts.sipCompatibleLabels);
    let conflicts = 0;
    for (const r of plan.relabels) {
      const w = await this.labeler.write(r.host, label(r));
      if (w === 'conflict') conflicts++;
      if (w !== 'written') continue;
      if (r.cause === 'adopted') {
        this.events.normal(
          tc,
          'HostClaimed',
          'Schedule',
          `${r.host.namespace}/${r.host.name} adopted from its sip.airshipit.org labels as ${r.role}`,
        );
      }
      if (r.cause === 'promoted') {
        standbyPromotions.inc();
        this.events.normal(
          tc,
          'StandbyPromoted',
          'Schedule',
          `${r.role} standby ${r.host.name} is active now`,
        );
      }
    }
    if (plan.needFacts.length === 0 && plan.claims.length > 0) {
      const claimed: Holding[] = [];
      for (const c of plan.claims) {
        const w = await this.labeler.write(c.host, label(c));
        hostClaims.inc({ result: w === 'written' ? 'claimed' : 'conflict' });
        if (w !== 'written') {
          conflicts++;
          break;
        }
        claimed.push(c);
      }
      if (conflicts > 0) {
        // All or nothing: give back this pass's claims so a loser does not hoard half a cluster.
        await this.release(claimed, 'rollback');
        ctx.log.info({ rolledBack: claimed.length }, 'a claim lost a race; re-planning');
        return { conflicts, claimed: false };
      }
      for (const c of claimed) {
        this.events.normal(
          tc,
          'HostClaimed',
          'Schedule',
          `${c.host.namespace}/${c.host.name} as ${c.role}${c.standby ? ' standby' : ''}`,
        );
      }
      if (claimed.length > 0) ctx.log.info({ hosts: claimed.map((c) => c.host.name) }, 'hosts claimed');
    }
    for (const r of plan.releases) {
      const w = await this.release([r], r.cause);
      conflicts += w;
      if (w === 0 && !isBeingDeleted(tc) && r.cause !== 'clusterDeleted') {
        this.events.normal(
          tc,
          'HostReleased',
          'Schedule',
          `${r.host.namespace}/${r.host.name} given back (${r.cause})`,
        );
      }
    }
    return { conflicts, claimed: true };
  }

  /** Unlabels hosts; the number of conflicts met. */
  private async release(list: readonly Holding[], cause: string): Promise<number> {
    let conflicts = 0;
    for (const h of list) {
      // A rollback's host carries the resourceVersion of before our claim: drop the guard for our own write.
      const host = cause === 'rollback' ? { ...h.host, resourceVersion: '' } : h.host;
      const w = await this.labeler.write(host, claimLabels(null, this.opts.sipCompatibleLabels));
      if (w === 'conflict') conflicts++;
      else hostReleases.inc({ cause });
    }
    return conflicts;
  }

  /** Each asked-for service's pod from the cache (the pods' informer is set up by setup.ts). */
  private servicePods(tc: TenantObject): ServicePodState[] {
    const fields = (Object.keys(SERVICE_COMPONENTS) as ServiceField[]).filter((f) => tc.spec.services?.[f]);
    const pods = this.cache.list<ServicePod & K8sObject>(Pods, {
      namespace: tc.metadata.namespace ?? 'default',
      labelSelector: clusterPodSelector(tc.metadata.name ?? ''),
    });
    return servicePodStates(fields, pods);
  }

  /** An Event when ServicesRunning turns: why a service's pod does not run, or that they all run again. */
  private noteServicePods(tc: TenantObject, status: TenantClusterStatusType): void {
    const find = (list: TenantClusterStatusType['conditions']) =>
      list?.find((c) => c.type === 'ServicesRunning');
    const e = servicesEvent(find(tc.status?.conditions), find(status.conditions));
    if (e?.type === 'Warning') this.events.warning(tc, e.reason, 'Services', e.message);
    else if (e) this.events.normal(tc, e.reason, 'Services', e.message);
  }

  /** A HostFailed event the first time status shows a held host failed. */
  private noteFailures(tc: TenantObject, plan: TenantPlan): void {
    const before = tc.status?.hosts ?? {};
    // A failed host replaced in the same pass is already among the releases.
    const failed = [...plan.roster, ...plan.releases.filter((r) => r.cause === 'failedReplaced')];
    for (const h of failed) {
      if (h.healthy) continue;
      const was = before[h.role]?.find((s) => s.name === h.host.name && s.namespace === h.host.namespace);
      if (was?.health === 'Failed') continue;
      hostFailures.inc();
      this.events.warning(
        tc,
        'HostFailed',
        'Schedule',
        `${h.role} host ${h.host.name} failed: ${h.healthReason ?? 'unhealthy'}`,
      );
    }
  }
}
