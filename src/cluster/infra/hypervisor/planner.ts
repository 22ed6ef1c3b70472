// What the hypervisor does next, decided from its state alone: which control
// planes to start, which VMs' Nodes to make or power off, which clusters to
// remove, and when to look again. Pure; the process acts (process-main.ts).
import type { HypervisorFaults } from './protocol.ts';
import type { ClusterRecord, VmRecord } from './state.ts';

export type HypervisorAction =
  /** Create the cluster's control plane, or start it from its saved state. */
  | { kind: 'startControlPlane'; cluster: string }
  /** Write the cluster's kubeconfig into the Secret its master pod names. */
  | { kind: 'writeKubeconfig'; cluster: string }
  /** The VM booted: make (or revive) its Node in the workload cluster. */
  | { kind: 'bootVm'; cluster: string; uid: string; node: string }
  /** The VM is off or dead: its Node stops being Ready. */
  | { kind: 'powerOff'; cluster: string; uid: string; node: string }
  /** Its namespace is gone: stop and delete the control plane, delete the Secret. */
  | { kind: 'removeCluster'; cluster: string };

export interface HypervisorPlan {
  actions: HypervisorAction[];
  /** When a boot falls due or a failed start may be retried (ms); undefined: nothing timed. */
  wakeAt?: number;
}

export interface PlanInput {
  vms: readonly VmRecord[];
  clusters: readonly ClusterRecord[];
  faults: Pick<HypervisorFaults, 'neverBoot'>;
  now: number;
}

/** A Booting VM that may come up once its boot time has come. */
function bootable(vm: VmRecord, faults: PlanInput['faults']): boolean {
  return vm.state === 'Booting' && !vm.stuck && !faults.neverBoot.includes(vm.name);
}

export function planHypervisor({ vms, clusters, faults, now }: PlanInput): HypervisorPlan {
  const actions: HypervisorAction[] = [];
  let wakeAt: number | undefined;
  const wake = (at: number) => {
    wakeAt = wakeAt === undefined ? at : Math.min(wakeAt, at);
  };
  for (const c of clusters) {
    const mine = vms.filter((v) => v.cluster === c.cluster);
    // Every boot time wakes the loop, a hanging VM's too: the state records the hang then.
    for (const vm of mine) if (vm.state === 'Booting' && !vm.stuck && vm.bootsAt > now) wake(vm.bootsAt);
    if (c.state === 'Removing') {
      actions.push({ kind: 'removeCluster', cluster: c.cluster });
      continue;
    }
    const due = mine.filter((v) => bootable(v, faults) && v.bootsAt <= now);
    if (c.state === 'Stopped' || (c.state === 'Pending' && due.some((v) => v.role === 'master'))) {
      if (c.retryAt !== undefined && c.retryAt > now) wake(c.retryAt);
      else actions.push({ kind: 'startControlPlane', cluster: c.cluster });
      continue;
    }
    if (c.state !== 'Running') continue; // Starting, or Pending without a master due: workers wait
    if (c.kubeconfigSecret && !c.secretWritten) actions.push({ kind: 'writeKubeconfig', cluster: c.cluster });
    // A Node still held by a VM that went off must be powered off before a new VM of its name revives it.
    const poweringOff = new Set<string>();
    for (const vm of mine) {
      if ((vm.state === 'Off' || vm.state === 'Dead') && vm.node === 'made') {
        actions.push({ kind: 'powerOff', cluster: c.cluster, uid: vm.uid, node: vm.name });
        poweringOff.add(vm.name);
      }
    }
    for (const vm of due)
      if (vm.node === undefined && !poweringOff.has(vm.name))
        actions.push({ kind: 'bootVm', cluster: c.cluster, uid: vm.uid, node: vm.name });
  }
  return wakeAt === undefined ? { actions } : { actions, wakeAt };
}

/** Actions that must not run at the same time share a key: a cluster's own steps, or one Node's. */
export function actionKey(a: HypervisorAction): string {
  return a.kind === 'bootVm' || a.kind === 'powerOff'
    ? `node:${a.cluster}/${a.node}`
    : `cluster:${a.cluster}`;
}
