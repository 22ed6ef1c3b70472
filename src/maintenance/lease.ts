// The per-node coordination Lease a maintenance holds, so tools that
// coordinate through node leases (medik8s Node Healthcheck, the anchor's
// `node-<name>` leases) know the node is being worked on and stay away.
import type { KubeClient } from '../runtime/client.ts';
import { isAlreadyExists, isNotFound } from '../runtime/errors.ts';
import { microTime } from '../runtime/leader.ts';
import { type K8sObject, Leases } from '../runtime/resources.ts';

export interface NodeLeaseOptions {
  namespace: string;
  holder: string;
  /** The anchor holds node leases for an hour and renews them well before. */
  durationSeconds: number;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
}
type Lease = K8sObject & { spec?: LeaseSpec };

export type LeaseResult = { held: true; renewed: boolean } | { held: false; holder: string };

export const nodeLeaseName = (node: string) => `node-${node}`;

/** Takes the node's lease, or renews ours once half of its duration has passed. */
export async function acquireNodeLease(
  client: KubeClient,
  node: string,
  opts: NodeLeaseOptions,
  now = new Date(),
): Promise<LeaseResult> {
  const name = nodeLeaseName(node);
  const spec: LeaseSpec = {
    holderIdentity: opts.holder,
    leaseDurationSeconds: opts.durationSeconds,
    acquireTime: microTime(now),
    renewTime: microTime(now),
  };
  let lease: Lease;
  try {
    lease = await client.get<Lease>(Leases, name, opts.namespace);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await client.create(Leases, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: opts.namespace, labels: { 'nodewarden.dev/node': node } },
        spec,
      });
      return { held: true, renewed: true };
    } catch (createErr) {
      if (isAlreadyExists(createErr)) return { held: false, holder: 'unknown (created concurrently)' };
      throw createErr;
    }
  }
  const cur = lease.spec ?? {};
  const renewedAt = cur.renewTime ? Date.parse(cur.renewTime) : 0;
  const expiresAt = renewedAt + (cur.leaseDurationSeconds ?? 0) * 1000;
  const ours = cur.holderIdentity === opts.holder;
  if (!ours && cur.holderIdentity && expiresAt > now.getTime())
    return { held: false, holder: cur.holderIdentity };
  if (ours && now.getTime() - renewedAt < (opts.durationSeconds * 1000) / 2)
    return { held: true, renewed: false };
  await client.update(Leases, {
    ...lease,
    spec: ours ? { ...cur, renewTime: spec.renewTime, leaseDurationSeconds: opts.durationSeconds } : spec,
  });
  return { held: true, renewed: true };
}

/** Deletes the node's lease if we hold it; someone else's lease is left alone. */
export async function releaseNodeLease(
  client: KubeClient,
  node: string,
  opts: NodeLeaseOptions,
): Promise<void> {
  try {
    const lease = await client.get<Lease>(Leases, nodeLeaseName(node), opts.namespace);
    if (lease.spec?.holderIdentity !== opts.holder) return;
    await client.delete(Leases, nodeLeaseName(node), opts.namespace, {
      preconditions: { uid: lease.metadata?.uid, resourceVersion: lease.metadata?.resourceVersion },
      ignoreNotFound: true,
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
