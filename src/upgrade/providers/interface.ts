// The cloud-provider interface rolling upgrades talk to: the seam between the
// upgrade controllers and a cloud. One implementation per cloud, each in its
// own folder beside this file (simulated/: the local cluster's simulated cloud;
// AWS auto scaling groups, GCP managed instance groups, Azure scale sets and
// Cluster API MachineDeployments would sit beside it), each depending on this
// file and none on another. It is what the Constellation node operator asks of its
// clouds, with the same meaning per method, plus a ListScalingGroups filter
// that is a parameter rather than a fixed tag.
//
// Implementers, please keep to these rules; the controllers rely on them:
// - Every method is safe to call again with the same arguments (a controller
//   restarted mid-way repeats its last call). deleteNode of an instance that
//   is already gone resolves; nodeState of an unknown providerID is 'Terminated'.
// - createNode returns as soon as the cloud has accepted the request and named
//   the instance; it does not wait for the instance to boot or join.
// - Throttling and transient failures throw CloudError with retryable=true; the
//   controller backs off. Anything else throws CloudError with retryable=false.
// - A change the cloud cannot make yet, because it is settling something that must
//   finish first, is not an error: the method answers a CloudDeferral, and the
//   controller asks again after it, without a Warning.

/** The instance states the anchor's PendingNode reports (cspState). */
export type InstanceState =
  | 'Unknown'
  | 'Creating'
  | 'Ready'
  | 'Stopped'
  | 'Terminating'
  | 'Terminated'
  | 'Failed';

export type GroupRole = 'ControlPlane' | 'Worker';

export interface ScalingGroupInfo {
  /** The cloud's id of the group (ASG name, MIG self link, VMSS resource id, …). */
  groupId: string;
  /** A short name for the ScalingGroup object. */
  name: string;
  role: GroupRole;
  /** The group's name as the cluster autoscaler knows it, if different. */
  autoscalerGroupName: string;
}

export interface CreatedNode {
  /** The Kubernetes node name the instance will register with. */
  nodeName: string;
  providerID: string;
}

/** One instance of a group, as the cloud lists it. */
export interface CloudInstance {
  providerID: string;
  /** The Kubernetes node name the instance registers (or will register) with. */
  nodeName: string;
  /** The image it was booted from. */
  image: string;
  state: InstanceState;
  /** When the cloud accepted it (epoch ms). */
  createdAt: number;
}

/** A scaling group as one read of the cloud shows it. */
export interface GroupListing {
  /** Its instances that are not Terminated. */
  instances: CloudInstance[];
  /**
   * When each launch it was asked for that `instances` shows none of yet was asked for (epoch
   * ms): a scale-up the cloud has made no instance of, or none with an id yet. Empty for clouds
   * whose instances are listed as soon as they are asked for.
   */
  requestedLaunches: number[];
}

export interface CloudProvider {
  /** The image the instance was booted from. */
  nodeImage(providerID: string): Promise<string>;
  /** The scaling group the instance belongs to. */
  scalingGroupId(providerID: string): Promise<string>;
  /** Adds one instance to the group, booted from the group's current launch image. */
  createNode(groupId: string): Promise<CreatedNode>;
  /**
   * The group in one read: its instances and the launches no instance answers yet. WHY: an
   * instance whose createNode answer was lost (the operator stopped before recording it) is
   * visible only here; asked for again, it would be a surge over the budget.
   */
  listGroup(groupId: string): Promise<GroupListing>;
  /** Removes the instance and shrinks its group by one. */
  deleteNode(providerID: string): Promise<void>;
  nodeState(providerID: string): Promise<InstanceState>;
  /** The image new instances of the group boot from. */
  scalingGroupImage(groupId: string): Promise<string>;
  /**
   * Switches the group's launch image. `kubernetesVersion` is a hint for clouds whose
   * instances install the kubelet at boot; clouds whose images bundle it ignore it.
   */
  setScalingGroupImage(
    groupId: string,
    image: string,
    kubernetesVersion?: string,
  ): Promise<CloudDeferral | undefined>;
  /** The Kubernetes version new instances of the group run, when the cloud decides it. */
  scalingGroupKubernetesVersion?(groupId: string): Promise<string | undefined>;
  /** The cluster's groups: those tagged for cluster `clusterId` in the cloud's own way. */
  listScalingGroups(clusterId: string): Promise<ScalingGroupInfo[]>;
  /** The cluster autoscaler's --cloud-provider value for this cloud. */
  autoscalingCloudProvider(): string;
}

/** What a provider factory builds: a cloud, and the cluster id it knows this cluster by when it says. */
export interface CloudConnection {
  cloud: CloudProvider;
  clusterId?: string;
}

/** A change the cloud put off (not refused): why, and when to ask again. */
export interface CloudDeferral {
  reason: string;
  retryAfterMs: number;
}

export class CloudError extends Error {
  readonly retryable: boolean;

  constructor(message: string, opts: { retryable: boolean; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.name = 'CloudError';
    this.retryable = opts.retryable;
  }
}
