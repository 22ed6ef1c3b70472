// ScalingGroupReconciler: keeps a cloud scaling group's launch image (and,
// where the cloud decides it, its Kubernetes version) on what the group's
// NodeVersion asks for, and reports the image in status.imageReference — the
// NodeVersion controller creates nodes in a group only once that matches.
// Anchor: the Constellation ScalingGroup controller (upgrades.md §3). Ours
// also compares the Kubernetes version (a Kubernetes-only upgrade would
// otherwise boot new nodes on the old kubelet forever), re-reads the image
// after switching it so status confirms what the cloud did, and re-checks
// every few minutes because nobody watches the cloud.
import {
  type NodeVersion,
  NodeVersions,
  type ScalingGroup,
  type ScalingGroupStatusType,
  ScalingGroups,
} from '../../api/upgrade.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { type ConditionStatus, setCondition } from '../../runtime/conditions.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import {
  type CacheReader,
  type ControllerHost,
  type ReconcilerDeps,
  reconcilerDeps,
} from '../../runtime/host.ts';
import { generationChanged } from '../../runtime/predicates.ts';
import {
  done,
  type ReconcileContext,
  type Request,
  type Result,
  requeueAfter,
} from '../../runtime/reconcile.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import { saveStatus } from '../../runtime/status.ts';
import { nodeVersionOf } from '../names.ts';
import { type CloudDeferral, CloudError, type CloudProvider } from '../providers/interface.ts';

const SG = ScalingGroups.type;
const NV = NodeVersions.type;
const BY_NODE_VERSION = 'scalinggroup.nodeVersion';

export const IMAGE_UP_TO_DATE = 'ImageUpToDate';
/** The condition's reason while the cloud puts a switch off (a CloudDeferral). */
export const SWITCH_DEFERRED = 'ImageSwitchDeferred';
/** The cloud is not watched: look again this often for a launch image changed behind our back. */
const RESYNC_MS = 10 * 60_000;
/** A switch the cloud accepted but does not show yet (eventually consistent APIs). */
const SWITCH_PENDING_MS = 5_000;
/** A cloud error retrying cannot fix (unknown group, bad image): the user has to act, so check rarely. */
const PERMANENT_ERROR_MS = 5 * 60_000;

type ScalingGroupObject = ScalingGroup & K8sObject;
type NodeVersionObject = NodeVersion & K8sObject;

