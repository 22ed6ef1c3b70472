// The hypervisor's memory: every VM (one per VM pod it has seen, by pod uid),
// every workload cluster with where its control plane stands, the faults and
// the settings. `observe` folds in what the management cluster shows (the VM
// pods, the live namespaces); the process reports what it did through the
// other methods; planner.ts decides what to do next. A snapshot of it is the
// daemon's state on disk.
import { Listeners } from '../kit/listeners.ts';
import type { HypervisorFaults, HypervisorSettings, Vm, VmState, WorkloadControlPlane } from './protocol.ts';
import type { ObservedPod, SecretRef, VmSpec } from './vm-pods.ts';

export const DEFAULT_BOOT_DELAY_MS = 2000;

/** VMs off for good kept per cluster for the console (see forgetOldOffVms). */
export const KEPT_OFF_VMS = 20;

export interface VmRecord extends Vm {
  uid: string;
  spec: VmSpec;
  /** failNextBoots took it: it never boots. */
  stuck?: boolean;
  /** Its Node in the workload cluster: made when it booted, off once powered off there. */
  node?: 'made' | 'off';
}

export type ControlPlaneState = WorkloadControlPlane['state'];

export interface ClusterRecord {
  cluster: string;
  namespace: string;
  state: ControlPlaneState;
  /** Its control plane was created once: there is state to start it from. */
  created: boolean;
  server?: string;
  kubeconfigSecret?: SecretRef;
  /** The kubeconfig is in the Secret (as of this run of the daemon). */
  secretWritten: boolean;
  /** After a failed start: not before then again (ms). */
  retryAt?: number;
}

export interface HypervisorSnapshot {
  vms: VmRecord[];
  clusters: ClusterRecord[];
  faults: HypervisorFaults;
  settings: HypervisorSettings;
}

export function noFaults(): HypervisorFaults {
  return { neverBoot: [], die: [], slowBoot: {}, failNextBoots: 0 };
}

/** What the management cluster shows: the VM pods, and which namespaces exist and are not being deleted. */
export interface Observation {
  pods: readonly ObservedPod[];
  liveNamespaces: ReadonlySet<string>;
}

export class HypervisorState {
  private readonly vms = new Map<string, VmRecord>();
  private readonly clusters = new Map<string, ClusterRecord>();
  private faults: HypervisorFaults = noFaults();
  private settings: HypervisorSettings = { bootDelayMs: DEFAULT_BOOT_DELAY_MS };
  private readonly changes = new Listeners<[]>();

  constructor(settings: Partial<HypervisorSettings> = {}) {
    this.settings = { ...this.settings, ...settings };
  }

  /**
   * The state a restarted daemon starts from: control planes that ran are
   * Stopped (they went down with the daemon) and the Secrets are written again.
   */
  static restore(s: HypervisorSnapshot): HypervisorState {
    const state = new HypervisorState(s.settings);
    state.faults = { ...noFaults(), ...s.faults };
    for (const vm of s.vms) state.vms.set(vm.uid, { ...vm });
    for (const c of s.clusters) {
      const { retryAt: _, server: _s, ...rest } = c;
      const state_ = c.state === 'Removing' ? 'Removing' : c.created ? 'Stopped' : 'Pending';
      state.clusters.set(c.cluster, { ...rest, state: state_, secretWritten: false });
    }
    return state;
  }

  snapshot(): HypervisorSnapshot {
    return {
      vms: [...this.vms.values()].map((v) => ({ ...v })),
      clusters: [...this.clusters.values()].map((c) => ({ ...c })),
      faults: this.getFaults(),
      settings: { ...this.settings },
    };
  }

  onChange(listener: () => void): () => void {
    return this.changes.add(listener);
  }

  vmList(): VmRecord[] {
    return [...this.vms.values()];
  }

  clusterList(): ClusterRecord[] {
    return [...this.clusters.values()];
  }

  vm(uid: string): VmRecord | undefined {
    return this.vms.get(uid);
  }

  cluster(id: string): ClusterRecord | undefined {
    return this.clusters.get(id);
  }

  /** Folds in the management cluster as it is now; returns whether anything changed. */
  observe(o: Observation, now: number): boolean {
    const before = JSON.stringify(this.snapshot());
    const seen = new Set<string>();
    for (const pod of o.pods) {
      if (!o.liveNamespaces.has(pod.namespace)) continue;
      seen.add(pod.uid);
      this.observeCluster(pod);
      this.observeVm(pod, now);
    }
    for (const vm of this.vms.values()) if (!seen.has(vm.uid) && vm.state !== 'Off') vm.state = 'Off';
    for (const c of this.clusters.values())
      if (!o.liveNamespaces.has(c.namespace) && c.state !== 'Removing') c.state = 'Removing';
    this.applyHangs(now);
    this.applyDeaths();
    this.forgetOldOffVms();
    const changed = JSON.stringify(this.snapshot()) !== before;
    if (changed) this.changes.emit();
    return changed;
  }

