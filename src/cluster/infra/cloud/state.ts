// The simulated cloud's state: scaling groups and their instances, kept in
// memory and advanced by an explicit clock (every operation takes `now`), so
// tests drive it without timers. Fault injection and randomness come from a
// seeded generator, so a run with the same seed and calls repeats exactly.
// The whole state round-trips through a JSON snapshot, so the cloud survives
// its process being stopped with the cluster and started again.

import { Listeners } from '../kit/listeners.ts';
import { Mulberry32 } from '../kit/random.ts';
import {
  type ApiFault,
  copyFaults,
  type Faults,
  type FaultsPatch,
  mergeFaults,
  noFaults,
  takeApiFault,
  takeNeverJoin,
} from './faults.ts';
import type { GroupSpec, Instance, ScalingGroup, Settings } from './protocol.ts';
import { providerIDOf } from './provider-id.ts';

export { seededRandom } from '../kit/random.ts';
export type { ApiFault, Faults, FaultsPatch } from './faults.ts';
export type { GroupRole, GroupSpec, Instance, InstanceState, ScalingGroup, Settings } from './protocol.ts';
export { PROVIDER_ID_SCHEME, parseProviderID, providerIDOf } from './provider-id.ts';

export const DEFAULT_BOOT_DELAY_MS = 5000;
/** Longer boots than this are a typo, not a simulation. */
const MAX_BOOT_DELAY_MS = 3_600_000;

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

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export type InstanceListener = (event: 'ready' | 'deleted', instance: Instance) => void;

/** Everything the cloud knows, as JSON. */
export interface CloudSnapshot {
  version: 1;
  defaultCluster: string;
  settings: Settings;
  /** The generator's position, so names and faults go on as if the cloud never stopped. */
  random: number;
  groups: ScalingGroup[];
  instances: Instance[];
  faults: Faults;
  zoneCursor: Record<string, number>;
}

/** Where an already running machine joins the cloud as an instance (see adoptInstance). */
export interface AdoptedMachine {
  groupId: string;
  nodeName: string;
  zone: string;
  rack?: string;
  /** Defaults to the group's launch image and Kubernetes version. */
  image?: string;
  kubernetesVersion?: string;
}

export class CloudState {
  private bootDelay: number;
  private readonly random: Mulberry32;
  private readonly rand: () => number;
  private readonly defaultCluster: string;
  private readonly groups = new Map<string, ScalingGroup>();
  private readonly instances = new Map<string, Instance>();
  private readonly instanceEvents = new Listeners<Parameters<InstanceListener>>();
  private readonly changes = new Listeners<[]>();
  private faults: Faults = noFaults();
  private readonly zoneCursor = new Map<string, number>();

  constructor(opts: CloudStateOptions = {}) {
    this.bootDelay = checkBootDelay(opts.bootDelayMs ?? DEFAULT_BOOT_DELAY_MS);
    this.random = new Mulberry32(opts.seed ?? 1);
    this.rand = () => this.random.next();
    this.defaultCluster = opts.cluster ?? 'nodewarden';
  }

  /** Time from createInstance to Ready for instances created from now on. */
  get bootDelayMs(): number {
    return this.bootDelay;
  }

  getSettings(): Settings {
    return { bootDelayMs: this.bootDelay };
  }

  /** Changes runtime settings; instances already booting keep the time they were given. */
  setSettings(patch: Partial<Settings>): Settings {
    if (patch.bootDelayMs !== undefined) {
      this.bootDelay = checkBootDelay(patch.bootDelayMs);
      this.changed();
    }
    return this.getSettings();
  }

  /** Called when an instance becomes Ready and when one is deleted. */
  onInstance(listener: InstanceListener): () => void {
    return this.instanceEvents.add(listener);
  }

  /** Called after anything in the state changed (what a snapshot holds); for persistence. */
  onChange(listener: () => void): () => void {
    return this.changes.add(listener);
  }

  private emit(event: 'ready' | 'deleted', instance: Instance): void {
    this.instanceEvents.emit(event, { ...instance });
  }

