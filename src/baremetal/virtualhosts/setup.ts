// The VirtualHostPool controller as the operator runs it: its wiring to the
// shared cache. The capability declares `virtualhostpool` with its RBAC
// (../rbac.ts) and loads this module when the controller runs.
import { BareMetalHosts } from '../../api/baremetal.ts';
import { VirtualHostPools } from '../../api/virtualhosts.ts';
import type { KubeClient } from '../../runtime/client.ts';
import type { ControllerHost } from '../../runtime/host.ts';
import { reconcilerDeps } from '../../runtime/host.ts';
import {
  annotationsChanged,
  anyOf,
  deletionOrFinalizersChanged,
  generationChanged,
  labelsChanged,
} from '../../runtime/predicates.ts';
import { DaemonSets, type K8sObject, Nodes, Pods, Secrets } from '../../runtime/resources.ts';
import type { VmHypervisorChoice } from '../options.ts';
import { VirtualHostPoolReconciler } from './controller.ts';
import type { HypervisorSource } from './hypervisors/hypervisor.ts';
import { publishedAgents } from './hypervisors/libvirt/hypervisors.ts';
import { publishedHypervisors } from './hypervisors/simulated/hypervisors.ts';
import { countPoolsFrom } from './metrics.ts';
import { AGENT_LABEL, AGENT_NAME, POOL_LABEL, type Pool } from './objects.ts';
import { selects } from './plan.ts';

// Declared with the capability (../rbac.ts); named here too for the suites that wire this controller.
export { virtualHostPoolRbac } from '../rbac.ts';

const VHP = VirtualHostPools.type;

export interface VirtualHostPoolSetup {
  /** Where VMs are defined; default: the simulated hypervisors of the BMC fleet the cluster publishes. */
  hypervisors?: HypervisorSource;
}

/**
 * The hypervisors --vm-hypervisors names; auto: the VM host agents where any
 * is published, else the BMC fleet, and while neither is found the pools'
 * DaemonSets run the agent (on a cluster without the fleet, agents come only
 * from them).
 */
export function hypervisorSource(
  client: KubeClient,
  choice: VmHypervisorChoice,
  agentImage?: string,
  libvirtDir?: string,
): HypervisorSource {
  if (choice === 'libvirt') return publishedAgents(client, agentImage, libvirtDir);
  if (choice === 'simulated') return publishedHypervisors(client);
  const agents = publishedAgents(client, agentImage, libvirtDir);
  const fleet = publishedHypervisors(client);
  return {
    name: 'the VM host agents, else the BMC fleet',
    missing: `${agents.missing}; ${fleet.missing}`,
    agentWhenNone: agents.agentWhenNone,
    find: async () => (await agents.find()) ?? fleet.find(),
  };
}

const poolKey = (obj: K8sObject) => {
  const name = obj.metadata?.labels?.[POOL_LABEL];
  return name ? [{ name, namespace: obj.metadata?.namespace }] : [];
};

export function setupVirtualHostPools(host: ControllerHost, opts: VirtualHostPoolSetup = {}): void {
  const r = new VirtualHostPoolReconciler(
    reconcilerDeps(host, 'nodewarden.dev/virtualhostpool'),
    opts.hypervisors ?? publishedHypervisors(host.client),
  );
  const agents = `${AGENT_LABEL}=${AGENT_NAME}`;
  countPoolsFrom(() => host.cache.list<Pool>(VHP));
  host
    .controller('virtualhostpool')
    .for(VHP, { predicates: [anyOf(generationChanged, deletionOrFinalizersChanged)] })
    .owns(BareMetalHosts.type)
    .owns(DaemonSets, { labelSelector: agents })
    // Only the pool's own Secrets are cached, not every Secret in the cluster.
    .owns(Secrets, { labelSelector: POOL_LABEL })
    .watches(Pods, poolKey, { labelSelector: agents })
    // A node joining or leaving a selector, or going: every pool it matches or held.
    .watches(
      Nodes,
      (node) =>
        host.cache
          .list<Pool>(VHP)
          .filter(
            (p) =>
              selects(p.spec.nodeSelector, node.metadata?.labels ?? {}) ||
              p.status?.hypervisors?.some((h) => h.node === node.metadata?.name),
          )
          .map((p) => ({ name: p.metadata.name!, namespace: p.metadata.namespace })),
      { predicates: [anyOf(labelsChanged, annotationsChanged, deletionOrFinalizersChanged)] },
    )
    .withWorkers(2)
    .complete((req, ctx) => r.reconcile(req, ctx));
}