  private observeCluster(pod: ObservedPod): void {
    let c = this.clusters.get(pod.cluster);
    if (!c) {
      c = {
        cluster: pod.cluster,
        namespace: pod.namespace,
        state: 'Pending',
        created: false,
        secretWritten: false,
      };
      this.clusters.set(pod.cluster, c);
    }
    const ref = pod.kubeconfigSecret;
    if (ref && (ref.namespace !== c.kubeconfigSecret?.namespace || ref.name !== c.kubeconfigSecret?.name)) {
      c.kubeconfigSecret = ref;
      c.secretWritten = false;
    }
  }

  private observeVm(pod: ObservedPod, now: number): void {
    let vm = this.vms.get(pod.uid);
    if (!vm) {
      vm = {
        namespace: pod.namespace,
        name: pod.name,
        uid: pod.uid,
        cluster: pod.cluster,
        role: pod.role,
        host: pod.host ?? '',
        state: 'Pending',
        bootsAt: 0,
        spec: pod.spec,
      };
      this.vms.set(pod.uid, vm);
    }
    if (vm.state === 'Off' || vm.state === 'Dead') return;
    if (pod.finished) vm.state = 'Off';
    else if (vm.state === 'Pending' && pod.running) this.startBoot(vm, pod, now);
  }

  private startBoot(vm: VmRecord, pod: ObservedPod, now: number): void {
    const delay = this.faults.slowBoot[vm.name] ?? this.settings.bootDelayMs;
    vm.state = 'Booting';
    vm.host = pod.host ?? vm.host;
    vm.spec = pod.spec; // what the pod says when the VM starts is what it runs
    vm.bootsAt = now + delay;
    if (this.faults.failNextBoots > 0) {
      this.faults.failNextBoots--;
      vm.stuck = true;
    }
  }

  /**
   * VMs that are off with nothing left to do (their Node powered off, or never
   * made) are kept for the console, the last KEPT_OFF_VMS of each cluster: a
   * cluster upgraded many times would otherwise grow the snapshot for good.
   */
  private forgetOldOffVms(): void {
    const settled = new Map<string, string[]>();
    for (const vm of this.vms.values())
      if (vm.state === 'Off' && vm.node !== 'made')
        settled.set(vm.cluster, [...(settled.get(vm.cluster) ?? []), vm.uid]);
    for (const uids of settled.values()) for (const uid of uids.slice(0, -KEPT_OFF_VMS)) this.vms.delete(uid);
  }

  /** A VM the neverBoot fault names when its boot time comes hangs for good, like one failNextBoots took. */
  private applyHangs(now: number): void {
    for (const vm of this.vms.values())
      if (vm.state === 'Booting' && vm.bootsAt <= now && this.faults.neverBoot.includes(vm.name))
        vm.stuck = true;
  }

  /** The die fault: each VM it names that is on dies now. */
  private applyDeaths(): void {
    for (const vm of this.vms.values())
      if (this.faults.die.includes(vm.name) && (vm.state === 'Booting' || vm.state === 'Running'))
        vm.state = 'Dead';
  }

  // ---- what the process did ----

  controlPlaneStarting(id: string): void {
    this.updateCluster(id, { state: 'Starting' });
  }

  controlPlaneRunning(id: string, server: string): void {
    this.updateCluster(id, { state: 'Running', created: true, server, retryAt: undefined });
  }

  controlPlaneFailed(id: string, retryAt: number): void {
    const c = this.clusters.get(id);
    if (c?.state !== 'Starting') return;
    this.updateCluster(id, { state: c.created ? 'Stopped' : 'Pending', retryAt });
  }

  /** Every control plane went down with the daemon. */
  controlPlanesStopped(): void {
    for (const c of this.clusters.values())
      if (c.state === 'Running' || c.state === 'Starting')
        this.updateCluster(c.cluster, { state: c.created ? 'Stopped' : 'Pending', secretWritten: false });
  }

  kubeconfigWritten(id: string): void {
    this.updateCluster(id, { secretWritten: true });
  }

  vmBooted(uid: string): void {
    const vm = this.vms.get(uid);
    if (!vm) return;
    // Powered off or dead while its Node was being made: the Node is there all the same.
    if (vm.state === 'Booting') vm.state = 'Running';
    vm.node = 'made';
    this.changes.emit();
  }

