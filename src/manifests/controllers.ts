// The RBAC rules of every shipped controller, taken from the operator's
// registry (src/operator/controllers.ts), where each capability declares the
// rules next to its controller. `nodewarden manifests` unions them into the
// manager's ClusterRole.
import { controllers } from '../operator/controllers.ts';
import type { ControllerRules } from './rbac.ts';

export function shippedControllerRules(): ControllerRules[] {
  return controllers.map((c) => ({ controller: c.name, rules: c.rbac }));
}
