// How a local cluster carries real nodes: which of its pools are real, what
// they run, and waiting until each is Ready with its own kubelet's heartbeat.
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import type { KubeClient } from '../../runtime/client.ts';
import { isReady } from '../../runtime/conditions.ts';
import { isNotFound } from '../../runtime/errors.ts';
import {
  builtInKind,
  ConfigMaps,
  Deployments,
  Leases,
  Nodes,
  type ResourceType,
  ServiceAccounts,
  Services,
} from '../../runtime/resources.ts';
import type { Pool } from '../fleet.ts';
import { findEndpoint, recordInClusterEndpoint } from '../infra/kit/discovery.ts';
import { NODE_LEASE_NAMESPACE, type NodeLease } from '../node-leases.ts';
import {
  appVersion,
  type BinPaths,
  nodeImageNames,
  nodeRuntime,
  pinnedVersions,
  REPO_ROOT,
} from '../toolchain.ts';
import { clusterDnsObjects } from './cluster-dns.ts';
import {
  atClusterGateway,
  REAL_NODE_LABEL,
  type RealNodesLayout,
  realNodeNames,
  realNodesLayout,
} from './layout.ts';
import type { NodeBinaries } from './node.ts';

/** The layout of the cluster's real nodes, or undefined when none of its pools is real. */
export function realNodesOf(
  cluster: string,
  clusterDir: string,
  pools: readonly Pool[],
): RealNodesLayout | undefined {
  const real = pools.filter((p) => p.real);
  if (real.length === 0) return undefined;
  return realNodesLayout(
    cluster,
    clusterDir,
    real.flatMap((p) => realNodeNames(p.name, p.count)),
  );
}

/** What a real node runs: kubelet and kube-proxy from the control plane's build, the rest from the node runtime's. */
export async function nodeBinaries(controlPlane: BinPaths, quiet: boolean): Promise<NodeBinaries> {
  const runtime = await nodeRuntime({ quiet });
  return {
    kubelet: controlPlane.kubelet,
    kubeProxy: controlPlane['kube-proxy'],
    containerd: runtime.containerd,
    ctr: runtime.ctr,
    runtimeDir: runtime.dir,
    pause: runtime.pause,
    sandboxImage: runtime.imageNames.pause,
    images: [runtime.images.pause, runtime.images.coredns, runtime.images.testapp],
  };
}

/** `nodewarden cluster relay`, run the way this CLI was. */
export const RELAY_COMMAND: readonly string[] = [join(REPO_ROOT, 'bin', 'nodewarden'), 'cluster', 'relay'];

/** The API server's port, from the server URL of the cluster's kubeconfig. */
export function apiPortOf(server: string | undefined): number {
  const port = Number(new URL(server ?? '').port);
  if (!Number.isInteger(port) || port <= 0) throw new Error(`no port in the API server's URL "${server}"`);
  return port;
}

/**
 * Waits until every real node is Ready and its lease was renewed since `since` by its kubelet:
 * after a restart, Ready stays True for the grace period whether or not a kubelet runs.
 */
export async function waitForRealNodes(
  client: KubeClient,
  names: readonly string[],
  since: number,
  timeoutMs: number,
  say: (message: string) => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const nodes = await client.listAll<V1Node>(Nodes, { labelSelector: REAL_NODE_LABEL });
    const leases = await client.listAll<NodeLease>(Leases, { namespace: NODE_LEASE_NAMESPACE });
    const renewed = new Set(
      leases.items
        .filter((l) => Date.parse(l.spec?.renewTime ?? '') >= since - 1000)
        .map((l) => l.metadata?.name),
    );
    const ready = nodes.items
      .filter((n) => isReady(n) && renewed.has(n.metadata?.name))
      .map((n) => n.metadata?.name);
    const waiting = names.filter((n) => !ready.includes(n));
    if (waiting.length === 0) return;
    const said = `${names.length - waiting.length}/${names.length} real nodes Ready`;
    if (said !== last) say(said);
    last = said;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `real nodes not Ready within ${timeoutMs / 1000}s (${last}); see their logs under real-nodes/<node>/logs`,
  );
}

const rbac = 'rbac.authorization.k8s.io';
const DNS_TYPES: Record<string, ResourceType> = {
  ServiceAccount: ServiceAccounts,
  ClusterRole: builtInKind(rbac, 'v1', 'ClusterRole', 'clusterroles', false),
  ClusterRoleBinding: builtInKind(rbac, 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false),
  ConfigMap: ConfigMaps,
  Deployment: Deployments,
  Service: Services,
};

/**
 * Creates cluster DNS's objects that do not exist yet. Read first: creating the Service again
 * fails on its taken address before the API server looks at its name.
 */
export async function ensureClusterDns(client: KubeClient): Promise<void> {
  // The name the node runtime's build imports CoreDNS under, from the one place that names its images.
  const image = nodeImageNames(pinnedVersions(), appVersion()).coredns;
  for (const obj of clusterDnsObjects(image)) {
    const type = DNS_TYPES[obj.kind ?? ''];
    if (!type) throw new Error(`cluster DNS: no resource type for ${obj.kind}`);
    const exists = await client.get(type, obj.metadata?.name ?? '', obj.metadata?.namespace).then(
      () => true,
      (err: unknown) => (isNotFound(err) ? false : Promise.reject(err)),
    );
    if (!exists) await client.createIfAbsent(type, obj);
  }
}

/** An add-on that answers on the host's loopback, and where pods reach it once its port is published. */
export interface PublishedAddon {
  name: string;
  endpoint: string;
  port: number;
  inCluster: string;
}

/** The add-ons (by name, with their running endpoints) that pods reach through the relay: those on loopback. */
export function addonsToPublish(endpoints: readonly { name: string; endpoint: string }[]): PublishedAddon[] {
  return endpoints.flatMap(({ name, endpoint }) => {
    const inCluster = atClusterGateway(endpoint);
    return inCluster ? [{ name, endpoint, port: Number(new URL(endpoint).port), inCluster }] : [];
  });
}

/**
 * Records, in each add-on's endpoint ConfigMap, where pods reach it: where an operator in a
 * pod looks (kit/discovery.ts). Only beside the endpoint the add-on published for this run.
 */
export async function recordInClusterEndpoints(
  client: KubeClient,
  addons: readonly PublishedAddon[],
): Promise<void> {
  for (const a of addons) {
    const published = await findEndpoint(client, a.name);
    if (published?.endpoint === a.endpoint) await recordInClusterEndpoint(client, a.name, a.inCluster);
  }
}
