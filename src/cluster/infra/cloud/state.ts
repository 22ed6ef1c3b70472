// The simulated cloud's state: scaling groups and their instances, kept in
// memory and advanced by an explicit clock (every operation takes `now`), so
// tests drive it without timers. Fault injection and randomness come from a
// seeded generator, so a run with the same seed and calls repeats exactly.
import type { GroupRole, InstanceState } from '../../../upgrade/provider.ts';

export const PROVIDER_ID_SCHEME = 'nwsim://';

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
  state: InstanceState;
  createdAt: number;
  /** When the instance is due to become Ready, or became Ready; undefined if it never joins. */
  readyAt: number | undefined;
  deletedAt: number | undefined;
}

export interface Faults {
  /** Chance (0..1) that a new instance never becomes Ready. */
  neverJoinProbability: number;
  /** Per group id: how many of its next instances never become Ready. */
  neverJoinNext: Record<string, number>;
  /** Extra boot delay added to every new instance. */
  slowBootMs: number;
  /** The next N API calls fail with a retryable server error (503). */
  failNextCalls: number;
  /** The next N API calls are throttled (429). */
  throttleNextCalls: number;
  /** Chance (0..1) that any API call is throttled. */
  throttleProbability: number;
}

export type FaultsPatch = Partial<Faults>;

export type ApiFault = { status: 429 | 503; message: string };

export interface CloudStateOptions {
  /** Time from createInstance to Ready. Default 5000 ms. */
  bootDelayMs?: number;
  /** Seed of the generator behind names and probabilistic faults. Default 1. */
  seed?: number;
  /** The cluster new groups belong to when their spec names none. Default "nodewarden". */
  cluster?: string;
}

/** An operation the cloud refuses; `status` is the HTTP status the server answers with. */
export class CloudStateError extends Error {
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.name = 'CloudStateError';
    this.status = status;
  }
}

/** mulberry32: a tiny deterministic PRNG returning floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export function providerIDOf(groupId: string, instanceName: string): string {
  return `${PROVIDER_ID_SCHEME}${groupId}/${instanceName}`;
}

/** Splits `nwsim://<group>/<instance>`; undefined if it is not one of ours. */
export function parseProviderID(providerID: string): { groupId: string; instance: string } | undefined {
  if (!providerID.startsWith(PROVIDER_ID_SCHEME)) return undefined;
  const [groupId = '', instance = '', ...rest] = providerID.slice(PROVIDER_ID_SCHEME.length).split('/');
  if (rest.length > 0 || !groupId || !instance) return undefined;
  return { groupId, instance };
}

function noFaults(): Faults {
  return {
    neverJoinProbability: 0,
    neverJoinNext: {},
    slowBootMs: 0,
    failNextCalls: 0,
    throttleNextCalls: 0,
    throttleProbability: 0,
  };
}

export type InstanceListener = (event: 'ready' | 'deleted', instance: Instance) => void;

export class CloudState {
  readonly bootDelayMs: number;
  private readonly random: () => number;
  private readonly defaultCluster: string;
  private readonly groups = new Map<string, ScalingGroup>();
  private readonly instances = new Map<string, Instance>();
  private readonly listeners: InstanceListener[] = [];
  private faults: Faults = noFaults();
  private readonly zoneCursor = new Map<string, number>();

  constructor(opts: CloudStateOptions = {}) {
    this.bootDelayMs = opts.bootDelayMs ?? 5000;
    this.random = seededRandom(opts.seed ?? 1);
    this.defaultCluster = opts.cluster ?? 'nodewarden';
  }

