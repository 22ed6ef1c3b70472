// planTenantHosts: which hosts a TenantCluster should hold, from what is
// observed — a pure function (decide, then act). The controller applies the
// plan as label writes guarded by each host's resourceVersion.
// Rules (SIP parity, ../shared/reference/baremetal.md §2, and its fixes):
// - a role takes hosts matching its selector, at most one per topology domain
//   (hosts without the label are unconstrained); `Cluster` scope also keeps it
//   out of the other role's domains;
// - only healthy, unclaimed hosts whose network data gives every interface the
//   role's services need, and whose BMC credentials read, are picked;
// - hosts are walked in one natural order, so the same hosts give the same pick;
// - fresh hosts are claimed only when every role can be filled (the anchor's
//   "nothing labelled until the whole pick is possible");
// - scale down gives back standbys first, then the highest-numbered actives;
// - a failed active is replaced by a standby at once, else by a fresh host;
//   a failed host is released once its role is whole again.
import { TENANT_ROLES, type TenantClusterSpecType, type TenantRole } from '../../api/tenant.ts';
import { compareHosts, type HostView, hostKey } from './host-view.ts';
import { selectorMatches } from './selector.ts';

/** What reading a host's Secrets gave: its addresses by interface id and its BMC login, or why not. */
export type HostFacts =
  | { ok: true; ips: Record<string, string>; bmc: { address: string; username: string; password: string } }
  | { ok: false; reason: string };

export interface PlanInput {
  cluster: { namespace: string; name: string };
  spec: TenantClusterSpecType;
  /** Every BareMetalHost the operator sees. */
  hosts: readonly HostView[];
  /** Secrets read so far, by hostKey; a candidate missing here is asked for (needFacts). */
  facts: ReadonlyMap<string, HostFacts>;
  /** The cluster is being deleted: give everything back. */
  deleting?: boolean;
}

export type ReleaseCause = 'scaleDown' | 'failedReplaced' | 'roleRemoved' | 'clusterDeleted';
/** adopted: held through the anchor's labels alone (a SIP user moving in); ours are written beside them. */
export type RelabelCause = 'promoted' | 'demoted' | 'adopted';

export interface HostRef {
  namespace: string;
  name: string;
  resourceVersion: string;
}

export interface Holding {
  host: HostRef;
  role: TenantRole;
  standby: boolean;
  healthy: boolean;
  healthReason?: string;
}

/** Why candidate hosts of a role were passed over, counted. */
export interface PassedOver {
  selector: number;
  claimed: number;
  unhealthy: number;
  noNetworkData: number;
  topology: number;
}

export interface Shortfall {
  role: TenantRole;
  wanted: number;
  short: number;
  passedOver: PassedOver;
  topologyKey?: string;
}

export interface TenantPlan {
  /** Secrets to read before this plan can be trusted; when non-empty nothing else should be applied. */
  needFacts: HostRef[];
  /** Fresh hosts to label; empty unless every role can be filled. */
  claims: Holding[];
  /** Held hosts whose standby flag changes. */
  relabels: (Holding & { cause: RelabelCause })[];
  releases: (Holding & { cause: ReleaseCause })[];
  /** What the cluster holds once the plan is applied, per role, in order. */
  roster: Holding[];
  shortfalls: Shortfall[];
}

/** The interface ids a role's services read addresses from. */
export function interfacesFor(spec: TenantClusterSpecType, role: TenantRole): string[] {
  const s = spec.services ?? {};
  const lb = role === 'ControlPlane' ? s.controlPlaneLoadBalancer : s.workerLoadBalancer;
  return [...new Set([lb?.nodeInterfaceId, s.jumpHost?.nodeInterfaceId].filter((x): x is string => !!x))];
}

const ref = (h: HostView): HostRef => ({
  namespace: h.namespace,
  name: h.name,
  resourceVersion: h.resourceVersion,
});
const holding = (h: HostView, role: TenantRole, standby: boolean): Holding => ({
  host: ref(h),
  role,
  standby,
  healthy: h.health.healthy,
  ...(h.health.healthy ? {} : { healthReason: h.health.reason }),
});

