// The pool's agent DaemonSet applied as its backend needs it (objects.ts
// builds it), with, for the VM host agent, the access it runs with.
import type { KubeClient } from '../../runtime/client.ts';
import { isAlreadyExists } from '../../runtime/errors.ts';
import type { CacheReader } from '../../runtime/host.ts';
import {
  DaemonSets,
  type K8sObject,
  type ResourceType,
  RoleBindings,
  Roles,
  Secrets,
  ServiceAccounts,
} from '../../runtime/resources.ts';
import type { AgentRun } from './hypervisors/hypervisor.ts';
import { agentAccess, agentRole } from './hypervisors/libvirt/agent-pod.ts';
import { agentsSecret } from './hypervisors/libvirt/hypervisors.ts';
import { agentDaemonSet, ownerRefs, type Pool } from './objects.ts';

/**
 * The agent DaemonSet as the backend needs it, applied when the cached one
 * differs. The VM host agent's access (ServiceAccount, RoleBinding, the
 * Role and the Secret it publishes in) goes first, in the same rounds:
 * nothing watches those, and a round that leaves the DaemonSet alone has no
 * reason to write them.
 */
export async function applyAgent(
  client: KubeClient,
  cache: CacheReader,
  pool: Pool,
  run: AgentRun,
): Promise<void> {
  const ds = agentDaemonSet(pool, run);
  const have = cache.get<K8sObject>(DaemonSets, ds.metadata!.name!, ds.metadata!.namespace);
  if (have && JSON.stringify(subset(have.spec, ds.spec)) === JSON.stringify(ds.spec)) return;
  if (run.kind === 'vm-host-agent') {
    const access = agentAccess(pool.metadata.namespace!, pool.metadata.name!, ownerRefs(pool));
    await apply(client, Roles, agentRole());
    await apply(client, ServiceAccounts, access.serviceAccount);
    await apply(client, RoleBindings, access.roleBinding);
    await client.create(Secrets, agentsSecret()).catch((err: unknown) => {
      if (!isAlreadyExists(err)) throw err;
    });
  }
  await apply(client, DaemonSets, ds);
}

async function apply(client: KubeClient, type: ResourceType, obj: K8sObject): Promise<void> {
  await client.patch(type, obj.metadata!.name!, obj.metadata!.namespace, obj, {
    type: 'apply',
    force: true,
  });
}

/** `have` cut down to the keys `want` has, recursively: what a comparison with our own manifest should see. */
function subset(have: unknown, want: unknown): unknown {
  if (Array.isArray(want) && Array.isArray(have)) return want.map((w, i) => subset(have[i], w));
  if (want && typeof want === 'object' && have && typeof have === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(want))
      out[k] = subset((have as Record<string, unknown>)[k], (want as Record<string, unknown>)[k]);
    return out;
  }
  return have;
}
