// ScalingGroup discovery: keeps one ScalingGroup object per cloud scaling group
// of this cluster. Every so often, and whenever a Node comes or goes (a sign
// the groups may have changed), it lists the cloud's groups, creates the
// objects that are missing and deletes the ones it created for groups that no
// longer exist. Objects a user made are never deleted, and a group a user
// already covers gets no second object.
// Anchor: Constellation's sgreconciler (upgrades.md §3), which also deletes
// hand-made ScalingGroups whose group it does not list.
import { createHash } from 'node:crypto';
import { type ScalingGroup, ScalingGroups } from '../../api/upgrade.ts';
import { isConflict, isNotFound } from '../../runtime/errors.ts';
import type { ControllerHost, ReconcilerDeps } from '../../runtime/host.ts';
import { done, type ReconcileContext, type Result } from '../../runtime/reconcile.ts';
import { type K8sObject, Nodes } from '../../runtime/resources.ts';
import { Upgrade } from '../names.ts';
import { CloudError, type CloudProvider, type ScalingGroupInfo } from '../providers/interface.ts';

const SG = ScalingGroups.type;

/** The label on ScalingGroups discovery made, and may therefore delete. */
export const DISCOVERED_LABEL = `${Upgrade.group}/discovered`;
/** The anchor's period. */
export const DISCOVERY_INTERVAL_MS = 15 * 60_000;
/** The one request the timer and Node events enqueue; "~" cannot start an object name, so it names no object. */
export const DISCOVERY_KEY = '~discover-scaling-groups';
/** Bounds of a discovered group until someone sets real ones (the anchor's). */
const DISCOVERED_MIN = 1;
const DISCOVERED_MAX = 10;
const MAX_NAME = 63;

type ScalingGroupObject = ScalingGroup & K8sObject;

const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/**
 * A DNS-1123 label for a cloud group's name: lower case, runs of anything else
 * turned into one "-", at most 63 characters (a hash of the whole name keeps
 * truncated names apart).
 */
export function scalingGroupName(groupName: string): string {
  const base = groupName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (!base) return `group-${shortHash(groupName)}`;
  if (base.length <= MAX_NAME) return base;
  const head = base.slice(0, MAX_NAME - 9).replace(/-+$/, '');
  return `${head}-${shortHash(groupName)}`;
}

export interface DiscoveryPlan {
  create: ScalingGroupObject[];
  /** Names of discovered ScalingGroups whose group is gone, with their uids. */
  remove: { name: string; uid?: string }[];
}

/** What to create and delete so the discovered objects match the cloud's groups. Pure. */
export function planDiscovery(
  groups: readonly ScalingGroupInfo[],
  existing: readonly Pick<ScalingGroupObject, 'metadata' | 'spec'>[],
): DiscoveryPlan {
  const covered = new Set(existing.map((sg) => sg.spec.groupId));
  const taken = new Set(existing.map((sg) => sg.metadata.name));
  const create: ScalingGroupObject[] = [];
  for (const g of [...groups].sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0))) {
    if (covered.has(g.groupId)) continue;
    covered.add(g.groupId);
    let name = scalingGroupName(g.name || g.groupId);
    // Two groups whose names sanitise alike, or a user object already using the name.
    if (taken.has(name)) name = `${name.slice(0, MAX_NAME - 9).replace(/-+$/, '')}-${shortHash(g.groupId)}`;
    taken.add(name);
    create.push(
      ScalingGroups.make(
        { name, labels: { [DISCOVERED_LABEL]: 'true' } },
        {
          groupId: g.groupId,
          nodeVersion: Upgrade.defaultNodeVersion,
          role: g.role,
          autoscaling: false,
          min: DISCOVERED_MIN,
          max: DISCOVERED_MAX,
          ...(g.autoscalerGroupName ? { autoscalerGroupName: g.autoscalerGroupName } : {}),
        },
      ) as ScalingGroupObject,
    );
  }
  const live = new Set(groups.map((g) => g.groupId));
  const remove = existing
    .filter(
      (sg) =>
        sg.metadata.labels?.[DISCOVERED_LABEL] === 'true' &&
        !sg.metadata.deletionTimestamp &&
        !live.has(sg.spec.groupId),
    )
    .map((sg) => ({ name: sg.metadata.name!, uid: sg.metadata.uid }))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  return { create, remove };
}

export function setupScalingGroupDiscovery(
  host: ControllerHost,
  opts: { cloud: CloudProvider; clusterId: string; intervalMs?: number },
): void {
  const r = { client: host.client, cache: host.cache };
  // Read, not watched: which objects exist is looked up at each round.
  host.cache.informer(SG);
  const request = { name: DISCOVERY_KEY };
  const noUpdates = () => false;
  host
    .controller('scalinggroup-discovery')
    // The first round runs as soon as the controller starts, even in a cluster with no Nodes yet.
    .every(opts.intervalMs ?? DISCOVERY_INTERVAL_MS, request)
    // A Node added or deleted may mean a group appeared or went; its updates say nothing about groups.
    .watches(Nodes, () => [request], { predicates: [noUpdates] })
    .complete((_req, ctx) => discover(r, opts.cloud, opts.clusterId, ctx));
}

async function discover(
  r: Pick<ReconcilerDeps, 'client' | 'cache'>,
  cloud: CloudProvider,
  clusterId: string,
  ctx: ReconcileContext,
): Promise<Result> {
  let groups: ScalingGroupInfo[];
  try {
    groups = await cloud.listScalingGroups(clusterId);
  } catch (err) {
    if (!(err instanceof CloudError) || err.retryable) throw err;
    // Retrying soon will not help (bad credentials, unknown cluster): say so and try at the next period.
    ctx.log.error({ err, clusterId }, 'cannot list the cloud scaling groups');
    return done();
  }
  const plan = planDiscovery(groups, r.cache.list<ScalingGroupObject>(SG));
  for (const sg of plan.create) {
    // Already there: the cache had not seen it yet.
    if (await r.client.createIfAbsent(SG, sg)) {
      ctx.log.info({ scalingGroup: sg.metadata.name, groupId: sg.spec.groupId }, 'scaling group discovered');
    }
  }
  for (const { name, uid } of plan.remove) {
    try {
      // The uid precondition: never delete a same-named object made since we looked.
      await r.client.delete(SG, name, undefined, { preconditions: uid ? { uid } : undefined });
      ctx.log.info({ scalingGroup: name }, 'scaling group gone from the cloud; object deleted');
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
  return done(); // the timer brings the next round
}
