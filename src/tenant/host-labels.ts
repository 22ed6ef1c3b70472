// Claims as label writes. A claim or release is a merge patch carrying the
// resourceVersion the plan was made from, so the API server refuses it when
// the host changed in between (another cluster claimed it): two clusters can
// never both hold one host, with no lock and no single-worker rule.
// Written hosts are remembered until the cache catches up, so the next plan
// (of any cluster in this process) sees the claim at once.
import { type BareMetalHost, BareMetalHosts } from '../api/baremetal.ts';
import { SIP_LABELS, TENANT_LABELS, type TenantRole } from '../api/tenant.ts';
import type { KubeClient } from '../runtime/client.ts';
import { isConflict, isNotFound } from '../runtime/errors.ts';
import type { HostRef } from './scheduling/planner.ts';

const BMH = BareMetalHosts.type;

export interface ClaimLabels {
  cluster: { namespace: string; name: string };
  role: TenantRole;
  standby: boolean;
}

/** The labels a claim writes (null removes: a release). */
export function claimLabels(c: ClaimLabels | null, sipCompatible: boolean): Record<string, string | null> {
  const ours = {
    [TENANT_LABELS.clusterNamespace]: c?.cluster.namespace ?? null,
    [TENANT_LABELS.clusterName]: c?.cluster.name ?? null,
    [TENANT_LABELS.role]: c?.role ?? null,
    [TENANT_LABELS.standby]: c ? String(c.standby) : null,
  };
  // A release always clears the anchor's labels too: the flag may have been on when we claimed.
  if (!c || sipCompatible) {
    return {
      ...ours,
      [SIP_LABELS.clusterNamespace]: c?.cluster.namespace ?? null,
      [SIP_LABELS.clusterName]: c?.cluster.name ?? null,
      [SIP_LABELS.role]: c?.role ?? null,
    };
  }
  return ours;
}

export type LabelWrite = 'written' | 'conflict' | 'gone';

export class HostLabeler {
  private readonly client: KubeClient;
  private readonly written = new Map<string, BareMetalHost>();

  constructor(client: KubeClient) {
    this.client = client;
  }

  /** Sets (or with null, removes) a claim, guarded by the host's resourceVersion. */
  async write(host: HostRef, labels: Record<string, string | null>): Promise<LabelWrite> {
    // An empty resourceVersion writes unguarded (undoing our own claim).
    const guard = host.resourceVersion ? { resourceVersion: host.resourceVersion } : {};
    const patch = { metadata: { ...guard, labels } };
    try {
      const after = await this.client.patch<BareMetalHost>(BMH, host.name, host.namespace, patch, {
        type: 'merge',
      });
      this.written.set(`${host.namespace}/${host.name}`, after);
      return 'written';
    } catch (err) {
      if (isConflict(err)) return 'conflict';
      if (isNotFound(err)) return 'gone';
      throw err;
    }
  }

  /** The cache's hosts, each replaced by our own newer write where the cache has not seen it yet. */
  overlay(cached: readonly BareMetalHost[]): BareMetalHost[] {
    if (this.written.size === 0) return [...cached];
    return cached.map((h) => {
      const key = `${h.metadata.namespace}/${h.metadata.name}`;
      const mine = this.written.get(key);
      if (!mine) return h;
      if (newer(h.metadata.resourceVersion, mine.metadata.resourceVersion)) {
        this.written.delete(key);
        return h;
      }
      return mine;
    });
  }
}

/** Whether resourceVersion a is at least b. Opaque by contract, integers in practice (etcd revisions). */
function newer(a: string | undefined, b: string | undefined): boolean {
  // Not comparable: trust the cache.
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return true;
  return BigInt(a) >= BigInt(b);
}
