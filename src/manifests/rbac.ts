// RBAC as data: each controller declares the rules it needs next to its code;
// this merges them into one ClusterRole. Wildcards are refused outright so
// least privilege cannot erode one convenient '*' at a time.

import type { PolicyRule } from '../runtime/policy-rule.ts';

export type { PolicyRule };

/** The rules one controller needs, named so errors point at it. */
export interface ControllerRules {
  controller: string;
  rules: readonly PolicyRule[];
}

export interface ClusterRoleManifest {
  apiVersion: 'rbac.authorization.k8s.io/v1';
  kind: 'ClusterRole';
  metadata: { name: string; labels?: Record<string, string> };
  rules: readonly PolicyRule[];
}

// Every verb the API server authorizes; anything else is a typo.
const VERBS = new Set([
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
  'use',
  'bind',
  'escalate',
  'impersonate',
  'approve',
  'sign',
]);

/**
 * What the controller runtime itself needs, cluster-wide: Events go to the
 * namespace of the object they are about (Nodes' to "default"), so they
 * cannot be confined to our namespace. Leases for leader election live in
 * our own namespace only; see leaderElectionRules.
 */
export const runtimeRules: PolicyRule[] = [
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  // The core group's Events, for tools that still read only those.
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  // Secure /metrics (src/runtime/metrics-auth.ts) asks the API server who calls and whether they may.
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];

/** Leader election (src/runtime/leader.ts): a namespaced Role in the operator's namespace. */
export const leaderElectionRules: PolicyRule[] = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];

/** The self-managed webhook PKI (src/runtime/certs.ts) lives in a Secret in the operator's namespace. */
export const webhookSecretRules: PolicyRule[] = [
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  {
    apiGroups: [''],
    resources: ['secrets'],
    verbs: ['get', 'update'],
    resourceNames: ['nodewarden-webhook-server-cert'],
  },
];

/** Serving admission webhooks: keep the configuration's caBundle current (create only for a local out-of-cluster run). */
export const webhookConfigurationRules: PolicyRule[] = [
  {
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['validatingwebhookconfigurations'],
    verbs: ['get', 'update'],
    resourceNames: ['nodewarden-validating-webhook-configuration'],
  },
  {
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['validatingwebhookconfigurations'],
    verbs: ['create'],
  },
];

/** Everything the operator needs in its own namespace only: one namespaced Role. */
export const namespacedRules: PolicyRule[] = [...leaderElectionRules, ...webhookSecretRules];

/** Throws if a rule uses a wildcard, an unknown verb, or an empty list. */
export function checkRule(rule: PolicyRule, owner = 'rule'): void {
  const where = `${owner}: ${JSON.stringify(rule)}`;
  for (const field of ['apiGroups', 'resources', 'verbs', 'resourceNames'] as const) {
    const values = rule[field];
    if (values === undefined) continue;
    if (values.length === 0) throw new Error(`${where}: ${field} is empty`);
    if (values.some((v) => v.includes('*'))) {
      throw new Error(`${where}: wildcards are not allowed in ${field}; list exactly what is needed`);
    }
  }
  for (const verb of rule.verbs) {
    if (!VERBS.has(verb)) throw new Error(`${where}: unknown verb "${verb}"`);
  }
}

const uniqSorted = (xs: Iterable<string>) => [...new Set(xs)].sort();

/**
 * Merges rules naming the same apiGroups, resources and resourceNames into one
 * with the union of their verbs. Output is sorted, so the same input in any
 * order yields the same rules.
 */
export function mergeRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const merged = new Map<string, PolicyRule>();
  for (const rule of rules) {
    checkRule(rule);
    const norm: PolicyRule = {
      apiGroups: uniqSorted(rule.apiGroups),
      resources: uniqSorted(rule.resources),
      verbs: uniqSorted(rule.verbs),
      ...(rule.resourceNames ? { resourceNames: uniqSorted(rule.resourceNames) } : {}),
    };
    const key = JSON.stringify([norm.apiGroups, norm.resources, norm.resourceNames ?? null]);
    const seen = merged.get(key);
    if (seen) seen.verbs = uniqSorted([...seen.verbs, ...norm.verbs]);
    else merged.set(key, norm);
  }
  return [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
}

export function clusterRoleFrom(
  name: string,
  rules: readonly PolicyRule[],
  labels?: Record<string, string>,
): ClusterRoleManifest {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name, ...(labels ? { labels } : {}) },
    rules: mergeRules(rules),
  };
}

/** The manager's rules: the runtime's plus every controller's, checked per controller. */
export function managerRules(controllers: readonly ControllerRules[]): PolicyRule[] {
  for (const c of controllers) for (const r of c.rules) checkRule(r, `controller ${c.controller}`);
  return mergeRules([...runtimeRules, ...controllers.flatMap((c) => c.rules)]);
}
