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

/** The planner's working state, handed from phase to phase; `plan` is what it answers. */
interface Working {
  input: PlanInput;
  /** Every host, in the one natural order. */
  hosts: HostView[];
  /** Hosts labelled for this cluster. */
  held: HostView[];
  /** Held through SIP's labels alone. */
  adoptable: Set<string>;
  /** Healthy held hosts per role after scale-down and promotion. */
  kept: Map<TenantRole, Holding[]>;
  /** Failed held hosts per role. */
  failed: Map<TenantRole, Holding[]>;
  /** Actives and standbys each role still lacks. */
  need: Map<TenantRole, { active: number; standby: number }>;
  /** Fresh picks, role by role. */
  fresh: Holding[];
  plan: TenantPlan;
}

type Phase = (w: Working) => Working;

/** The phases in order; each reads what the earlier ones decided. */
const PHASES: readonly Phase[] = [sortHeld, balanceRoles, adoptSipHosts, pickFreshHosts, settleRoster];

export function planTenantHosts(input: PlanInput): TenantPlan {
  const start = observe(input);
  if (input.deleting) return releaseEverything(start).plan;
  return PHASES.reduce((w, phase) => phase(w), start).plan;
}

function observe(input: PlanInput): Working {
  const { cluster } = input;
  const hosts = [...input.hosts].sort(compareHosts);
  // SIP's labels naming this very cluster count as ours: `tenant convert` keeps the name.
  const ours = (h: HostView) =>
    !!h.claim && h.claim.clusterNamespace === cluster.namespace && h.claim.clusterName === cluster.name;
  const held = hosts.filter(ours);
  return {
    input,
    hosts,
    held,
    adoptable: new Set(held.filter((h) => h.claim?.foreign).map(hostKey)),
    kept: new Map(),
    failed: new Map(),
    need: new Map(),
    fresh: [],
    plan: { needFacts: [], claims: [], relabels: [], releases: [], roster: [], shortfalls: [] },
  };
}

function releaseEverything(w: Working): Working {
  w.plan.releases = w.held.map((h) => ({
    ...holding(h, h.claim!.role as TenantRole, h.claim!.standby),
    cause: 'clusterDeleted',
  }));
  return w;
}

/** Held hosts by role, healthy apart from failed; a role the spec no longer has gives its hosts back. */
function sortHeld(w: Working): Working {
  for (const h of w.held) {
    const role = h.claim!.role as TenantRole;
    if (!w.input.spec.nodes[role] || !(TENANT_ROLES as readonly string[]).includes(role)) {
      w.plan.releases.push({ ...holding(h, role, h.claim!.standby), cause: 'roleRemoved' });
      continue;
    }
    const into = h.health.healthy ? w.kept : w.failed;
    into.set(role, [...(into.get(role) ?? []), holding(h, role, h.claim!.standby)]);
  }
  return w;
}

/** Per role: trim to the counts, then promote or demote to balance actives and standbys. */
function balanceRoles(w: Working): Working {
  for (const role of TENANT_ROLES) {
    const set = w.input.spec.nodes[role];
    if (!set) continue;
    const want = { active: set.count.active, standby: set.count.standby ?? 0 };
    const mine = w.kept.get(role) ?? [];
    const { actives, standbys } = balance(
      mine.filter((h) => !h.standby),
      mine.filter((h) => h.standby),
      want,
      w.plan,
    );
    w.kept.set(role, [...actives, ...standbys]);
    w.need.set(role, { active: want.active - actives.length, standby: want.standby - standbys.length });
  }
  return w;
}

function balance(
  activesIn: Holding[],
  standbysIn: Holding[],
  want: { active: number; standby: number },
  plan: TenantPlan,
): { actives: Holding[]; standbys: Holding[] } {
  let actives = [...activesIn];
  let standbys = [...standbysIn];
  // Scale down: standbys first (highest-numbered), then the highest-numbered actives.
  let excess = actives.length + standbys.length - (want.active + want.standby);
  while (excess > 0 && standbys.length > want.standby) {
    plan.releases.push({ ...standbys.pop()!, cause: 'scaleDown' });
    excess--;
  }
  while (excess > 0 && actives.length > want.active) {
    plan.releases.push({ ...actives.pop()!, cause: 'scaleDown' });
    excess--;
  }
  while (excess > 0 && standbys.length > 0) {
    plan.releases.push({ ...standbys.pop()!, cause: 'scaleDown' });
    excess--;
  }
  // Too few actives: promote the lowest-numbered standbys at once (a failed active's quickest cure).
  while (actives.length < want.active && standbys.length > 0) {
    const promoted = { ...standbys.shift()!, standby: false };
    plan.relabels.push({ ...promoted, cause: 'promoted' });
    actives = [...actives, promoted].sort((a, b) => compareHosts(a.host, b.host));
  }
  // Too many actives with standby room: the highest-numbered become standbys.
  while (actives.length > want.active && standbys.length < want.standby) {
    const demoted = { ...actives.pop()!, standby: true };
    plan.relabels.push({ ...demoted, cause: 'demoted' });
    standbys = [demoted, ...standbys].sort((x, y) => compareHosts(x.host, y.host));
  }
  return { actives, standbys };
}

/** Hosts held through SIP's labels alone, kept and not relabelled otherwise, get ours written beside them. */
function adoptSipHosts(w: Working): Working {
  for (const list of w.kept.values()) {
    for (const h of list) {
      if (
        w.adoptable.has(hostKey(h.host)) &&
        !w.plan.relabels.some((r) => hostKey(r.host) === hostKey(h.host))
      )
        w.plan.relabels.push({ ...h, cause: 'adopted' });
    }
  }
  return w;
}

