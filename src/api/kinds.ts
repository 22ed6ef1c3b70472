// The kinds the commands address, by their names only, and the few other names
// a command reads from their objects (labels, annotations, roles). A command that
// reads or lists objects needs the group, version and plural, not the schema:
// the definitions in src/api/<group>.ts build TypeBox schemas as they load (~370
// modules, ~0.15 s of `maintenance status`, whose whole goal is 1.5x `kubectl
// get`). Every definition takes its names from here, so the two cannot differ;
// test/unit/cmd/command-footprint.test.ts holds each command to its own modules.
import type { ResourceRef } from './crd.ts';

export interface KindNames extends ResourceRef {
  scope: 'Cluster' | 'Namespaced';
}

function kind(group: string, version: string, kind: string, plural: string, scope: KindNames['scope']) {
  return { group, version, kind, plural, scope, namespaced: scope === 'Namespaced' } satisfies KindNames;
}

const MAINTENANCE = 'maintenance.nodewarden.dev';
const UPGRADE = 'upgrade.nodewarden.dev';
const BAREMETAL = 'baremetal.nodewarden.dev';
const KVM = 'kvm.nodewarden.dev';
/** metal3's own group: BareMetalHost is the ecosystem's kind, not ours. */
const METAL3 = 'metal3.io';

export const NodeMaintenanceKind = kind(
  MAINTENANCE,
  'v1alpha1',
  'NodeMaintenance',
  'nodemaintenances',
  'Cluster',
);
export const NodeVersionKind = kind(UPGRADE, 'v1alpha1', 'NodeVersion', 'nodeversions', 'Cluster');
export const ScalingGroupKind = kind(UPGRADE, 'v1alpha1', 'ScalingGroup', 'scalinggroups', 'Cluster');
export const PendingNodeKind = kind(UPGRADE, 'v1alpha1', 'PendingNode', 'pendingnodes', 'Cluster');
export const AutoscalingStrategyKind = kind(
  UPGRADE,
  'v1alpha1',
  'AutoscalingStrategy',
  'autoscalingstrategies',
  'Cluster',
);

export const BareMetalHostKind = kind(METAL3, 'v1alpha1', 'BareMetalHost', 'baremetalhosts', 'Namespaced');
export const VirtualHostPoolKind = kind(
  BAREMETAL,
  'v1alpha1',
  'VirtualHostPool',
  'virtualhostpools',
  'Namespaced',
);
export const IPPoolKind = kind(BAREMETAL, 'v1alpha1', 'IPPool', 'ippools', 'Namespaced');
export const TenantClusterKind = kind(BAREMETAL, 'v1alpha1', 'TenantCluster', 'tenantclusters', 'Namespaced');
export const KVMClusterKind = kind(KVM, 'v1alpha1', 'KVMCluster', 'kvmclusters', 'Namespaced');

/** The label nodewarden's simulated fleet puts a host's rack under (a topology key for tenant clusters). */
export const RACK_LABEL = 'topology.nodewarden.dev/rack';

/** Annotation asking for a power cycle (metal3's own): its presence reboots the host once. */
export const REBOOT_ANNOTATION = 'reboot.metal3.io';

/** The roles a tenant cluster's hosts play, in the order they are scheduled. */
export const TENANT_ROLES = ['ControlPlane', 'Worker'] as const;