  /** Called when an instance becomes Ready and when one is deleted. */
  onInstance(listener: InstanceListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  private emit(event: 'ready' | 'deleted', instance: Instance): void {
    for (const l of [...this.listeners]) l(event, { ...instance });
  }

  addGroup(spec: GroupSpec): ScalingGroup {
    if (!DNS_LABEL.test(spec.id)) throw new CloudStateError(400, `group id "${spec.id}" must be a DNS label`);
    if (this.groups.has(spec.id)) throw new CloudStateError(409, `group "${spec.id}" already exists`);
    if (spec.role !== 'ControlPlane' && spec.role !== 'Worker') {
      throw new CloudStateError(400, `group "${spec.id}": role must be ControlPlane or Worker`);
    }
    if (!spec.launchImage) throw new CloudStateError(400, `group "${spec.id}": launchImage is required`);
    const zones =
      spec.zones && spec.zones.length > 0 ? [...spec.zones] : ['nw-zone-a', 'nw-zone-b', 'nw-zone-c'];
    const group: ScalingGroup = {
      id: spec.id,
      name: spec.name ?? spec.id,
      role: spec.role,
      cluster: spec.cluster ?? this.defaultCluster,
      launchImage: spec.launchImage,
      kubernetesVersion: spec.kubernetesVersion,
      instanceType: spec.instanceType ?? (spec.role === 'ControlPlane' ? 'nw.control-4' : 'nw.standard-8'),
      zones,
      cpu: spec.cpu ?? '8',
      memory: spec.memory ?? '32Gi',
      pods: spec.pods ?? 110,
      instances: [],
    };
    this.groups.set(group.id, group);
    return this.copyGroup(group);
  }

  private copyGroup(g: ScalingGroup): ScalingGroup {
    return { ...g, zones: [...g.zones], instances: [...g.instances] };
  }

  private mustGroup(groupId: string): ScalingGroup {
    const g = this.groups.get(groupId);
    if (!g) throw new CloudStateError(404, `no group "${groupId}"`);
    return g;
  }

  getGroup(groupId: string): ScalingGroup | undefined {
    const g = this.groups.get(groupId);
    return g && this.copyGroup(g);
  }

  listGroups(cluster?: string): ScalingGroup[] {
    return [...this.groups.values()]
      .filter((g) => cluster === undefined || g.cluster === cluster)
      .map((g) => this.copyGroup(g));
  }

  setGroupImage(groupId: string, image: string, kubernetesVersion?: string): ScalingGroup {
    if (!image) throw new CloudStateError(400, 'image is required');
    const g = this.mustGroup(groupId);
    g.launchImage = image;
    if (kubernetesVersion) g.kubernetesVersion = kubernetesVersion;
    return this.copyGroup(g);
  }

  getInstance(providerID: string): Instance | undefined {
    const i = this.instances.get(providerID);
    return i && { ...i };
  }

  /** Every instance ever created, Terminated ones included, in creation order. */
  listInstances(groupId?: string): Instance[] {
    return [...this.instances.values()]
      .filter((i) => groupId === undefined || i.groupId === groupId)
      .map((i) => ({ ...i }));
  }

  private newName(group: ScalingGroup): string {
    for (;;) {
      let suffix = '';
      for (let k = 0; k < 5; k++) suffix += ALPHABET[Math.floor(this.random() * ALPHABET.length)];
      const name = `${group.name}-${suffix}`;
      if (!this.instances.has(providerIDOf(group.id, name))) return name;
    }
  }

  /** Adds an instance booted from the group's current launch image; Ready after the boot delay. */
  createInstance(groupId: string, now: number): Instance {
    const g = this.mustGroup(groupId);
    const nodeName = this.newName(g);
    const providerID = providerIDOf(g.id, nodeName);
    const cursor = this.zoneCursor.get(g.id) ?? 0;
    this.zoneCursor.set(g.id, cursor + 1);
    const pending = this.faults.neverJoinNext[g.id] ?? 0;
    let neverJoins = false;
    if (pending > 0) {
      neverJoins = true;
      if (pending === 1) delete this.faults.neverJoinNext[g.id];
      else this.faults.neverJoinNext[g.id] = pending - 1;
    } else if (this.faults.neverJoinProbability > 0 && this.random() < this.faults.neverJoinProbability) {
      neverJoins = true;
    }
    const instance: Instance = {
      providerID,
      groupId: g.id,
      nodeName,
      image: g.launchImage,
      kubernetesVersion: g.kubernetesVersion,
      zone: g.zones[cursor % g.zones.length] ?? 'nw-zone-a',
      state: 'Creating',
      createdAt: now,
      readyAt: neverJoins ? undefined : now + this.bootDelayMs + this.faults.slowBootMs,
      deletedAt: undefined,
    };
    this.instances.set(providerID, instance);
    g.instances.push(providerID);
    return { ...instance };
  }

  /**
   * Terminates an instance and shrinks its group. Idempotent: an instance already
   * Terminated stays so; an unknown providerID returns undefined.
   */
  deleteInstance(providerID: string, now = 0): Instance | undefined {
    const i = this.instances.get(providerID);
    if (!i) return undefined;
    if (i.state === 'Terminated') return { ...i };
    i.state = 'Terminated';
    i.deletedAt = now;
    const g = this.groups.get(i.groupId);
    if (g) g.instances = g.instances.filter((p) => p !== providerID);
    this.emit('deleted', i);
    return { ...i };
  }

  /** Advances Creating instances whose boot is due to Ready; returns those that changed. */
  tick(now: number): Instance[] {
    const changed: Instance[] = [];
    for (const i of this.instances.values()) {
      if (i.state === 'Creating' && i.readyAt !== undefined && i.readyAt <= now) {
        i.state = 'Ready';
        changed.push({ ...i });
      }
    }
    for (const i of changed) this.emit('ready', i);
    return changed;
  }

  getFaults(): Faults {
    return { ...this.faults, neverJoinNext: { ...this.faults.neverJoinNext } };
  }

  /** Merges fault settings; `neverJoinNext` counts are added per group. */
  setFaults(patch: FaultsPatch): Faults {
    const f = this.faults;
    const prob = (v: unknown, what: string) => {
      if (typeof v !== 'number' || !(v >= 0 && v <= 1))
        throw new CloudStateError(400, `${what} must be 0..1`);
      return v;
    };
    const count = (v: unknown, what: string) => {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
        throw new CloudStateError(400, `${what} must be a whole number >= 0`);
      }
      return v;
    };
    if (patch.neverJoinProbability !== undefined) {
      f.neverJoinProbability = prob(patch.neverJoinProbability, 'neverJoinProbability');
    }
    if (patch.throttleProbability !== undefined) {
      f.throttleProbability = prob(patch.throttleProbability, 'throttleProbability');
    }
    if (patch.slowBootMs !== undefined) f.slowBootMs = count(patch.slowBootMs, 'slowBootMs');
    if (patch.failNextCalls !== undefined) f.failNextCalls = count(patch.failNextCalls, 'failNextCalls');
    if (patch.throttleNextCalls !== undefined) {
      f.throttleNextCalls = count(patch.throttleNextCalls, 'throttleNextCalls');
    }
    if (patch.neverJoinNext !== undefined) {
      for (const [groupId, n] of Object.entries(patch.neverJoinNext)) {
        const total = (f.neverJoinNext[groupId] ?? 0) + count(n, `neverJoinNext.${groupId}`);
        if (total > 0) f.neverJoinNext[groupId] = total;
      }
    }
    return this.getFaults();
  }

  clearFaults(): void {
    this.faults = noFaults();
  }

  /** Consumed once per API call: the error that call should fail with, if any. */
  nextApiFault(): ApiFault | undefined {
    const f = this.faults;
    if (f.throttleNextCalls > 0) {
      f.throttleNextCalls--;
      return { status: 429, message: 'rate exceeded (injected)' };
    }
    if (f.failNextCalls > 0) {
      f.failNextCalls--;
      return { status: 503, message: 'service unavailable (injected)' };
    }
    if (f.throttleProbability > 0 && this.random() < f.throttleProbability) {
      return { status: 429, message: 'rate exceeded (injected)' };
    }
    return undefined;
  }
}
