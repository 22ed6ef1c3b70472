// Clients for workload clusters, built from the kubeconfig Secret each
// cluster's first master VM writes (<id>-kubeconfig, key `kubeconfig`, next
// to the KVMCluster). The Secret is read by name — never listed or watched,
// so the operator needs no cluster-wide Secret access for this — at most once
// per REFRESH_MS per cluster, and again at once after a request fails, so a
// control plane that came back on another port is found. A workload cluster
// that does not answer is "unreachable", never an error: upgrades and
// unhealthy-node rules wait for it (anchor: tenantcluster treats a timeout as skip).
import { KUBECONFIG_KEY } from '../../api/vm-image.ts';
import { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { KubeConfig } from '../../runtime/kubeconfig.ts';
import { Secrets } from '../../runtime/resources.ts';
import { kubeconfigSecretName } from '../plan/names.ts';

const REFRESH_MS = 30_000;

interface Entry {
  client: KubeClient;
  resourceVersion: string;
  readAt: number;
}

export interface WorkloadRef {
  /** The KVMCluster's namespace (where the Secret lives). */
  namespace: string;
  /** The cluster id. */
  cluster: string;
}

export class WorkloadClients {
  private readonly mgmt: KubeClient;
  private readonly entries = new Map<string, Entry>();

  constructor(mgmt: KubeClient) {
    this.mgmt = mgmt;
  }

  /** A client for the workload cluster, or undefined while it has no kubeconfig yet. */
  async client(ref: WorkloadRef, now = Date.now()): Promise<KubeClient | undefined> {
    const key = `${ref.namespace}/${ref.cluster}`;
    const cached = this.entries.get(key);
    if (cached && now - cached.readAt < REFRESH_MS) return cached.client;
    let secret: { metadata?: { resourceVersion?: string }; data?: Record<string, string> };
    try {
      secret = await this.mgmt.get(Secrets, kubeconfigSecretName(ref.cluster), ref.namespace);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.forget(ref);
      return undefined;
    }
    const rv = secret.metadata?.resourceVersion ?? '';
    if (cached && cached.resourceVersion === rv) {
      cached.readAt = now;
      return cached.client;
    }
    const text = secret.data?.[KUBECONFIG_KEY];
    if (!text) return undefined;
    const kc = new KubeConfig();
    kc.loadFromString(Buffer.from(text, 'base64').toString('utf8'));
    // Short timeouts and few retries: a workload cluster that is down must not hold a worker
    // for long. Fenced with the management client: a lost leader drains no workload node.
    const client = KubeClient.fromKubeConfig(kc, {
      userAgent: 'nodewarden-kvm',
      requestTimeoutMs: 5000,
      maxRetries: 1,
      fencedWith: this.mgmt,
    });
    cached?.client.close();
    this.entries.set(key, { client, resourceVersion: rv, readAt: now });
    return client;
  }

  /** After a failed request: read the Secret again on the next call. */
  stale(ref: WorkloadRef): void {
    const e = this.entries.get(`${ref.namespace}/${ref.cluster}`);
    if (e) e.readAt = 0;
  }

  forget(ref: WorkloadRef): void {
    const key = `${ref.namespace}/${ref.cluster}`;
    this.entries.get(key)?.client.close();
    this.entries.delete(key);
  }

  close(): void {
    for (const e of this.entries.values()) e.client.close();
    this.entries.clear();
  }
}