export function planTenantHosts(input: PlanInput): TenantPlan {
  const { cluster, spec } = input;
  const hosts = [...input.hosts].sort(compareHosts);
  const plan: TenantPlan = {
    needFacts: [],
    claims: [],
    relabels: [],
    releases: [],
    roster: [],
    shortfalls: [],
  };
  // SIP's labels naming this very cluster count as ours: `tenant convert` keeps the name.
  const ours = (h: HostView) =>
    !!h.claim && h.claim.clusterNamespace === cluster.namespace && h.claim.clusterName === cluster.name;
  const held = hosts.filter(ours);
  const adoptable = new Set(held.filter((h) => h.claim?.foreign).map(hostKey));

  if (input.deleting) {
    plan.releases = held.map((h) => ({
      ...holding(h, h.claim!.role as TenantRole, h.claim!.standby),
      cause: 'clusterDeleted',
    }));
    return plan;
  }

  // Kept hosts per role after scale-down and promotion; fresh picks come after.
  const kept = new Map<TenantRole, Holding[]>();
  const failed = new Map<TenantRole, Holding[]>();
  for (const h of held) {
    const role = h.claim!.role as TenantRole;
    if (!spec.nodes[role] || !(TENANT_ROLES as readonly string[]).includes(role)) {
      plan.releases.push({ ...holding(h, role, h.claim!.standby), cause: 'roleRemoved' });
      continue;
    }
    const entry = holding(h, role, h.claim!.standby);
    const into = h.health.healthy ? kept : failed;
    into.set(role, [...(into.get(role) ?? []), entry]);
  }

  // Per role: trim to the counts, then promote or demote to balance actives and standbys.
  const need = new Map<TenantRole, { active: number; standby: number }>();
  for (const role of TENANT_ROLES) {
    const set = spec.nodes[role];
    if (!set) continue;
    const wantActive = set.count.active;
    const wantStandby = set.count.standby ?? 0;
    const mine = kept.get(role) ?? [];
    let actives = mine.filter((h) => !h.standby);
    let standbys = mine.filter((h) => h.standby);
    // Scale down: standbys first (highest-numbered), then the highest-numbered actives.
    let excess = actives.length + standbys.length - (wantActive + wantStandby);
    while (excess > 0 && standbys.length > wantStandby) {
      plan.releases.push({ ...standbys.pop()!, cause: 'scaleDown' });
      excess--;
    }
    while (excess > 0 && actives.length > wantActive) {
      plan.releases.push({ ...actives.pop()!, cause: 'scaleDown' });
      excess--;
    }
    while (excess > 0 && standbys.length > 0) {
      plan.releases.push({ ...standbys.pop()!, cause: 'scaleDown' });
      excess--;
    }
    // Too few actives: promote the lowest-numbered standbys at once (a failed active's quickest cure).
    while (actives.length < wantActive && standbys.length > 0) {
      const s = standbys.shift()!;
      const promoted = { ...s, standby: false };
      plan.relabels.push({ ...promoted, cause: 'promoted' });
      actives = [...actives, promoted].sort((a, b) => compareHosts(a.host, b.host));
    }
    // Too many actives with standby room: the highest-numbered become standbys.
    while (actives.length > wantActive && standbys.length < wantStandby) {
      const a = actives.pop()!;
      const demoted = { ...a, standby: true };
      plan.relabels.push({ ...demoted, cause: 'demoted' });
      standbys = [demoted, ...standbys].sort((x, y) => compareHosts(x.host, y.host));
    }
    kept.set(role, [...actives, ...standbys]);
    need.set(role, { active: wantActive - actives.length, standby: wantStandby - standbys.length });
  }

  for (const list of kept.values()) {
    for (const h of list) {
      if (adoptable.has(hostKey(h.host)) && !plan.relabels.some((r) => hostKey(r.host) === hostKey(h.host)))
        plan.relabels.push({ ...h, cause: 'adopted' });
    }
  }

  // Fresh picks, role by role, walking the hosts in order.
  const taken = new Set(held.map(hostKey));
  const fresh: Holding[] = [];
  const domainsOf = (role: TenantRole, key: string | undefined): Set<string> => {
    const out = new Set<string>();
    if (!key) return out;
    for (const h of [...(kept.get(role) ?? []), ...fresh.filter((f) => f.role === role)]) {
      const v = labelsOf(hosts, h.host)[key];
      if (v) out.add(v);
    }
    return out;
  };
  for (const role of TENANT_ROLES) {
    const set = spec.nodes[role];
    const n = need.get(role);
    if (!set || !n) continue;
    const wanted = n.active + n.standby;
    if (wanted <= 0) continue;
    const key = set.topologyKey;
    const other = TENANT_ROLES.find((r) => r !== role)!;
    const otherSet = spec.nodes[other];
    const used = domainsOf(role, key);
    // Cluster scope, on either side, keeps the two roles out of each other's domains.
    const otherUsedMine = set.topologyScope === 'Cluster' ? domainsOf(other, key) : new Set<string>();
    const otherUsedTheirs =
      otherSet?.topologyScope === 'Cluster' ? domainsOf(other, otherSet.topologyKey) : new Set<string>();
    const needIds = interfacesFor(spec, role);
    const passed: PassedOver = { selector: 0, claimed: 0, unhealthy: 0, noNetworkData: 0, topology: 0 };
    const picked: HostView[] = [];
    for (const h of hosts) {
      if (picked.length === wanted) break;
      if (!selectorMatches(set.labelSelector, h.labels)) {
        passed.selector++;
        continue;
      }
      if (taken.has(hostKey(h)) || h.claim) {
        passed.claimed++;
        continue;
      }
      if (!h.health.healthy) {
        passed.unhealthy++;
        continue;
      }
      if (!h.hasNetworkData) {
        passed.noNetworkData++;
        continue;
      }
      const facts = input.facts.get(hostKey(h));
      if (facts && (!facts.ok || needIds.some((id) => !facts.ips[id]))) {
        passed.noNetworkData++;
        continue;
      }
      const dom = key ? h.labels[key] : undefined;
      const theirDom = otherSet?.topologyKey ? h.labels[otherSet.topologyKey] : undefined;
      if ((dom && (used.has(dom) || otherUsedMine.has(dom))) || (theirDom && otherUsedTheirs.has(theirDom))) {
        passed.topology++;
        continue;
      }
      if (!facts) plan.needFacts.push(ref(h));
      picked.push(h);
      taken.add(hostKey(h));
      if (dom) used.add(dom);
      // Actives first, then standbys, in host order.
      fresh.push(holding(h, role, picked.length > n.active));
    }
    if (picked.length < wanted) {
      plan.shortfalls.push({
        role,
        wanted: set.count.active + (set.count.standby ?? 0),
        short: wanted - picked.length,
        passedOver: passed,
        ...(key ? { topologyKey: key } : {}),
      });
    }
  }

  // Unread Secrets make the pick provisional: nothing fresh is claimed or counted until they are read.
  const whole = plan.shortfalls.length === 0 && plan.needFacts.length === 0;
  if (whole) plan.claims = fresh;
  // Failed hosts go back once their role is whole without them.
  for (const role of TENANT_ROLES) {
    const set = spec.nodes[role];
    const bad = failed.get(role) ?? [];
    if (!set) continue;
    const n = need.get(role) ?? { active: 0, standby: 0 };
    const roleWhole = whole || n.active + n.standby <= 0;
    const roster = [...(kept.get(role) ?? []), ...(whole ? fresh.filter((f) => f.role === role) : [])];
    if (roleWhole) {
      for (const b of bad) plan.releases.push({ ...b, cause: 'failedReplaced' });
      plan.roster.push(...roster);
    } else {
      plan.roster.push(...roster, ...bad);
    }
  }
  plan.roster.sort((a, b) => Number(a.standby) - Number(b.standby) || compareHosts(a.host, b.host));
  return plan;
}

function labelsOf(hosts: readonly HostView[], r: HostRef): Record<string, string> {
  return hosts.find((h) => h.namespace === r.namespace && h.name === r.name)?.labels ?? {};
}
