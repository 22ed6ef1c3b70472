// What every support-service object shares: its name, its labels, its owner.
// Owner references are set here although the controller sets them too, so the
// objects are right when applied as they are (the anchor sets none and leaves
// its services behind on deletion).
import { createHash } from 'node:crypto';
import { TENANT_LABELS } from '../../api/tenant.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import { clusterKey, type TenantCluster } from './inputs.ts';

/** The TenantCluster an object serves. */
export const CLUSTER_LABEL = TENANT_LABELS.clusterName;
/** Which service an object belongs to: controlplane-lb, worker-lb or jumphost. */
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** On a load balancer's pod template: the config's digest, so a new config rolls the pods (HAProxy reads it once). */
export const CONFIG_HASH_ANNOTATION = 'baremetal.nodewarden.dev/config-hash';

export type ServiceComponent = 'controlplane-lb' | 'worker-lb' | 'jumphost';
/** The spec.services field a problem is about. */
export type ServiceField = 'controlPlaneLoadBalancer' | 'workerLoadBalancer' | 'jumpHost';

/** One service's render: its objects, or the problem that keeps it out. */
export type Rendered =
  | { objects: K8sObject[]; problem?: undefined }
  | { objects?: undefined; problem: string };

/** The hosts a service cannot reach: no address on its interface in their network data. */
export function missingAddress(hosts: readonly string[], interfaceId: string): string {
  const many = hosts.length > 1;
  return `host${many ? 's' : ''} ${[...hosts].sort().join(', ')} ha${many ? 've' : 's'} no address on interface ${interfaceId}`;
}

export interface ServiceProblem {
  service: ServiceField;
  message: string;
}

/** Service names are DNS-1035 labels: the longest name nodewarden gives must fit. */
const MAX_NAME = 63;

export function serviceObjectName(tc: TenantCluster, component: ServiceComponent): string {
  return `${clusterKey(tc).name}-${component}`;
}

/** Why the cluster's name cannot carry this component's objects, if it cannot. */
export function nameProblem(tc: TenantCluster, component: ServiceComponent): string | undefined {
  const name = serviceObjectName(tc, component);
  return name.length > MAX_NAME
    ? `object name ${name} is longer than ${MAX_NAME} characters; shorten the TenantCluster's name`
    : undefined;
}

export function selectorLabels(tc: TenantCluster, component: ServiceComponent): Record<string, string> {
  return { [CLUSTER_LABEL]: clusterKey(tc).name, [COMPONENT_LABEL]: component };
}

export interface ObjectMeta {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller: true }[];
}

export function objectMeta(
  tc: TenantCluster,
  component: ServiceComponent,
  name = serviceObjectName(tc, component),
) {
  const meta: ObjectMeta = {
    name,
    namespace: clusterKey(tc).namespace,
    labels: { ...selectorLabels(tc, component), [MANAGED_BY_LABEL]: 'nodewarden' },
  };
  if (tc.metadata.uid)
    meta.ownerReferences = [
      {
        apiVersion: tc.apiVersion,
        kind: tc.kind,
        name: clusterKey(tc).name,
        uid: tc.metadata.uid,
        controller: true,
      },
    ];
  return meta;
}

/** Secret data as the API server stores it, so a re-apply is a no-op. */
export function secretData(files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(files).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
  );
}

export function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
