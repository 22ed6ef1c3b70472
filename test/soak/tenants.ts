// The soak's tenant-cluster load: several TenantClusters competing for the
// racked physical hosts (the bare-metal load's, whose BMC faults make hosts
// fail under them), scaled up and down, deleted and made again, seeded. Also
// what the sampler reads of them and what "converged" means for them.
import { type BareMetalHost, BareMetalHosts } from '../../src/api/baremetal.ts';
import { TENANT_LABELS, type TenantCluster, TenantClusters } from '../../src/api/tenant.ts';
import { seededRandom } from '../../src/cluster/infra/kit/random.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { type K8sObject, Namespaces } from '../../src/runtime/resources.ts';
import type { TenantSample } from './invariants.ts';
import { SteppedLoad } from './stepping.ts';

export const TENANT_NAMESPACE = 'soak-tenant';
const TC = TenantClusters.type;
const BMH = BareMetalHosts.type;
/** The racked physical hosts (the BMC fleet's add-on labels them so); the pool's VM hosts are not offered. */
const PHYSICAL = { 'app.kubernetes.io/managed-by': 'nodewarden-cluster' };

export interface TenantOptions {
  seed: number;
  clusters: number;
  /** Active hosts a cluster is scaled within (1..maxActive), with 0 or 1 standby. */
  maxActive: number;
}

type Tc = TenantCluster & K8sObject;
const spec = (active: number, standby: number) => ({
  nodes: { Worker: { labelSelector: { matchLabels: PHYSICAL }, count: { active, standby } } },
});
const key = (o: K8sObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;

export class TenantLoad extends SteppedLoad {
  readonly did: Record<string, number> = {};
  private readonly client: KubeClient;
  private readonly o: TenantOptions;
  private readonly random: () => number;

  constructor(client: KubeClient, o: TenantOptions) {
    super();
    this.client = client;
    this.o = o;
    this.random = seededRandom(o.seed ^ 0x7e4a);
  }

  private get names(): string[] {
    return Array.from({ length: this.o.clusters }, (_, i) => `tc-${i}`);
  }

  async setUp(): Promise<void> {
    await this.client.create(Namespaces, { metadata: { name: TENANT_NAMESPACE } });
    for (const name of this.names) await this.make(name, 1, 0);
  }

  /** Runs until stop(): one seeded step every `everyMs`. */
  run(everyMs: number): Promise<void> {
    return this.stepEvery(everyMs, () => this.step());
  }

  /** The settled state asked for once the faults stop: every cluster there, one active host each. */
  async settle(): Promise<void> {
    const have = new Map((await this.list()).map((t) => [t.metadata.name!, t]));
    for (const name of this.names) {
      const t = have.get(name);
      if (!t)
        await this.make(name, 1, 0).catch(() => {}); // one being deleted yet: next time
      else if (!t.metadata.deletionTimestamp)
        await this.client.patch(TC, name, TENANT_NAMESPACE, { spec: spec(1, 0) }, { type: 'merge' });
    }
  }

  /** Clusters (read before and after the hosts: see TenantSample), the hosts' claims, and the statuses. */
  async sample(): Promise<{ tenants: TenantSample }> {
    const before = await this.list();
    const hosts = (await this.client.list<BareMetalHost & K8sObject>(BMH)).items;
    const after = await this.list();
    return {
      tenants: {
        clusters: [...new Set([...before, ...after].map(key))],
        claims: hosts.flatMap((h) => {
          const name = h.metadata.labels?.[TENANT_LABELS.clusterName];
          const ns = h.metadata.labels?.[TENANT_LABELS.clusterNamespace];
          return name ? [{ host: key(h), cluster: `${ns}/${name}` }] : [];
        }),
        listed: after.flatMap((t) =>
          Object.values(t.status?.hosts ?? {}).flatMap((hs) =>
            (hs ?? []).map((h) => ({ cluster: key(t), host: `${h.namespace}/${h.name}` })),
          ),
        ),
      },
    };
  }

  /** What still differs from the settled state; '' when converged. */
  async unconverged(): Promise<string> {
    await this.settle();
    const out: string[] = [];
    const have = new Map((await this.list()).map((t) => [t.metadata.name!, t]));
    for (const name of this.names) {
      const t = have.get(name);
      const ready = t?.status?.conditions?.find((c) => c.type === 'Ready');
      if (
        !t ||
        t.metadata.deletionTimestamp ||
        ready?.status !== 'True' ||
        ready.observedGeneration !== t.metadata.generation ||
        t.status?.claimedHosts !== 1
      )
        out.push(`tenant ${name}: ${t ? `${ready?.reason}, ${t.status?.claimedHosts} hosts` : 'not there'}`);
    }
    return out.join('; ');
  }

  private async list(): Promise<Tc[]> {
    return (await this.client.list<Tc>(TC, { namespace: TENANT_NAMESPACE })).items;
  }

  private make(name: string, active: number, standby: number): Promise<unknown> {
    return this.client.create(
      TC,
      TenantClusters.make({ name, namespace: TENANT_NAMESPACE }, spec(active, standby)) as never,
    );
  }

  private async step(): Promise<void> {
    const r = this.random();
    const name = this.names[Math.floor(this.random() * this.o.clusters)]!;
    const active = 1 + Math.floor(this.random() * this.o.maxActive);
    const standby = Math.floor(this.random() * 2);
    const t = await this.client.get<Tc>(TC, name, TENANT_NAMESPACE).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    const did = (what: string) => {
      this.did[what] = (this.did[what] ?? 0) + 1;
    };
    if (!t) {
      await this.make(name, active, standby);
      did('made again');
    } else if (t.metadata.deletionTimestamp) return;
    else if (r < 0.25) {
      await this.client.delete(TC, name, TENANT_NAMESPACE);
      did('deleted');
    } else {
      await this.client.patch(TC, name, TENANT_NAMESPACE, { spec: spec(active, standby) }, { type: 'merge' });
      did('scaled');
    }
  }
}
