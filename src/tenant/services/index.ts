// A TenantCluster's support services as objects to apply: the control-plane
// load balancer, the worker load balancer and the jump host, rendered from
// the cluster's spec and the hosts it holds. Pure: the controller reads the
// inputs (the template ConfigMaps, the node keys Secret's key names), applies
// what comes back (server-side apply) and turns problems into the
// ServicesReady condition. A service with a problem is left out entirely, so
// the last good version already in the cluster keeps serving: never delete
// a service's objects because it is missing from one render with a problem.
// A service dropped from the spec renders nothing and no problem: its objects
// (labelled CLUSTER_LABEL and COMPONENT_LABEL = SERVICE_COMPONENTS[field])
// are the controller's to delete.
// Same input → the same objects in the same order (sorted by kind, then name).
import type { K8sObject } from '../../runtime/resources.ts';
import type { ClaimedHost, TenantCluster } from './inputs.ts';
import { jumpHost } from './jumphost.ts';
import { controlPlaneLoadBalancer, workerLoadBalancer } from './load-balancers.ts';
import type { Rendered, ServiceComponent, ServiceField, ServiceProblem } from './objects.ts';

export { DEFAULT_CONTROL_PLANE_TEMPLATE, DEFAULT_WORKER_TEMPLATE } from './haproxy-config.ts';
export { DEFAULT_HAPROXY_IMAGE } from './haproxy-objects.ts';
export {
  CLUSTER_LABEL,
  COMPONENT_LABEL,
  MANAGED_BY_LABEL,
  type ServiceComponent,
  type ServiceField,
  type ServiceProblem,
} from './objects.ts';
export { type AuthorizedKey, parseAuthorizedKey } from './ssh-keys.ts';

/**
 * The user's haproxy.cfg templates, read by the controller from the ConfigMaps
 * templateConfigMapNames gives (key TEMPLATE_KEY); their language and variables
 * are described in template.ts and haproxy-config.ts.
 */
export interface ServiceTemplates {
  controlPlane?: string;
  worker?: string;
}

/** The ConfigMap key holding a template. */
export const TEMPLATE_KEY = 'haproxy.cfg.tmpl';

/** The ConfigMaps (in the cluster's namespace) whose TEMPLATE_KEY overrides a built-in template. */
export function templateConfigMapNames(tc: TenantCluster): Required<Record<keyof ServiceTemplates, string>> {
  const name = tc.metadata.name ?? '';
  return { controlPlane: `${name}-controlplane-lb-template`, worker: `${name}-worker-lb-template` };
}

/** The COMPONENT_LABEL value of each service's objects (also their name suffix). */
export const SERVICE_COMPONENTS: Readonly<Record<ServiceField, ServiceComponent>> = {
  controlPlaneLoadBalancer: 'controlplane-lb',
  workerLoadBalancer: 'worker-lb',
  jumpHost: 'jumphost',
};

export interface RenderedServices {
  objects: K8sObject[];
  problems: ServiceProblem[];
}

/**
 * @param privateKeyNames the data keys of the Secret spec.services.jumpHost.nodeSSHPrivateKeys
 *   (one IdentityFile each); undefined or empty when that Secret is missing.
 * @param bmcLoopbackAt where the jump host reaches a BMC on the operator's loopback (bmcEndpoint).
 */
export function renderServices(
  tc: TenantCluster,
  hosts: ClaimedHost[],
  templates: ServiceTemplates = {},
  privateKeyNames?: readonly string[],
  bmcLoopbackAt?: string,
): RenderedServices {
  const results: [ServiceField, Rendered | undefined][] = [
    ['controlPlaneLoadBalancer', controlPlaneLoadBalancer(tc, hosts, templates.controlPlane)],
    ['workerLoadBalancer', workerLoadBalancer(tc, hosts, templates.worker)],
    ['jumpHost', jumpHost(tc, hosts, privateKeyNames, bmcLoopbackAt)],
  ];
  const objects: K8sObject[] = [];
  const problems: ServiceProblem[] = [];
  for (const [service, r] of results) {
    if (r?.problem !== undefined) problems.push({ service, message: r.problem });
    else if (r) objects.push(...r.objects);
  }
  return { objects: objects.sort(byKindThenName), problems };
}

function byKindThenName(a: K8sObject, b: K8sObject): number {
  const ka = `${a.kind}/${a.metadata?.name}`;
  const kb = `${b.kind}/${b.metadata?.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
