// The operator's step that makes a workload cluster usable: once its API
// server answers through the master Service — over TLS checked against the
// cluster's CA for the master Service's name, with the admin certificate —
// the kubelets' bootstrap permissions are applied in the workload cluster and
// `<id>-kubeconfig` is written next to the KVMCluster, owned by it. A Secret
// some VM runtime wrote itself (the simulated hypervisor does, per the VM
// image contract) is left alone. Nothing here decides: plan/workload-kubeconfig.ts does.
import { request } from 'node:https';
import { KVM_LABELS } from '../../api/kvm.ts';
import { KUBECONFIG_KEY } from '../../api/vm-image.ts';
import { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { KubeConfig } from '../../runtime/kubeconfig.ts';
import { builtInKind, type K8sObject, Secrets } from '../../runtime/resources.ts';
import { kubeconfigSecretName } from '../plan/names.ts';
import type { CertAndKey, ClusterPki } from '../plan/pki.ts';
import type { KVMClusterObject } from '../plan/views.ts';
import {
  decideKubeconfig,
  type FoundKubeconfig,
  type MasterEndpoint,
  workloadKubeconfig,
} from '../plan/workload-kubeconfig.ts';
import { ownedSecret } from './pki.ts';

const FIELD_MANAGER = 'nodewarden-kvm';
const PROBE_TIMEOUT_MS = 3000;
const ClusterRoleBindings = builtInKind(
  'rbac.authorization.k8s.io',
  'v1',
  'ClusterRoleBinding',
  'clusterrolebindings',
  false,
);

/** How the operator reaches a cluster's master Service; undefined: it does not (another writer keeps the Secret). */
export type MasterEndpoints = (cluster: string, securePort: number) => MasterEndpoint | undefined;

/** GET /readyz as the admin: true when the API server answers 200 over TLS it trusts. */
export function probeApiServer(at: MasterEndpoint, caPem: string, admin: CertAndKey): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      new URL('/readyz', at.url),
      {
        ca: caPem,
        cert: admin.certPem,
        key: admin.keyPem,
        servername: at.serverName,
        timeout: PROBE_TIMEOUT_MS,
        agent: false,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}

/**
 * What lets kubelets join with the bootstrap token (kubeadm's bindings): the
 * bootstrappers may ask for a client certificate, which is approved at once;
 * nodes may renew their own.
 */
export function bootstrapBindings(): K8sObject[] {
  const crb = (name: string, role: string, group: string): K8sObject =>
    ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
    }) as K8sObject;
  const csr = 'system:certificates.k8s.io:certificatesigningrequests';
  return [
    crb('nodewarden:kubelet-bootstrap', 'system:node-bootstrapper', 'system:bootstrappers'),
    crb('nodewarden:node-autoapprove-bootstrap', `${csr}:nodeclient`, 'system:bootstrappers'),
    crb('nodewarden:node-autoapprove-certificate-rotation', `${csr}:selfnodeclient`, 'system:nodes'),
  ];
}

export type KubeconfigOutcome = 'written' | 'upToDate' | 'foreign' | 'unreachable' | 'notProbed';

export class KubeconfigWriter {
  private readonly mgmt: KubeClient;
  private readonly endpoints: MasterEndpoints;

  constructor(mgmt: KubeClient, endpoints: MasterEndpoints) {
    this.mgmt = mgmt;
    this.endpoints = endpoints;
  }

  async ensure(kc: KVMClusterObject, pki: ClusterPki): Promise<KubeconfigOutcome> {
    const cluster = kc.metadata.name ?? '';
    const at = this.endpoints(cluster, kc.spec.api.securePort ?? 443);
    if (!at) return 'notProbed';
    const desired = workloadKubeconfig(cluster, pki, at);
    const decision = decideKubeconfig(await this.read(kc), desired);
    if (decision !== 'probeThenWrite') return decision;
    const admin = pki.certs.admin;
    if (!admin || !(await probeApiServer(at, pki.ca.certPem, admin))) return 'unreachable';
    await this.applyBootstrapBindings(desired);
    await this.write(kc, desired);
    return 'written';
  }

  private async applyBootstrapBindings(kubeconfig: string): Promise<void> {
    const config = new KubeConfig();
    config.loadFromString(kubeconfig);
    const wc = KubeClient.fromKubeConfig(config, {
      userAgent: 'nodewarden-kvm',
      requestTimeoutMs: 5000,
      maxRetries: 1,
    });
    try {
      for (const b of bootstrapBindings()) {
        await wc.patch(ClusterRoleBindings, b.metadata?.name ?? '', undefined, b, {
          type: 'apply',
          force: true,
          fieldManager: FIELD_MANAGER,
        });
      }
    } finally {
      wc.close();
    }
  }

  private async read(kc: KVMClusterObject): Promise<FoundKubeconfig | undefined> {
    try {
      const s = await this.mgmt.get<K8sObject & { data?: Record<string, string> }>(
        Secrets,
        kubeconfigSecretName(kc.metadata.name ?? ''),
        kc.metadata.namespace,
      );
      const text = s.data?.[KUBECONFIG_KEY];
      const managedBy = s.metadata?.labels?.[KVM_LABELS.managedBy];
      return {
        ...(managedBy ? { managedBy } : {}),
        ...(text ? { kubeconfig: Buffer.from(text, 'base64').toString('utf8') } : {}),
      };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async write(kc: KVMClusterObject, kubeconfig: string): Promise<void> {
    const name = kubeconfigSecretName(kc.metadata.name ?? '');
    const body = ownedSecret(kc, name, { [KUBECONFIG_KEY]: Buffer.from(kubeconfig).toString('base64') });
    await this.mgmt.patch(Secrets, name, body.metadata.namespace, body, {
      type: 'apply',
      force: true,
      fieldManager: FIELD_MANAGER,
    });
  }
}
