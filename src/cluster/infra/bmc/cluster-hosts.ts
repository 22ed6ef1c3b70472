// Puts the fleet's physical machines into the cluster, from the CLI side (the
// fleet's process stays free of a Kubernetes client): metal3's BareMetalHost
// CRD if the cluster has none (an existing one, metal3's own say, is never
// touched), namespace metal3, and per machine its Secrets and host, applied
// server-side so every `up` may do it again and a moved port moves the hosts'
// addresses.
import { BareMetalHosts } from '../../../api/baremetal.ts';
import type { KubeClient } from '../../../runtime/client.ts';
import { mapConcurrently } from '../../../runtime/pool.ts';
import {
  CustomResourceDefinitions,
  Namespaces,
  type ResourceType,
  Secrets,
} from '../../../runtime/resources.ts';
import { bareMetalHost, credentialsSecret, namespaceManifest, networkDataSecret } from './host-objects.ts';
import type { Machine } from './protocol.ts';

const FIELD_MANAGER = 'nodewarden-simulated-bmc';

/** Creates the BareMetalHost CRD unless the cluster serves one; waits until it is Established. */
export async function ensureHostCrd(client: KubeClient, timeoutMs = 30_000): Promise<boolean> {
  const crd = BareMetalHosts.crd();
  const created = await client.createIfAbsent(CustomResourceDefinitions, crd as never);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await client.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
      CustomResourceDefinitions,
      crd.metadata.name,
    );
    if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return created;
    if (Date.now() > deadline)
      throw new Error(`the ${crd.metadata.name} CRD is not Established after ${timeoutMs / 1000}s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Applies the namespace, then every machine's two Secrets and its host; returns how many hosts. */
export async function applyPhysicalHosts(client: KubeClient, machines: readonly Machine[]): Promise<number> {
  const physical = machines.filter((m) => m.kind === 'physical');
  if (physical.length === 0) return 0;
  await ensureHostCrd(client);
  const ns = namespaceManifest();
  await apply(client, Namespaces, ns.metadata.name, undefined, ns);
  await mapConcurrently(physical, { concurrency: 8 }, async (m) => {
    for (const secret of [credentialsSecret(m), networkDataSecret(m)]) {
      await apply(client, Secrets, secret.metadata.name, secret.metadata.namespace, secret);
    }
    const host = bareMetalHost(m);
    await apply(client, BareMetalHosts.type, host.metadata.name, host.metadata.namespace, host);
  });
  return physical.length;
}

function apply(
  client: KubeClient,
  type: ResourceType,
  name: string,
  namespace: string | undefined,
  body: unknown,
): Promise<unknown> {
  return client.patch(type, name, namespace, body, {
    type: 'apply',
    force: true,
    fieldManager: FIELD_MANAGER,
  });
}
