// The VirtualHostPool controller as the operator runs it: its wiring to the
// shared cache and its least-privilege RBAC. The capability lists
// `virtualhostpool` (and `virtualHostsWebhook` from webhook.ts).
import { BareMetalHosts, METAL3_GROUP } from '../../api/baremetal.ts';
import { VIRTUAL_HOSTS_GROUP, VirtualHostPools } from '../../api/virtualhosts.ts';
import type { ControllerSpec } from '../../capability.ts';
import type { ControllerHost } from '../../runtime/host.ts';
import { reconcilerContext } from '../../runtime/host.ts';
import type { PolicyRule } from '../../runtime/policy-rule.ts';
import {
  annotationsChanged,
  anyOf,
  deletionOrFinalizersChanged,
  generationChanged,
  labelsChanged,
} from '../../runtime/predicates.ts';
import { DaemonSets, type K8sObject, Nodes, Pods, Secrets } from '../../runtime/resources.ts';
import type { BaremetalOptions } from '../options.ts';
import { VirtualHostPoolReconciler } from './controller.ts';
import { publishedFleet } from './fleet.ts';
import type { Hypervisor } from './hypervisor.ts';
import { countPoolsFrom } from './metrics.ts';
import { AGENT_LABEL, AGENT_NAME, POOL_LABEL, type Pool } from './objects.ts';
import { selects } from './plan.ts';

const VHP = VirtualHostPools.type;

export const virtualHostPoolRbac: PolicyRule[] = [
  {
    apiGroups: [VIRTUAL_HOSTS_GROUP],
    resources: ['virtualhostpools'],
    verbs: ['get', 'list', 'watch', 'patch', 'update'],
  },
  {
    apiGroups: [VIRTUAL_HOSTS_GROUP],
    resources: ['virtualhostpools/status'],
    verbs: ['get', 'patch', 'update'],
  },
  { apiGroups: [VIRTUAL_HOSTS_GROUP], resources: ['virtualhostpools/finalizers'], verbs: ['update'] },
  {
    apiGroups: [VIRTUAL_HOSTS_GROUP],
    resources: ['ippools'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
  },
  {
    apiGroups: [METAL3_GROUP],
    resources: ['baremetalhosts'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  },
  // get: a flavor's networkDataTemplate may live in any namespace.
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  {
    apiGroups: ['apps'],
    resources: ['daemonsets'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  // patch: the network-values annotation.
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch', 'patch'] },
  // The BMC fleet's endpoint, published in kube-system/nodewarden-simulated-bmc.
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
];

export interface VirtualHostPoolSetup {
  /** Where VMs are defined; default: the BMC fleet the cluster publishes. */
  hypervisor?: () => Promise<Hypervisor | undefined>;
}

const poolKey = (obj: K8sObject) => {
  const name = obj.metadata?.labels?.[POOL_LABEL];
  return name ? [{ name, namespace: obj.metadata?.namespace }] : [];
};

export function setupVirtualHostPools(host: ControllerHost, opts: VirtualHostPoolSetup = {}): void {
  const r = new VirtualHostPoolReconciler(
    reconcilerContext(host, 'nodewarden.dev/virtualhostpool'),
    opts.hypervisor ?? publishedFleet(host.client),
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

export const virtualhostpool: ControllerSpec<BaremetalOptions> = {
  name: 'virtualhostpool',
  description:
    'VirtualHostPool: VMs on hypervisor nodes, each a BareMetalHost with its addresses, Secrets and BMC (ViNO parity)',
  rbac: virtualHostPoolRbac,
  setup: (host) => setupVirtualHostPools(host),
};
