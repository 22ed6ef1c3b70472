// What a VirtualHostPool should have, as a pure function of the pool, the
// cluster's nodes and what exists already: which hypervisor nodes it uses,
// which VMs (hosts) should exist, which to make, and which to give up, each
// with the typed cause Events and logs switch on. The controller only
// observes, calls planPool, and applies.
import type { VirtualHostPoolSpecType } from '../../api/virtualhosts.ts';
import { isEmptySelector, matchesLabelSelector } from '../../runtime/label-selector.ts';

export interface NodeView {
  name: string;
  labels: Record<string, string>;
  /** Being deleted: it hosts nothing new, and gives its VMs up. */
  deleting?: boolean;
}

/** One VM of the pool, where it runs and what it is. */
export interface VmRef {
  node: string;
  flavor: string;
  index: number;
}

export interface DesiredVm extends VmRef {
  /** `<pool>-<node>-<flavor>-<index>`: the BareMetalHost's name. */
  name: string;
}

export type GiveUpCause = 'scaledDown' | 'flavorRemoved' | 'nodeLeft' | 'poolDeleted';

export interface PlanInput {
  pool: string;
  spec: Pick<VirtualHostPoolSpecType, 'nodeSelector' | 'nodes'>;
  /** The pool is being deleted: everything goes. */
  deleting: boolean;
  nodes: readonly NodeView[];
  /** Every VM that exists in any form (host, Secret, address, VM on a hypervisor). */
  existingVms: readonly VmRef[];
  /** Nodes that hold anything of the pool (a bridge address, a DHCP block, the annotation). */
  existingHypervisors: readonly string[];
  /** Nodes whose agent pod is ready: VMs are made only there. */
  agentReady: ReadonlySet<string>;
}

export interface PoolPlan {
  /** The selected nodes, sorted. */
  hypervisors: string[];
  /** Every VM that should exist, by node, flavor and index. */
  desired: DesiredVm[];
  /** Desired VMs whose node's agent is ready: these are made (or kept whole). */
  ready: DesiredVm[];
  /** Desired VMs waiting for their node's agent. */
  waiting: DesiredVm[];
  /** VMs to give up, highest index first. */
  giveUp: (DesiredVm & { cause: GiveUpCause })[];
  /** Nodes to release (bridge addresses, DHCP blocks, annotation). */
  releaseHypervisors: { node: string; cause: 'nodeLeft' | 'poolDeleted' }[];
}

export const vmName = (pool: string, vm: VmRef): string => `${pool}-${vm.node}-${vm.flavor}-${vm.index}`;

type Selector = VirtualHostPoolSpecType['nodeSelector'];

/** Whether a node's labels satisfy the selector, as the API server reads a LabelSelector. */
export function selects(selector: Selector, labels: Record<string, string>): boolean {
  // An empty selector would take every node; CEL refuses it, and so do we.
  if (isEmptySelector(selector)) return false;
  return matchesLabelSelector(selector, labels);
}

export function planPool(input: PlanInput): PoolPlan {
  const hypervisors = input.deleting
    ? []
    : input.nodes
        .filter((n) => !n.deleting && selects(input.spec.nodeSelector, n.labels))
        .map((n) => n.name)
        .sort();
  const flavors = new Map(input.spec.nodes.map((f) => [f.name, f.count]));
  const desired: DesiredVm[] = [];
  for (const node of hypervisors)
    for (const f of input.spec.nodes)
      for (let index = 0; index < f.count; index++) {
        const ref = { node, flavor: f.name, index };
        desired.push({ ...ref, name: vmName(input.pool, ref) });
      }
  const wanted = new Set(desired.map((d) => d.name));
  const selected = new Set(hypervisors);
  const seen = new Set<string>();
  const giveUp: PoolPlan['giveUp'] = [];
  for (const vm of input.existingVms) {
    const name = vmName(input.pool, vm);
    if (wanted.has(name) || seen.has(name)) continue;
    seen.add(name);
    const cause: GiveUpCause = input.deleting
      ? 'poolDeleted'
      : !selected.has(vm.node)
        ? 'nodeLeft'
        : !flavors.has(vm.flavor)
          ? 'flavorRemoved'
          : 'scaledDown';
    giveUp.push({ ...vm, name, cause });
  }
  // The highest-numbered go first, as a StatefulSet scales down.
  giveUp.sort((a, b) => b.index - a.index || a.name.localeCompare(b.name));
  const releaseHypervisors = [...new Set(input.existingHypervisors)]
    .filter((n) => !selected.has(n))
    .sort()
    .map((node) => ({ node, cause: input.deleting ? ('poolDeleted' as const) : ('nodeLeft' as const) }));
  return {
    hypervisors,
    desired,
    ready: desired.filter((d) => input.agentReady.has(d.node)),
    waiting: desired.filter((d) => !input.agentReady.has(d.node)),
    giveUp,
    releaseHypervisors,
  };
}
