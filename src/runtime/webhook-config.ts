// The ValidatingWebhookConfiguration for a set of admission webhooks, built
// from their declarations: one source for `make manifests` (config/webhook and
// the Helm chart) and for an operator that registers itself when it runs
// outside the cluster (a local cluster reaches it on 127.0.0.1).

import type { KubeClient } from './client.ts';
import { retryOnConflict } from './conflict.ts';
import { isNotFound } from './errors.ts';
import { type K8sObject, type ResourceType, ValidatingWebhookConfigurations } from './resources.ts';

/** admissionregistration.k8s.io/v1 RuleWithOperations. */
export interface AdmissionWebhookRule {
  apiGroups: string[];
  apiVersions: string[];
  operations: ('CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT')[];
  resources: string[];
  scope?: 'Cluster' | 'Namespaced' | '*';
}

/**
 * The rule every validating webhook here declares: CREATE and UPDATE of the
 * given kinds, which share one group and version.
 */
export function onCreateOrUpdate(...types: readonly ResourceType[]): AdmissionWebhookRule {
  const [first] = types;
  if (!first) throw new Error('onCreateOrUpdate: no kind given');
  return {
    apiGroups: [first.group],
    apiVersions: [first.version],
    operations: ['CREATE', 'UPDATE'],
    resources: types.map((t) => t.plural),
    scope: first.namespaced ? 'Namespaced' : 'Cluster',
  };
}

/** What the configuration needs to know of one webhook. */
export interface WebhookEndpoint {
  name: string;
  path: string;
  rules: readonly AdmissionWebhookRule[];
}

export interface WebhookConfigurationOptions {
  name: string;
  /** Base64 PEM bundle; empty or absent when something else fills it in (the operator, cert-manager). */
  caBundle?: string;
  service?: { namespace: string; name: string; port?: number };
  /** URL of a webhook server outside the cluster; each webhook's path is appended when it has none. */
  url?: string;
  /** The url is a base under which every webhook's path goes, even when it has a path of its own. */
  urlIsBase?: boolean;
  objectSelector?: { matchLabels?: Record<string, string> };
}

/** One configuration holding every webhook, each called at its own path. */
export function validatingWebhookConfiguration(
  o: WebhookConfigurationOptions,
  hooks: readonly WebhookEndpoint[],
): K8sObject {
  if (!o.service === !o.url) throw new Error('webhookConfiguration: give exactly one of service and url');
  const clientConfig = (path: string): Record<string, unknown> => {
    let config: Record<string, unknown>;
    if (o.url) {
      const u = new URL(o.url);
      // A base URL (the operator's --webhook-url) gets each webhook's own path appended, as the
      // server registers exactly these; a bare one always does; a full URL is kept as given.
      if (o.urlIsBase || u.pathname === '/' || u.pathname === '')
        u.pathname = `${u.pathname.replace(/\/+$/, '')}${path}`;
      config = { url: u.toString() };
    } else {
      const s = o.service!;
      config = { service: { ...s, port: s.port ?? 443, path } };
    }
    if (o.caBundle) config.caBundle = o.caBundle;
    return config;
  };
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: o.name },
    webhooks: hooks.map((h) => ({
      name: h.name,
      admissionReviewVersions: ['v1'],
      clientConfig: clientConfig(h.path),
      rules: h.rules.map((r) => ({ ...r })),
      // Fail closed: a webhook that guards a node must not be skipped when the operator is down.
      failurePolicy: 'Fail',
      sideEffects: 'None',
      timeoutSeconds: 10,
      matchPolicy: 'Equivalent',
      ...(o.objectSelector ? { objectSelector: o.objectSelector } : {}),
    })),
  };
}

/**
 * Creates or updates the configuration with url clientConfigs: for an
 * operator running outside the cluster.
 */
export async function registerLocalWebhooks(
  client: KubeClient,
  o: {
    name: string;
    url: string;
    caPem: string;
    urlIsBase?: boolean;
    objectSelector?: { matchLabels?: Record<string, string> };
  },
  hooks: readonly WebhookEndpoint[],
): Promise<K8sObject> {
  const want = validatingWebhookConfiguration(
    { ...o, caBundle: Buffer.from(o.caPem).toString('base64') },
    hooks,
  );
  return retryOnConflict(async () => {
    const cur = await client.get(ValidatingWebhookConfigurations, o.name).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (!cur) return client.create(ValidatingWebhookConfigurations, want);
    return client.update(ValidatingWebhookConfigurations, { ...cur, webhooks: want.webhooks });
  });
}
