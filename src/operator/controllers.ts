// Every controller the operator can run. A capability adds one entry: its
// name (for --controllers), the RBAC rules it needs (make manifests turns them
// into the ClusterRole), and how it wires itself into the manager.

import { maintenanceController } from '../maintenance/capability.ts';
import type { PolicyRule } from '../manifests/rbac.ts';
import type { Manager } from '../runtime/manager.ts';
import { upgradeControllers } from '../upgrade/capability.ts';
import type { CloudProvider } from '../upgrade/providers/interface.ts';

/** Operator-wide settings a controller may need (from the command line). */
export interface OperatorOptions {
  /** Namespace of the per-node leases a maintenance holds (default: the operator's namespace). */
  maintenanceLeaseNamespace: string;
  /** The cloud the upgrade controllers replace nodes through; absent when none was configured. */
  cloud?: CloudProvider;
  /** The cluster's id in the cloud: scaling groups tagged with it are this cluster's. */
  clusterId: string;
}

export interface ControllerRegistration {
  name: string;
  description: string;
  rbac: PolicyRule[];
  /** Runs only with a cloud provider (--cloud-provider); skipped otherwise unless asked for by name. */
  needsCloud?: boolean;
  setup(mgr: Manager, options: OperatorOptions): void;
}

/** Shipped controllers, in the order they start. */
export const controllers: ControllerRegistration[] = [maintenanceController, ...upgradeControllers];
