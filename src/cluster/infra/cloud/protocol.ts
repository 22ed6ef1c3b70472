// The simulated cloud's wire protocol: where it publishes itself and the JSON
// shapes its HTTP API (http-api.ts) takes and returns. This is all a client
// outside the simulator may know of it; the operator's provider adapter
// (src/upgrade/providers/simulated/) speaks it as a real cloud's SDK speaks
// that cloud's API.

/**
 * Its name in the simulator kit's endpoint discovery (kit/discovery.ts): the cloud
 * publishes itself in kube-system/nodewarden-simulated-cloud.
 */
export const CLOUD_SIMULATOR = 'cloud';

/** What the cloud publishes there. */
export interface SimulatedCloudEndpoint {
  /** Base URL of the cloud API, e.g. http://127.0.0.1:41234. */
  endpoint: string;
  /** The cluster id its scaling groups are tagged with (listScalingGroups). */
  cluster: string;
}

/** An instance's state, as the cloud reports it. */
export type InstanceState =
  | 'Unknown'
  | 'Creating'
  | 'Ready'
  | 'Stopped'
  | 'Terminating'
  | 'Terminated'
  | 'Failed';

export type GroupRole = 'ControlPlane' | 'Worker';

export interface GroupSpec {
  /** The cloud's id of the group; a DNS label, used in provider IDs. */
  id: string;
  /** Defaults to the id; also the pool label of the group's nodes. */
  name?: string;
  role: GroupRole;
  launchImage: string;
  kubernetesVersion: string;
  /** The cluster the group belongs to (what listScalingGroups filters by). */
  cluster?: string;
  instanceType?: string;
  zones?: string[];
  cpu?: string;
  memory?: string;
  pods?: number;
  /** Racks per zone; instances are spread over them as the fleet's nodes are. */
  racksPerZone?: number;
  /** Extra labels of the group's nodes (a pool's `prefix/name=value` labels). */
  labels?: Record<string, string>;
}

export interface ScalingGroup {
  id: string;
  name: string;
  role: GroupRole;
  cluster: string;
  launchImage: string;
  kubernetesVersion: string;
  instanceType: string;
  zones: string[];
  cpu: string;
  memory: string;
  pods: number;
  racksPerZone?: number;
  labels?: Record<string, string>;
  /** providerIDs of the group's instances that are not Terminated, oldest first. */
  instances: string[];
}

export interface Instance {
  providerID: string;
  groupId: string;
  nodeName: string;
  image: string;
  kubernetesVersion: string;
  zone: string;
  /** The rack within the zone, when the group has racks. */
  rack?: string;
  state: InstanceState;
  createdAt: number;
  /** When the instance is due to become Ready, or became Ready; undefined if it never joins. */
  readyAt: number | undefined;
  deletedAt: number | undefined;
}

/** Runtime settings, changed over the API without restarting the cloud. */
export interface Settings {
  bootDelayMs: number;
}