/** Fresh picks, role by role, walking the hosts in order. */
function pickFreshHosts(w: Working): Working {
  const taken = new Set(w.held.map(hostKey));
  for (const role of TENANT_ROLES) {
    const set = w.input.spec.nodes[role];
    const n = w.need.get(role);
    if (!set || !n || n.active + n.standby <= 0) continue;
    pickForRole(w, role, n, taken);
  }
  return w;
}

/** Where a role may not go: the topology domains its picks must stay out of. */
interface Fences {
  key: string | undefined;
  otherKey: string | undefined;
  /** The role's own domains (under its key). */
  used: Set<string>;
  /** Under the role's key, the other role's domains (Cluster scope on this side). */
  otherUsedMine: Set<string>;
  /** Under the other role's key, its domains (Cluster scope on that side). */
  otherUsedTheirs: Set<string>;
}

function fencesFor(w: Working, role: TenantRole): Fences {
  const { nodes } = w.input.spec;
  const set = nodes[role]!;
  const other = TENANT_ROLES.find((r) => r !== role)!;
  const otherSet = nodes[other];
  const key = set.topologyKey;
  // Cluster scope, on either side, keeps the two roles out of each other's domains.
  return {
    key,
    otherKey: otherSet?.topologyKey,
    used: domainsOf(w, role, key),
    otherUsedMine: set.topologyScope === 'Cluster' ? domainsOf(w, other, key) : new Set<string>(),
    otherUsedTheirs:
      otherSet?.topologyScope === 'Cluster' ? domainsOf(w, other, otherSet.topologyKey) : new Set<string>(),
  };
}

function domainsOf(w: Working, role: TenantRole, key: string | undefined): Set<string> {
  const out = new Set<string>();
  if (!key) return out;
  for (const h of [...(w.kept.get(role) ?? []), ...w.fresh.filter((f) => f.role === role)]) {
    const v = labelsOf(w.hosts, h.host)[key];
    if (v) out.add(v);
  }
  return out;
}

function pickForRole(
  w: Working,
  role: TenantRole,
  n: { active: number; standby: number },
  taken: Set<string>,
): void {
  const set = w.input.spec.nodes[role]!;
  const wanted = n.active + n.standby;
  const fences = fencesFor(w, role);
  const needIds = interfacesFor(w.input.spec, role);
  const passed: PassedOver = { selector: 0, claimed: 0, unhealthy: 0, noNetworkData: 0, topology: 0 };
  let picked = 0;
  for (const h of w.hosts) {
    if (picked === wanted) break;
    if (!selectorMatches(set.labelSelector, h.labels)) {
      passed.selector++;
      continue;
    }
    const facts = w.input.facts.get(hostKey(h));
    const why = passOver(h, taken.has(hostKey(h)), facts, needIds, fences);
    if (why) {
      passed[why]++;
      continue;
    }
    if (!facts) w.plan.needFacts.push(ref(h));
    picked++;
    taken.add(hostKey(h));
    const dom = fences.key ? h.labels[fences.key] : undefined;
    if (dom) fences.used.add(dom);
    // Actives first, then standbys, in host order.
    w.fresh.push(holding(h, role, picked > n.active));
  }
  if (picked < wanted)
    w.plan.shortfalls.push({
      role,
      wanted: set.count.active + (set.count.standby ?? 0),
      short: wanted - picked,
      passedOver: passed,
      ...(fences.key ? { topologyKey: fences.key } : {}),
    });
}

/** Why a host the role's selector matches is passed over, or undefined when it may be picked. */
function passOver(
  h: HostView,
  taken: boolean,
  facts: HostFacts | undefined,
  needIds: readonly string[],
  f: Fences,
): Exclude<keyof PassedOver, 'selector'> | undefined {
  if (taken || h.claim) return 'claimed';
  if (!h.health.healthy) return 'unhealthy';
  if (!h.hasNetworkData) return 'noNetworkData';
  if (facts && (!facts.ok || needIds.some((id) => !facts.ips[id]))) return 'noNetworkData';
  const dom = f.key ? h.labels[f.key] : undefined;
  const theirDom = f.otherKey ? h.labels[f.otherKey] : undefined;
  if ((dom && (f.used.has(dom) || f.otherUsedMine.has(dom))) || (theirDom && f.otherUsedTheirs.has(theirDom)))
    return 'topology';
  return undefined;
}

/**
 * Fresh hosts are claimed only when the whole pick stands (unread Secrets make
 * it provisional: nothing fresh is claimed or counted until they are read);
 * failed hosts go back once their role is whole without them.
 */
function settleRoster(w: Working): Working {
  const { plan } = w;
  const whole = plan.shortfalls.length === 0 && plan.needFacts.length === 0;
  if (whole) plan.claims = w.fresh;
  for (const role of TENANT_ROLES) {
    if (!w.input.spec.nodes[role]) continue;
    const bad = w.failed.get(role) ?? [];
    const n = w.need.get(role) ?? { active: 0, standby: 0 };
    const roleWhole = whole || n.active + n.standby <= 0;
    const roster = [...(w.kept.get(role) ?? []), ...(whole ? w.fresh.filter((f) => f.role === role) : [])];
    if (roleWhole) {
      for (const b of bad) plan.releases.push({ ...b, cause: 'failedReplaced' });
      plan.roster.push(...roster);
    } else {
      plan.roster.push(...roster, ...bad);
    }
  }
  plan.roster.sort((a, b) => Number(a.standby) - Number(b.standby) || compareHosts(a.host, b.host));
  return w;
}

function labelsOf(hosts: readonly HostView[], r: HostRef): Record<string, string> {
  return hosts.find((h) => h.namespace === r.namespace && h.name === r.name)?.labels ?? {};
}
