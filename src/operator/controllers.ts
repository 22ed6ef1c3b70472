// Every controller the operator can run. A capability adds one entry: its
// name (for --controllers), the RBAC rules it needs (make manifests turns them
// into the ClusterRole), and how it wires itself into the manager.
import type { PolicyRule } from '../manifests/rbac.ts';
import type { Manager } from '../runtime/manager.ts';

export interface ControllerRegistration {
  name: string;
  description: string;
  rbac: PolicyRule[];
  setup(mgr: Manager): void;
}

/** Shipped controllers. Empty until the first capability lands. */
export const controllers: ControllerRegistration[] = [];