/** Image references compare case-insensitively, as the anchor does (Azure ids come in any case). */
export function sameImage(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

/** "v1.37.1" and "1.37.1" are the same release. */
export function sameKubernetesVersion(a: string, b: string): boolean {
  const norm = (v: string) => v.trim().toLowerCase().replace(/^v/, '');
  return norm(a) === norm(b);
}

export interface LaunchConfig {
  image: string;
  /** Absent when the cloud does not decide it, or the NodeVersion does not ask for one. */
  kubernetesVersion?: string;
}

/** Whether the group's launch configuration must be switched to reach `target`. */
export function needsImageSwitch(current: LaunchConfig, target: LaunchConfig): boolean {
  if (!sameImage(current.image, target.image)) return true;
  return (
    target.kubernetesVersion !== undefined &&
    current.kubernetesVersion !== undefined &&
    !sameKubernetesVersion(current.kubernetesVersion, target.kubernetesVersion)
  );
}

const launchText = (c: LaunchConfig) =>
  c.kubernetesVersion ? `${c.image} (${c.kubernetesVersion})` : c.image;

export function setupScalingGroups(host: ControllerHost, opts: { cloud: CloudProvider }): void {
  const r = new ScalingGroupReconciler(reconcilerDeps(host, 'nodewarden.dev/scalinggroup'), opts.cloud);
  host.cache.addIndex<ScalingGroupObject>(SG, BY_NODE_VERSION, (sg) => [nodeVersionOf(sg)]);
  host
    .controller('scalinggroup')
    .for(SG, { predicates: [generationChanged] })
    // NodeVersion status moves all through a rollout; only its spec says which image to launch.
    .watches(
      NV,
      (nv) =>
        host.cache
          .byIndex<ScalingGroupObject>(SG, BY_NODE_VERSION, nv.metadata?.name ?? '')
          .map((sg) => ({ name: sg.metadata.name! })),
      { predicates: [generationChanged] },
    )
    // Cloud calls are slow; groups are few, so a handful of workers keeps them independent.
    .withWorkers(4)
    .complete((req, ctx) => r.reconcile(req, ctx));
}

interface ImageCondition {
  status: ConditionStatus;
  reason: string;
  message: string;
}

export class ScalingGroupReconciler {
  private readonly client: KubeClient;
  private readonly cache: CacheReader;
  private readonly cloud: CloudProvider;
  private readonly events: EventRecorder;

  constructor(ctx: ReconcilerDeps, cloud: CloudProvider) {
    this.client = ctx.client;
    this.cache = ctx.cache;
    this.cloud = cloud;
    this.events = ctx.events;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const sg = this.cache.get<ScalingGroupObject>(SG, req.name);
    if (!sg || sg.metadata.deletionTimestamp) return done();
    const groupId = sg.spec.groupId;
    const nvName = nodeVersionOf(sg);
    const nv = this.cache.get<NodeVersionObject>(NV, nvName);
    const target: LaunchConfig | undefined = nv && {
      image: nv.spec.image,
      kubernetesVersion: nv.spec.kubernetesVersion,
    };

    let current: LaunchConfig;
    try {
      current = await this.launchConfig(groupId, target?.kubernetesVersion !== undefined);
    } catch (err) {
      return this.cloudFailure(sg, err, 'GetImage');
    }
    if (!target) {
      // The NodeVersion watch brings us back when it is created.
      return this.save(sg, current.image, done(), {
        status: 'Unknown',
        reason: 'NodeVersionNotFound',
        message: `NodeVersion "${nvName}" does not exist; the launch image is left as it is`,
      });
    }
    if (!needsImageSwitch(current, target)) {
      return this.save(sg, current.image, requeueAfter(RESYNC_MS), upToDate(target, nvName));
    }

    try {
      const deferred = await this.cloud.setScalingGroupImage(groupId, target.image, target.kubernetesVersion);
      if (deferred) return this.deferred(sg, current, target, deferred);
      this.events.normal(
        sg,
        'ImageSwitched',
        'SetImage',
        `launch image of ${groupId}: ${launchText(current)} → ${launchText(target)} (NodeVersion ${nvName})`,
      );
      ctx.log.info({ groupId, from: current.image, to: target.image }, 'launch image switched');
      // Read back: status must say what the cloud launches, not what we asked for.
      current = await this.launchConfig(groupId, target.kubernetesVersion !== undefined);
    } catch (err) {
      return this.cloudFailure(sg, err, 'SetImage');
    }
    if (needsImageSwitch(current, target)) {
      return this.save(sg, current.image, requeueAfter(SWITCH_PENDING_MS), {
        status: 'False',
        reason: 'ImageSwitchPending',
        message: `asked the cloud to launch ${launchText(target)}; it still reports ${launchText(current)}`,
      });
    }
    return this.save(sg, current.image, requeueAfter(RESYNC_MS), upToDate(target, nvName));
  }

  private async launchConfig(groupId: string, withVersion: boolean): Promise<LaunchConfig> {
    const image = await this.cloud.scalingGroupImage(groupId);
    const kubernetesVersion =
      withVersion && this.cloud.scalingGroupKubernetesVersion
        ? await this.cloud.scalingGroupKubernetesVersion(groupId)
        : undefined;
    return kubernetesVersion ? { image, kubernetesVersion } : { image };
  }

  /**
   * The cloud put the switch off (it settles something first): asked again when it says, with
   * status saying why and one Normal Event per target, not a Warning per try.
   */
  private deferred(
    sg: ScalingGroupObject,
    current: LaunchConfig,
    target: LaunchConfig,
    d: CloudDeferral,
  ): Promise<Result> {
    const waiting = `launching ${launchText(target)} waits:`;
    const was = sg.status?.conditions?.find((c) => c.type === IMAGE_UP_TO_DATE);
    if (!(was?.reason === SWITCH_DEFERRED && was.message.startsWith(waiting)))
      this.events.normal(sg, SWITCH_DEFERRED, 'SetImage', `${waiting} ${d.reason}`);
    return this.save(sg, current.image, requeueAfter(d.retryAfterMs), {
      status: 'False',
      reason: SWITCH_DEFERRED,
      message: `${waiting} ${d.reason}`,
    });
  }

  /** Transient errors back off through the queue; permanent ones are reported and re-checked slowly. */
  private async cloudFailure(sg: ScalingGroupObject, err: unknown, action: string): Promise<Result> {
    if (!(err instanceof CloudError)) throw err;
    this.events.warning(sg, 'CloudError', action, err.message);
    if (err.retryable) throw err;
    return this.save(sg, sg.status?.imageReference, requeueAfter(PERMANENT_ERROR_MS), {
      status: 'False',
      reason: 'CloudError',
      message: err.message,
    });
  }

  /** Writes status only when it changed, so a steady group costs no writes. */
  private async save(
    sg: ScalingGroupObject,
    imageReference: string | undefined,
    result: Result,
    condition: ImageCondition,
  ): Promise<Result> {
    const status: ScalingGroupStatusType = { ...sg.status };
    if (imageReference !== undefined) status.imageReference = imageReference;
    status.conditions = setCondition(sg.status?.conditions, {
      type: IMAGE_UP_TO_DATE,
      ...condition,
      observedGeneration: sg.metadata.generation,
    });
    return saveStatus(this.client, SG, sg, status, result);
  }
}

function upToDate(target: LaunchConfig, nvName: string): ImageCondition {
  return {
    status: 'True',
    reason: 'ImageUpToDate',
    message: `the group launches ${launchText(target)}, as NodeVersion ${nvName} asks`,
  };
}
