// Every controller the operator can run. A capability adds one entry: its
// name (for --controllers), the RBAC rules it needs (make manifests turns them
// into the ClusterRole), and how it wires itself into the manager.

import { maintenanceController } from '../maintenance/register.ts';
import type { PolicyRule } from '../manifests/rbac.ts';
import type { Manager } from '../runtime/manager.ts';

/** Operator-wide settings a controller may need (from the command line). */
export interface OperatorOptions {
  /** Namespace of the per-node leases a maintenance holds (default nodewarden-leases... see cli). */
  maintenanceLeaseNamespace: string;
}

export interface ControllerRegistration {
  name: string;
  description: string;
  rbac: PolicyRule[];
  setup(mgr: Manager, options: OperatorOptions): void;
}

/** Shipped controllers, in the order they start. */
export const controllers: ControllerRegistration[] = [maintenanceController];