  vmPoweredOff(uid: string): void {
    const vm = this.vms.get(uid);
    if (!vm) return;
    vm.node = 'off';
    this.changes.emit();
  }

  /** The cluster is gone: its control plane, its state, its Secret; its VMs are forgotten. */
  clusterRemoved(id: string): void {
    this.clusters.delete(id);
    for (const [uid, vm] of this.vms) if (vm.cluster === id) this.vms.delete(uid);
    this.changes.emit();
  }

  private updateCluster(id: string, patch: Partial<ClusterRecord>): void {
    const c = this.clusters.get(id);
    if (!c) return;
    Object.assign(c, patch);
    for (const [k, v] of Object.entries(patch)) if (v === undefined) delete c[k as keyof ClusterRecord];
    this.changes.emit();
  }

  // ---- the console ----

  getFaults(): HypervisorFaults {
    const f = this.faults;
    return {
      neverBoot: [...f.neverBoot],
      die: [...f.die],
      slowBoot: { ...f.slowBoot },
      failNextBoots: f.failNextBoots,
    };
  }

  /** Merges a patch (lists and the slow-boot map are replaced whole); RangeError on a bad one. */
  setFaults(patch: Record<string, unknown>): HypervisorFaults {
    const next = mergeFaults(this.faults, patch);
    this.faults = next;
    this.applyDeaths();
    this.changes.emit();
    return this.getFaults();
  }

  clearFaults(): HypervisorFaults {
    this.faults = noFaults();
    this.changes.emit();
    return this.getFaults();
  }

  getSettings(): HypervisorSettings {
    return { ...this.settings };
  }

  /** Changes the boot delay of VMs that start booting from now on. RangeError on a bad value. */
  setSettings(patch: Record<string, unknown>): HypervisorSettings {
    const unknown = Object.keys(patch).filter((k) => k !== 'bootDelayMs');
    if (unknown.length)
      throw new RangeError(`unknown settings: ${unknown.join(', ')}; the settings are bootDelayMs`);
    if (patch.bootDelayMs !== undefined)
      this.settings.bootDelayMs = wholeMs(patch.bootDelayMs, 'bootDelayMs');
    this.changes.emit();
    return this.getSettings();
  }
}

const FAULT_KEYS = ['neverBoot', 'die', 'slowBoot', 'failNextBoots'];

export function mergeFaults(f: HypervisorFaults, patch: Record<string, unknown>): HypervisorFaults {
  const unknown = Object.keys(patch).filter((k) => !FAULT_KEYS.includes(k));
  if (unknown.length)
    throw new RangeError(
      `unknown faults ${unknown.map((k) => `"${k}"`).join(', ')}; the faults are ${FAULT_KEYS.join(', ')}`,
    );
  const next = { ...f, neverBoot: [...f.neverBoot], die: [...f.die], slowBoot: { ...f.slowBoot } };
  if (patch.neverBoot !== undefined) next.neverBoot = names(patch.neverBoot, 'neverBoot');
  if (patch.die !== undefined) next.die = names(patch.die, 'die');
  if (patch.failNextBoots !== undefined) next.failNextBoots = wholeMs(patch.failNextBoots, 'failNextBoots');
  if (patch.slowBoot !== undefined) {
    const s = patch.slowBoot;
    if (typeof s !== 'object' || s === null || Array.isArray(s))
      throw new RangeError('slowBoot must be an object of pod name → milliseconds');
    next.slowBoot = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, wholeMs(v, `slowBoot.${k}`)]));
  }
  return next;
}

function names(v: unknown, what: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x.length > 0))
    throw new RangeError(`${what} must be a list of pod names`);
  return [...new Set(v as string[])];
}

function wholeMs(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new RangeError(`${what} must be a whole number >= 0`);
  return v;
}

/** The console's view of a VM. */
export function vmView(vm: VmRecord): Vm {
  const { namespace, name, cluster, role, host, state, bootsAt } = vm;
  return { namespace, name, cluster, role, host, state: state as VmState, bootsAt };
}

/** The console's view of a workload control plane. */
export function clusterView(c: ClusterRecord): WorkloadControlPlane {
  return {
    cluster: c.cluster,
    state: c.state,
    namespace: c.namespace,
    ...(c.server ? { server: c.server } : {}),
    ...(c.kubeconfigSecret && c.secretWritten
      ? { kubeconfigSecret: `${c.kubeconfigSecret.namespace}/${c.kubeconfigSecret.name}` }
      : {}),
  };
}
