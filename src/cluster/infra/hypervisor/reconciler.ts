// The hypervisor's loop: on every change of a VM pod or a namespace, a fault,
// a setting, and when a boot falls due, it folds the management cluster into
// the state, plans (planner.ts) and starts each action not already under way.
// Actions on different clusters and different Nodes run side by side; a
// finished one asks for another pass. Level-based: a pass after a restart, or
// after any number of missed events, sees the same world and does the same.
import type { Informer } from '../../../runtime/informer.ts';
import type { Logger } from '../../../runtime/log.ts';
import type { K8sObject } from '../../../runtime/resources.ts';
import { actionKey, type HypervisorAction, planHypervisor } from './planner.ts';
import type { HypervisorState } from './state.ts';
import { observePod, type PodLike, type VmDefaults } from './vm-pods.ts';
import type { WorkloadClusters } from './workloads.ts';

// A control plane that failed to start is tried again this much later.
const START_RETRY_MS = 5000;
// A failed Node or Secret write is tried again this much later.
const ACTION_RETRY_MS = 2000;

export interface ReconcilerOptions {
  state: HypervisorState;
  workloads: WorkloadClusters;
  pods: Informer<PodLike>;
  namespaces: Informer<K8sObject>;
  /** The management cluster's real nodes (nodewarden.dev/real): VM pods there are not simulated. */
  realNodes: Informer<K8sObject>;
  defaults: VmDefaults;
  log: Logger;
  clock?: () => number;
}

export class HypervisorReconciler {
  private readonly o: ReconcilerOptions;
  private readonly clock: () => number;
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt: number | undefined;
  private scheduled = false;
  private stopped = false;
  private readonly warned = new Set<string>();

  constructor(o: ReconcilerOptions) {
    this.o = o;
    this.clock = o.clock ?? Date.now;
  }

  /** Asks for a pass soon (passes asked for together run once). */
  kick(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pass();
    });
  }

  /** No more passes; resolves once the actions under way have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled([...this.inFlight.values()]);
  }

  private pass(): void {
    const { pods, namespaces, realNodes } = this.o;
    if (this.stopped || ![pods, namespaces, realNodes].every((i) => i.hasSynced())) return;
    try {
      this.planAndAct();
    } catch (err) {
      // A pass runs from a timer: a throw would end the process. Log it and look again later.
      this.o.log.error({ err }, 'hypervisor pass failed; retrying');
      this.wakeAt(this.clock() + ACTION_RETRY_MS);
    }
  }

  private planAndAct(): void {
    const { state, defaults } = this.o;
    const now = this.clock();
    const real = new Set(this.o.realNodes.list().map((n) => n.metadata?.name ?? ''));
    const pods = [];
    for (const p of this.o.pods.list()) {
      const pod = observePod(p, defaults, real);
      if (!pod) continue;
      for (const problem of pod.problems) this.warnOnce(`${pod.namespace}/${pod.name}: ${problem}`);
      pods.push(pod);
    }
    const live = new Set(
      this.o.namespaces
        .list()
        .filter((n) => !n.metadata?.deletionTimestamp)
        .map((n) => n.metadata?.name ?? ''),
    );
    state.observe({ pods, liveNamespaces: live }, now);
    const plan = planHypervisor({
      vms: state.vmList(),
      clusters: state.clusterList(),
      faults: state.getFaults(),
      now,
    });
    for (const action of plan.actions) {
      const key = actionKey(action);
      if (this.inFlight.has(key)) continue;
      const run = this.act(action).finally(() => {
        this.inFlight.delete(key);
        this.kick();
      });
      this.inFlight.set(key, run);
    }
    this.wakeAt(plan.wakeAt);
  }

  private wakeAt(at: number | undefined): void {
    if (at === undefined || (this.timerAt !== undefined && this.timerAt <= at)) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timerAt = undefined;
        this.pass();
      },
      Math.max(0, at - this.clock()),
    );
  }

  private async act(a: HypervisorAction): Promise<void> {
    const { state, workloads, log } = this.o;
    try {
      switch (a.kind) {
        case 'startControlPlane': {
          state.controlPlaneStarting(a.cluster);
          const began = this.clock();
          log.info({ cluster: a.cluster }, 'starting the workload control plane');
          const server = await workloads.start(a.cluster);
          state.controlPlaneRunning(a.cluster, server);
          log.info(
            { cluster: a.cluster, server, seconds: (this.clock() - began) / 1000 },
            'workload control plane runs',
          );
          return;
        }
        case 'writeKubeconfig': {
          const ref = state.cluster(a.cluster)?.kubeconfigSecret;
          if (!ref) return;
          await workloads.writeKubeconfig(a.cluster, ref);
          state.kubeconfigWritten(a.cluster);
          log.info({ cluster: a.cluster, secret: `${ref.namespace}/${ref.name}` }, 'wrote the kubeconfig');
          return;
        }
        case 'bootVm': {
          const vm = state.vm(a.uid);
          if (!vm) return;
          await workloads.bootNode(a.cluster, vm);
          state.vmBooted(a.uid);
          log.info({ cluster: a.cluster, vm: `${vm.namespace}/${vm.name}`, role: vm.role }, 'VM booted');
          return;
        }
        case 'powerOff': {
          await workloads.powerOffNode(a.cluster, a.node);
          state.vmPoweredOff(a.uid);
          log.info({ cluster: a.cluster, node: a.node }, 'VM off: its Node no longer reports');
          return;
        }
        case 'removeCluster': {
          const ref = state.cluster(a.cluster)?.kubeconfigSecret;
          await workloads.remove(a.cluster, ref);
          state.clusterRemoved(a.cluster);
          log.info({ cluster: a.cluster }, 'namespace gone: removed the workload cluster');
          return;
        }
      }
    } catch (err) {
      log.error({ err, action: a.kind, cluster: a.cluster }, 'hypervisor action failed; retrying');
      if (a.kind === 'startControlPlane') state.controlPlaneFailed(a.cluster, this.clock() + START_RETRY_MS);
      else await new Promise((r) => setTimeout(r, ACTION_RETRY_MS));
    }
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.o.log.warn({ problem: message }, 'VM pod annotation ignored; using a default');
  }
}