  private changed(): void {
    this.changes.emit();
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
      ...(spec.racksPerZone ? { racksPerZone: spec.racksPerZone } : {}),
      ...(spec.labels ? { labels: { ...spec.labels } } : {}),
      instances: [],
    };
    this.groups.set(group.id, group);
    this.changed();
    return this.copyGroup(group);
  }

  private copyGroup(g: ScalingGroup): ScalingGroup {
    const copy = { ...g, zones: [...g.zones], instances: [...g.instances] };
    if (g.labels) copy.labels = { ...g.labels };
    return copy;
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
    this.changed();
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
      for (let k = 0; k < 5; k++) suffix += ALPHABET[Math.floor(this.rand() * ALPHABET.length)];
      const name = `${group.name}-${suffix}`;
      if (!this.instances.has(providerIDOf(group.id, name))) return name;
    }
  }

  /** The next zone and rack of the group, round-robin as the fleet's nodes are laid out. */
  private nextPlace(g: ScalingGroup): { zone: string; rack?: string } {
    const cursor = this.zoneCursor.get(g.id) ?? 0;
    this.zoneCursor.set(g.id, cursor + 1);
    const zone = g.zones[cursor % g.zones.length] ?? 'nw-zone-a';
    if (!g.racksPerZone) return { zone };
    return { zone, rack: `${zone}-rack-${Math.floor(cursor / g.zones.length) % g.racksPerZone}` };
  }

  /** Adds an instance booted from the group's current launch image; Ready after the boot delay. */
  createInstance(groupId: string, now: number): Instance {
    const g = this.mustGroup(groupId);
    const nodeName = this.newName(g);
    const providerID = providerIDOf(g.id, nodeName);
    const place = this.nextPlace(g);
    const neverJoins = takeNeverJoin(this.faults, g.id, this.rand);
    const instance: Instance = {
      providerID,
      groupId: g.id,
      nodeName,
      image: g.launchImage,
      kubernetesVersion: g.kubernetesVersion,
      ...place,
      state: 'Creating',
      createdAt: now,
      readyAt: neverJoins ? undefined : now + this.bootDelay + this.faults.slowBootMs,
      deletedAt: undefined,
    };
    this.instances.set(providerID, instance);
    g.instances.push(providerID);
    this.changed();
    return { ...instance };
  }

  /**
   * Records a machine that runs already (a node the cluster was created with) as a
   * Ready instance of its group. Its Node exists, so no 'ready' event is emitted.
   * Adopting the same machine again returns the instance unchanged.
   */
  adoptInstance(m: AdoptedMachine, now: number): Instance {
    const g = this.mustGroup(m.groupId);
    if (!DNS_LABEL.test(m.nodeName)) {
      throw new CloudStateError(400, `node name "${m.nodeName}" must be a DNS label`);
    }
    const providerID = providerIDOf(g.id, m.nodeName);
    const known = this.instances.get(providerID);
    if (known) {
      if (known.state === 'Terminated') {
        throw new CloudStateError(409, `instance "${providerID}" was terminated; it cannot be adopted`);
      }
      return { ...known };
    }
    // Keep the round-robin going from where the adopted machines leave it.
    this.zoneCursor.set(g.id, (this.zoneCursor.get(g.id) ?? 0) + 1);
    const instance: Instance = {
      providerID,
      groupId: g.id,
      nodeName: m.nodeName,
      image: m.image ?? g.launchImage,
      kubernetesVersion: m.kubernetesVersion ?? g.kubernetesVersion,
      zone: m.zone,
      ...(m.rack ? { rack: m.rack } : {}),
      state: 'Ready',
      createdAt: now,
      readyAt: now,
      deletedAt: undefined,
    };
    this.instances.set(providerID, instance);
    g.instances.push(providerID);
    this.changed();
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
    this.changed();
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
    if (changed.length > 0) this.changed();
    for (const i of changed) this.emit('ready', i);
    return changed;
  }

  getFaults(): Faults {
    return copyFaults(this.faults);
  }

  /** Merges fault settings; `neverJoinNext` counts are added per group. */
  setFaults(patch: FaultsPatch): Faults {
    try {
      this.faults = mergeFaults(this.faults, patch);
    } catch (err) {
      if (err instanceof RangeError) throw new CloudStateError(400, err.message);
      throw err;
    }
    this.changed();
    return this.getFaults();
  }

  clearFaults(): void {
    this.faults = noFaults();
    this.changed();
  }

  /** How long every API call waits before it is answered (the slowCallsMs fault). */
  callDelayMs(): number {
    return this.faults.slowCallsMs;
  }

  /** Consumed once per API call: the error that call should fail with, if any. */
  nextApiFault(): ApiFault | undefined {
    const before = this.faults.throttleNextCalls + this.faults.failNextCalls;
    const fault = takeApiFault(this.faults, this.rand);
    if (this.faults.throttleNextCalls + this.faults.failNextCalls !== before) this.changed();
    return fault;
  }

  snapshot(): CloudSnapshot {
    return {
      version: 1,
      defaultCluster: this.defaultCluster,
      settings: this.getSettings(),
      random: this.random.position,
      groups: [...this.groups.values()].map((g) => this.copyGroup(g)),
      instances: [...this.instances.values()].map((i) => ({ ...i })),
      faults: this.getFaults(),
      zoneCursor: Object.fromEntries(this.zoneCursor),
    };
  }

  /** The state a snapshot describes; instances still booting keep the time they are due. */
  static restore(s: CloudSnapshot): CloudState {
    if (s.version !== 1) throw new Error(`unknown simulated cloud snapshot version ${String(s.version)}`);
    const state = new CloudState({ bootDelayMs: s.settings.bootDelayMs, cluster: s.defaultCluster });
    state.random.position = s.random >>> 0;
    for (const g of s.groups) state.groups.set(g.id, state.copyGroup(g));
    // JSON has no undefined: a missing readyAt is an instance that never joins.
    for (const i of s.instances) {
      state.instances.set(i.providerID, {
        ...i,
        readyAt: i.readyAt ?? undefined,
        deletedAt: i.deletedAt ?? undefined,
      });
    }
    state.faults = mergeFaults(noFaults(), s.faults);
    for (const [id, n] of Object.entries(s.zoneCursor)) state.zoneCursor.set(id, n);
    return state;
  }
}

function checkBootDelay(ms: unknown): number {
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0 || ms > MAX_BOOT_DELAY_MS) {
    throw new CloudStateError(
      400,
      `bootDelayMs must be a whole number of milliseconds from 0 to ${MAX_BOOT_DELAY_MS}`,
    );
  }
  return ms;
}
