// The support services of one TenantCluster: read what the renderer needs
// (the template ConfigMaps, the key names of the node SSH keys Secret),
// render (src/tenant/services/), server-side apply what came back. A
// digest of each applied object is kept so a steady cluster costs no writes;
// after a restart everything is applied once more, which changes nothing.
// Deletion needs nothing here: the objects carry owner references.
import { createHash } from 'node:crypto';
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { TenantCluster } from '../api/tenant.ts';
import type { KubeClient } from '../runtime/client.ts';
import { isConflict, isForbidden, isInvalid, isNotFound } from '../runtime/errors.ts';
import {
  ConfigMaps,
  Deployments,
  type K8sObject,
  type ResourceType,
  Secrets,
  Services,
} from '../runtime/resources.ts';
import type { ClaimedHost } from './claims.ts';
import {
  CLUSTER_LABEL,
  COMPONENT_LABEL,
  renderServices,
  SERVICE_COMPONENTS,
  type ServiceField,
  TEMPLATE_KEY,
  templateConfigMapNames,
} from './services/index.ts';

const KINDS: Record<string, ResourceType> = {
  ConfigMap: ConfigMaps,
  Secret: Secrets,
  Deployment: Deployments,
  Service: Services,
};

/** The field manager our service objects are applied under. */
const FIELD_MANAGER = 'nodewarden-tenant';

export interface ServiceProblem {
  service: string;
  message: string;
}

export class ServiceApplier {
  private readonly client: KubeClient;
  private readonly applied = new Map<string, string>();
  /** Services found dropped from a spec and cleaned up: `<ns>/<cluster>/<component>`. */
  private readonly pruned = new Set<string>();

  private readonly bmcLoopbackAt: string | undefined;

  /** @param bmcLoopbackAt where the jump host reaches a BMC on the operator's loopback (bmcEndpoint). */
  constructor(client: KubeClient, bmcLoopbackAt?: string) {
    this.client = client;
    this.bmcLoopbackAt = bmcLoopbackAt;
  }

  /** Renders and applies; the problems say which service is held back and why. */
  async apply(tc: TenantCluster, hosts: ClaimedHost[]): Promise<ServiceProblem[]> {
    const ns = tc.metadata.namespace ?? 'default';
    const cm = templateConfigMapNames(tc);
    const [controlPlane, worker, keyNames] = await Promise.all([
      this.template(ns, cm.controlPlane),
      this.template(ns, cm.worker),
      tc.spec.services?.jumpHost
        ? this.keyNames(ns, tc.spec.services.jumpHost.nodeSSHPrivateKeys)
        : undefined,
    ]);
    const rendered = renderServices(
      tc,
      hosts,
      {
        ...(controlPlane !== undefined ? { controlPlane } : {}),
        ...(worker !== undefined ? { worker } : {}),
      },
      keyNames,
      this.bmcLoopbackAt,
    );
    const problems: ServiceProblem[] = [...rendered.problems];
    for (const obj of rendered.objects) {
      const type = KINDS[obj.kind ?? ''];
      if (!type) {
        problems.push({ service: obj.kind ?? '?', message: `renderer gave an unexpected kind ${obj.kind}` });
        continue;
      }
      const key = `${obj.kind}/${obj.metadata?.namespace}/${obj.metadata?.name}`;
      const digest = createHash('sha256').update(JSON.stringify(obj)).digest('hex');
      if (this.applied.get(key) === digest) continue;
      try {
        await this.client.patch(type, obj.metadata?.name ?? '', obj.metadata?.namespace, obj as K8sObject, {
          type: 'apply',
          force: true,
          fieldManager: FIELD_MANAGER,
        });
      } catch (err) {
        // Refused by the API server (a NodePort already taken, say): the user's to fix, said in ServicesReady.
        if (!isRefused(err)) throw err;
        problems.push({ service: `${obj.kind} ${obj.metadata?.name}`, message: (err as Error).message });
        continue;
      }
      this.applied.set(key, digest);
    }
    await this.prune(tc);
    return problems;
  }

  /**
   * Removes the objects of services the spec no longer asks for (owner
   * references only clean up when the whole cluster goes). Names are fixed
   * (`<cluster>-<component>`), so each is read by name and deleted only when it
   * carries this cluster's labels; tried once per service until it is asked for again.
   */
  private async prune(tc: TenantCluster): Promise<void> {
    const ns = tc.metadata.namespace ?? 'default';
    const name = tc.metadata.name ?? '';
    for (const [field, component] of Object.entries(SERVICE_COMPONENTS) as [ServiceField, string][]) {
      const key = `${ns}/${name}/${component}`;
      if (tc.spec.services?.[field]) {
        this.pruned.delete(key);
        continue;
      }
      if (this.pruned.has(key)) continue;
      for (const type of Object.values(KINDS)) {
        const objName = `${name}-${component}`;
        const obj = await this.client.get<K8sObject>(type, objName, ns).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
        const labels = obj?.metadata?.labels ?? {};
        if (!obj || labels[CLUSTER_LABEL] !== name || labels[COMPONENT_LABEL] !== component) continue;
        await this.client.delete(type, objName, ns, {
          ignoreNotFound: true,
          preconditions: { uid: obj.metadata?.uid },
        });
        this.applied.delete(`${obj.kind ?? type.kind}/${ns}/${objName}`);
      }
      this.pruned.add(key);
    }
  }

  /** Forgets a deleted cluster's digests. */
  forget(tc: TenantCluster): void {
    const prefix = `/${tc.metadata.namespace}/${tc.metadata.name}-`;
    for (const k of [...this.applied.keys()]) if (k.includes(prefix)) this.applied.delete(k);
  }

  private async template(namespace: string, name: string): Promise<string | undefined> {
    try {
      const cm = await this.client.get<V1ConfigMap>(ConfigMaps, name, namespace);
      return cm.data?.[TEMPLATE_KEY];
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async keyNames(namespace: string, name: string): Promise<string[] | undefined> {
    try {
      const s = await this.client.get<V1Secret>(Secrets, name, namespace);
      return Object.keys(s.data ?? {}).sort();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

/** The API server refused the object itself (invalid, forbidden), rather than failing to answer. */
function isRefused(err: unknown): boolean {
  return isInvalid(err) || isForbidden(err) || isConflict(err);
}
