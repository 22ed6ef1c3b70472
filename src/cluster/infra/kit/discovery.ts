// How a client in the cluster finds a simulator: a ConfigMap in kube-system,
// kube-system/nodewarden-simulated-<name>, that the add-on writes each time the
// simulator starts (its port may change across `cluster down` + `up`), read
// where a real operator would read its infrastructure's endpoint from
// configuration. A cluster with real nodes also records there, beside the
// simulator's own URL on the host's loopback, the URL pods reach it at
// (the relay publishes the port at the cluster's gateway): `endpointFor`
// picks the one for where the caller runs.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeClient } from '../../../runtime/client.ts';
import { isNotFound } from '../../../runtime/errors.ts';
import { ConfigMaps } from '../../../runtime/resources.ts';

/** Where simulator `name` (e.g. "cloud") is published. */
export function endpointConfigMap(name: string): { namespace: string; name: string } {
  return { namespace: 'kube-system', name: `nodewarden-simulated-${name}` };
}

/** What a simulator publishes: its base URL and whatever else its clients need, as strings. */
export type PublishedEndpoint = { endpoint: string } & Record<string, string>;

/** Creates or updates the ConfigMap (server-side apply: one call either way). */
export async function publishEndpoint(
  client: KubeClient,
  simulator: string,
  data: PublishedEndpoint,
): Promise<void> {
  const { namespace, name } = endpointConfigMap(simulator);
  const body = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'nodewarden-cluster' } },
    data,
  };
  await client.patch(ConfigMaps, name, namespace, body, { type: 'apply', force: true });
}

/** What the simulator published, or undefined if the cluster names none (or no endpoint). */
export async function findEndpoint(
  client: KubeClient,
  simulator: string,
): Promise<PublishedEndpoint | undefined> {
  const { namespace, name } = endpointConfigMap(simulator);
  let cm: V1ConfigMap;
  try {
    cm = await client.get<V1ConfigMap>(ConfigMaps, name, namespace);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const endpoint = cm.data?.endpoint;
  if (!endpoint) return undefined;
  return { ...cm.data, endpoint };
}

/** The key of the URL pods on a local cluster's real nodes reach the simulator at (the host's loopback is not theirs). */
export const IN_CLUSTER_ENDPOINT_KEY = 'inClusterEndpoint';

/**
 * Records where pods reach the simulator, beside what it published. Its own field manager,
 * so the simulator's next publication (an apply of its own keys) keeps it.
 */
export async function recordInClusterEndpoint(
  client: KubeClient,
  simulator: string,
  url: string,
): Promise<void> {
  const { namespace, name } = endpointConfigMap(simulator);
  const body = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace },
    data: { [IN_CLUSTER_ENDPOINT_KEY]: url },
  };
  await client.patch(ConfigMaps, name, namespace, body, {
    type: 'apply',
    force: true,
    fieldManager: 'nodewarden-cluster-relay',
  });
}

/**
 * The URL a caller reaches the published simulator at: on the host, the one it published; in
 * a pod, the one recorded for pods, or undefined when the cluster recorded none (no real nodes).
 */
export function endpointFor(published: PublishedEndpoint, where: 'host' | 'pod'): string | undefined {
  return where === 'pod' ? published[IN_CLUSTER_ENDPOINT_KEY] || undefined : published.endpoint;
}
