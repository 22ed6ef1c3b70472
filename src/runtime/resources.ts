// The API resources the suite talks to, described as data so one generic
// client, informer and cache serve all of them.
import type { V1ObjectMeta } from '@kubernetes/client-node';

export interface ResourceType {
  /** API group; '' is the core (legacy) group served under /api. */
  group: string;
  version: string;
  kind: string;
  /** Lower-case plural used in URLs, e.g. 'pods'. */
  plural: string;
  namespaced: boolean;
}

/**
 * Object metadata as it arrives on the wire. client-node's V1ObjectMeta types
 * timestamps as Date, but we keep objects as plain JSON, so they are strings.
 */
export type ObjectMeta = Omit<V1ObjectMeta, 'creationTimestamp' | 'deletionTimestamp' | 'managedFields'> & {
  creationTimestamp?: string;
  deletionTimestamp?: string;
  managedFields?: unknown[];
};

/** Any Kubernetes object, as plain JSON. */
export interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [k: string]: unknown;
}

// Shapes of the client verbs' options and answers (see client.ts).

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  signal?: AbortSignal;
}

export interface ObjectList<T> {
  items: T[];
  metadata: { resourceVersion: string; continue?: string };
}

export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';
export interface PatchOptions {
  type: PatchType;
  fieldManager?: string;
  force?: boolean;
  subresource?: 'status';
  dryRun?: boolean;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  preconditions?: { uid?: string; resourceVersion?: string };
  ignoreNotFound?: boolean;
  dryRun?: boolean;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  signal?: AbortSignal;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
export interface WatchEvent<T = K8sObject> {
  type: WatchEventType;
  /** The object; for ERROR a metav1.Status. */
  object: T;
}

/** 'v1' for core, 'group/version' otherwise. */
export function apiVersionOf(t: ResourceType): string {
  return t.group === '' ? t.version : `${t.group}/${t.version}`;
}

/**
 * URL path of a collection or an object, e.g. /apis/apps/v1/namespaces/ns/deployments/name/status.
 * A namespaced type without a namespace addresses the collection across all namespaces.
 */
export function resourcePath(
  t: ResourceType,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  let p = t.group === '' ? `/api/${t.version}` : `/apis/${t.group}/${t.version}`;
  if (t.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${t.plural}`;
  if (name !== undefined) {
    if (name === '') throw new Error(`empty name for ${t.kind}`);
    p += `/${encodeURIComponent(name)}`;
    if (subresource) p += `/${subresource}`;
  }
  return p;
}

/** Store key: 'namespace/name' for namespaced objects, 'name' otherwise (as client-go's MetaNamespaceKeyFunc). */
export function objectKey(obj: K8sObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

/**
 * A kind the API server serves. The runtime keeps no registry: the client and cache
 * take any ResourceType, so a capability declares a kind only it needs in its own
 * folder with this, and the ones below are those the runtime and several capabilities use.
 */
export const builtInKind = (
  group: string,
  version: string,
  kind: string,
  plural: string,
  namespaced: boolean,
): ResourceType => Object.freeze({ group, version, kind, plural, namespaced });
const t = builtInKind;

export const Nodes = t('', 'v1', 'Node', 'nodes', false);
export const Pods = t('', 'v1', 'Pod', 'pods', true);
export const Namespaces = t('', 'v1', 'Namespace', 'namespaces', false);
export const ConfigMaps = t('', 'v1', 'ConfigMap', 'configmaps', true);
export const Secrets = t('', 'v1', 'Secret', 'secrets', true);
export const Services = t('', 'v1', 'Service', 'services', true);
export const ServiceAccounts = t('', 'v1', 'ServiceAccount', 'serviceaccounts', true);
export const PersistentVolumeClaims = t('', 'v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true);
export const Roles = t('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true);
export const RoleBindings = t('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true);
export const Leases = t('coordination.k8s.io', 'v1', 'Lease', 'leases', true);
export const Events = t('events.k8s.io', 'v1', 'Event', 'events', true);
export const PodDisruptionBudgets = t('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true);
export const Deployments = t('apps', 'v1', 'Deployment', 'deployments', true);
export const ReplicaSets = t('apps', 'v1', 'ReplicaSet', 'replicasets', true);
export const DaemonSets = t('apps', 'v1', 'DaemonSet', 'daemonsets', true);
export const StatefulSets = t('apps', 'v1', 'StatefulSet', 'statefulsets', true);
export const CustomResourceDefinitions = t(
  'apiextensions.k8s.io',
  'v1',
  'CustomResourceDefinition',
  'customresourcedefinitions',
  false,
);
export const ValidatingWebhookConfigurations = t(
  'admissionregistration.k8s.io',
  'v1',
  'ValidatingWebhookConfiguration',
  'validatingwebhookconfigurations',
  false,
);
