// Server-side apply of the objects a KVMCluster wants, skipping those last
// applied with the same content (a digest per object), so a steady cluster
// costs no writes; after a restart everything is applied once more, which
// changes nothing on the server.
import { createHash } from 'node:crypto';
import type { KubeClient } from '../../runtime/client.ts';
import {
  ConfigMaps,
  Deployments,
  type K8sObject,
  Namespaces,
  PersistentVolumeClaims,
  PodDisruptionBudgets,
  type ResourceType,
  RoleBindings,
  Roles,
  ServiceAccounts,
  Services,
} from '../../runtime/resources.ts';
import type { Propagation } from '../plan/node-changes.ts';

const FIELD_MANAGER = 'nodewarden-kvm';

export const KINDS: Record<string, ResourceType> = {
  Namespace: Namespaces,
  ServiceAccount: ServiceAccounts,
  Role: Roles,
  RoleBinding: RoleBindings,
  ConfigMap: ConfigMaps,
  Service: Services,
  Deployment: Deployments,
  PersistentVolumeClaim: PersistentVolumeClaims,
  PodDisruptionBudget: PodDisruptionBudgets,
};

export class ObjectApplier {
  private readonly client: KubeClient;
  private readonly applied = new Map<string, string>();

  constructor(client: KubeClient) {
    this.client = client;
  }

  private key(obj: K8sObject): string {
    return `${obj.kind}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name}`;
  }

  /** Applies unless the same content was applied before; true when it wrote. */
  async apply(obj: K8sObject): Promise<boolean> {
    const type = KINDS[obj.kind ?? ''];
    if (!type) throw new Error(`no resource type for kind ${obj.kind}`);
    const key = this.key(obj);
    const digest = createHash('sha256').update(JSON.stringify(obj)).digest('hex');
    if (this.applied.get(key) === digest) return false;
    await this.client.patch(type, obj.metadata?.name ?? '', obj.metadata?.namespace, obj, {
      type: 'apply',
      force: true,
      fieldManager: FIELD_MANAGER,
    });
    this.applied.set(key, digest);
    return true;
  }

  /**
   * Applies it whatever was applied before: the caller read the server's copy as missing or not
   * as desired (deleted by someone else, gone after our delete, written late by a deposed leader),
   * so a digest held for it says nothing.
   */
  async applyFresh(obj: K8sObject): Promise<void> {
    this.applied.delete(this.key(obj));
    await this.apply(obj);
  }

  /** Deletes it (absent is fine), in the background unless told, and forgets its digest. */
  async delete(
    kind: string,
    name: string,
    namespace?: string,
    propagation: Propagation = 'Background',
  ): Promise<void> {
    const type = KINDS[kind];
    if (!type) throw new Error(`no resource type for kind ${kind}`);
    await this.client.delete(type, name, namespace, { ignoreNotFound: true, propagationPolicy: propagation });
    this.applied.delete(`${kind}/${namespace ?? ''}/${name}`);
  }

  /** Forgets every digest under a namespace (the cluster is gone). */
  forgetNamespace(namespace: string): void {
    for (const key of [...this.applied.keys()]) {
      const [kind, ns, name] = key.split('/');
      if (ns === namespace || (kind === 'Namespace' && name === namespace)) this.applied.delete(key);
    }
  }
}
