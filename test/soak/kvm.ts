// The soak's KVM workload-cluster load: KVMClusters whose nodes are VMs of the
// local cluster's simulated hypervisor, each running a PDB-protected
// Deployment inside, their workers scaled up and down and each upgraded to a
// new release once, seeded; the hypervisor's faults (VMs dying, never booting,
// booting slowly) on a track of their own. Also what the sampler reads of them
// (kvm-invariants.ts) and what "converged" means for them. The VM pods also
// live on the management fleet the maintenance churn and the rollout drain.
import {
  KVM_ANNOTATIONS,
  KVM_LABELS,
  type KVMCluster,
  KVMClusters,
  VM_DRAIN_FINALIZER,
} from '../../src/api/kvm.ts';
import { KUBECONFIG_KEY, VM_CLUSTER_LABEL } from '../../src/api/vm-image.ts';
import { hypervisorRequest } from '../../src/cluster/infra/hypervisor/api.ts';
import { consolePaths, type Vm } from '../../src/cluster/infra/hypervisor/protocol.ts';
import { seededRandom } from '../../src/cluster/infra/kit/random.ts';
import { kubeconfigSecretName } from '../../src/kvm/plan/names.ts';
import { drainTimeoutMs } from '../../src/kvm/plan/spec.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isAlreadyExists } from '../../src/runtime/errors.ts';
import { KubeConfig } from '../../src/runtime/kubeconfig.ts';
import {
  Deployments,
  type K8sObject,
  Namespaces,
  Nodes,
  PodDisruptionBudgets,
  Pods,
  Secrets,
} from '../../src/runtime/resources.ts';
import type { FaultRecord } from './faults.ts';
import type { NodeView, PdbView, PodView } from './invariants.ts';
import type { KvmClusterView, KvmSample, VmPodView } from './kvm-invariants.ts';
import { disruptionOf } from './sampler.ts';
import { describeKvmFault, type KvmFault } from './schedule.ts';
import { runFaultTrack, SteppedLoad } from './stepping.ts';

export const KVM_NAMESPACE = 'soak-kvm';
const KC = KVMClusters.type;
export const RELEASES = [
  { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' },
  { version: '20.2.0', kubernetesVersion: 'v1.37.2', osVersion: '4230.2.1' },
] as const;
/** The boot time of a VM outside a slow-boot fault. */
const BOOT_DELAY_MS = 1_000;
/** The app inside each workload cluster: 2 replicas under a PDB of minAvailable 1 (the case). */
const APP = { name: 'app', namespace: 'default', replicas: 2, minAvailable: 1 };

export interface KvmOptions {
  seed: number;
  /** Master count of each cluster, one entry a cluster; workers are scaled within 2..maxWorkers. */
  masters: number[];
  maxWorkers: number;
}

type Kc = KVMCluster & K8sObject;
type PodObj = K8sObject & {
  spec?: { nodeName?: string };
  status?: { conditions?: { type: string; status: string; reason?: string }[] };
};
type NodeObj = K8sObject & {
  spec?: { unschedulable?: boolean; taints?: { key: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
};
type PdbObj = K8sObject & {
  spec: { minAvailable?: number; selector?: { matchLabels?: Record<string, string> } };
};

const nodes = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${i + 1}`,
    cpus: 1,
    memory: '1G',
    dockerVolumeSizeGB: 10,
  }));
const condition = (o: { status?: { conditions?: { type: string; status: string }[] } }, type: string) =>
  o.status?.conditions?.find((c) => c.type === type)?.status === 'True';

/**
 * How long the clusters may take to be Created on their release once the faults stop. WHY 150 s:
 * a VM that died in the last fault is replaced after notReadyFor (10 s) and its drain (up to the
 * 20 s timeout: its node's pods cannot confirm their eviction), and boots in up to 8 s (a slow boot
 * begun in the fault keeps its delay) and turns Ready in ~5 s: ~45 s; the fault kills up to two
 * VMs, which one cluster replaces one at a time: 90 s; then an upgrade the replacements held up
 * rolls the rest of the largest cluster (6 VMs) one at a time, ~10 s each: 150 s in all.
 */
export const KVM_CONVERGE_MS = 150_000;

export class KvmLoad extends SteppedLoad {
  readonly did: Record<string, number> = {};
  /** The hypervisor faults injected, for the report. */
  readonly faults: FaultRecord[] = [];
  /** When unconverged() first found every cluster settled (the report's KVM convergence time). */
  convergedAt: number | undefined;
  private readonly client: KubeClient;
  private readonly hypervisor: string;
  private readonly o: KvmOptions;
  private readonly random: () => number;
  private readonly workloads = new Map<string, KubeClient>();
  private readonly appMade = new Set<string>();

  constructor(client: KubeClient, hypervisor: string, o: KvmOptions) {
    super();
    this.client = client;
    this.hypervisor = hypervisor;
    this.o = o;
    this.random = seededRandom(o.seed ^ 0x4b56);
  }

  get names(): string[] {
    return this.o.masters.map((_, i) => `kvm-${i}`);
  }

  /** The clusters on the first release, 2 workers each; every VM boots in a second. */
  async setUp(): Promise<void> {
    await hypervisorRequest(this.hypervisor, 'PUT', consolePaths.settings, { bootDelayMs: BOOT_DELAY_MS });
    await this.client.create(Namespaces, { metadata: { name: KVM_NAMESPACE } });
    for (const [i, name] of this.names.entries())
      await this.client.create(
        KC,
        KVMClusters.make(
          { name, namespace: KVM_NAMESPACE },
          {
            masters: nodes('m', this.o.masters[i]!),
            workers: nodes('w', 2),
            release: RELEASES[0],
            network: { vni: 4100 + i },
            api: { domain: `api.${name}.soak.example.com` },
            // Short, so that a fault heals within the run (see KVM_CONVERGE_MS): a dead or
            // never-booted VM is replaced after 10 s, one at a time; a drain ends after 20 s (a dead
            // VM's node keeps its evicted pods terminating until then: no kubelet confirms them).
            unhealthyNodes: { terminate: true, notReadyFor: '10s', maxFraction: '10%', pauseBetween: '1s' },
            drain: { timeout: '20s' },
          },
        ) as never,
      );
  }

  /** Runs until stop(): one seeded step every `everyMs`. */
  run(everyMs: number): Promise<void> {
    return this.stepEvery(everyMs, () => this.step());
  }

  private did1(what: string): void {
    this.did[what] = (this.did[what] ?? 0) + 1;
  }

  /** The app in each workload cluster that answers and has none yet; then a seeded scale or upgrade. */
  private async step(): Promise<void> {
    for (const name of this.names) if (!this.appMade.has(name)) await this.makeApp(name).catch(() => {}); // not up yet: next step
    const name = this.names[Math.floor(this.random() * this.names.length)]!;
    const r = this.random();
    const workers = 2 + Math.floor(this.random() * (this.o.maxWorkers - 1));
    const kc = await this.client.get<Kc>(KC, name, KVM_NAMESPACE);
    if (r < 0.3 && kc.spec.release.version === RELEASES[0].version) {
      await this.client.patch(KC, name, KVM_NAMESPACE, { spec: { release: RELEASES[1] } }, { type: 'merge' });
      this.did1('upgraded');
    } else if ((kc.spec.workers ?? []).length !== workers) {
      await this.client.patch(
        KC,
        name,
        KVM_NAMESPACE,
        { spec: { workers: nodes('w', workers) } },
        { type: 'merge' },
      );
      this.did1(`scaled to ${workers} workers`);
    }
  }

  private async makeApp(name: string): Promise<void> {
    const w = await this.workload(name);
    if (!w) return;
    const labels = { app: APP.name };
    const meta = { name: APP.name, namespace: APP.namespace };
    await w
      .create(Deployments, {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: meta,
        spec: {
          replicas: APP.replicas,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [{ name: APP.name, image: 'example.invalid/app:1' }],
              tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
            },
          },
        },
      } as K8sObject)
      .catch(ignoreExists);
    await w
      .create(PodDisruptionBudgets, {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: meta,
        spec: { minAvailable: APP.minAvailable, selector: { matchLabels: labels } },
      } as K8sObject)
      .catch(ignoreExists);
    this.appMade.add(name);
  }

  /**
   * A client of the workload cluster through the kubeconfig the hypervisor published; undefined before.
   * Not src/kvm/act/workload-clients.ts: its clients retry, wait 5 s and are fenced with the
   * operator's leader; the sampler's must never retry, wait 3 s at most and belong to no leader.
   */
  private async workload(name: string): Promise<KubeClient | undefined> {
    const have = this.workloads.get(name);
    if (have) return have;
    const secret = await this.client
      .get<{ data?: Record<string, string> }>(Secrets, kubeconfigSecretName(name), KVM_NAMESPACE)
      .catch(() => undefined);
    const text = secret?.data?.[KUBECONFIG_KEY];
    if (!text) return undefined;
    const kc = new KubeConfig();
    kc.loadFromString(Buffer.from(text, 'base64').toString('utf8'));
    // No retries and a short limit: a sample must not wait on a workload API server that is away.
    const c = KubeClient.fromKubeConfig(kc, {
      userAgent: 'soak-kvm',
      qps: 0,
      maxRetries: 0,
      requestTimeoutMs: 3_000,
    });
    this.workloads.set(name, c);
    return c;
  }

  /** The hypervisor's faults of the schedule, each when its time comes, until the run's end. */
  async injectFaults(
    schedule: readonly KvmFault[],
    started: number,
    log: (m: string) => void,
  ): Promise<void> {
    const pick = seededRandom(this.o.seed ^ 0x4b57);
    await runFaultTrack({
      schedule,
      started,
      stopped: () => this.stopped,
      describe: describeKvmFault,
      apply: async (f, note) => {
        if (f.kind === 'die') {
          const running = (await this.vms()).filter((v) => v.state === 'Running');
          const names = Array.from(
            { length: Math.min(f.vms ?? 1, running.length) },
            () => running.splice(Math.floor(pick() * running.length), 1)[0]!.name,
          );
          note(`: ${names.join(', ') || 'none running'}`);
          await hypervisorRequest(this.hypervisor, 'PUT', consolePaths.faults, { die: names });
        } else if (f.kind === 'neverBoot')
          await hypervisorRequest(this.hypervisor, 'PUT', consolePaths.faults, { failNextBoots: 1 });
        else
          await hypervisorRequest(this.hypervisor, 'PUT', consolePaths.settings, {
            bootDelayMs: f.bootDelayMs,
          });
      },
      clear: () => this.clearFaults(),
      log,
      records: this.faults,
    });
  }

  /** Clears the hypervisor's faults and its slow boot (a VM that died stays dead: the operator replaces it). */
  async clearFaults(): Promise<void> {
    await hypervisorRequest(this.hypervisor, 'DELETE', consolePaths.faults);
    await hypervisorRequest(this.hypervisor, 'PUT', consolePaths.settings, { bootDelayMs: BOOT_DELAY_MS });
  }

  /** The workload clusters' VMs, as the hypervisor has them. */
  private async vms(): Promise<Vm[]> {
    const all = await hypervisorRequest<Vm[]>(this.hypervisor, 'GET', consolePaths.vms);
    return all.filter((v) => this.names.includes(v.cluster));
  }

  /**
   * The clusters and their VM pods, then each workload cluster, then the hypervisor's VMs
   * (kvm-invariants.ts). WHY the VMs last: a VM dies before its node turns NotReady, so read after
   * the nodes, a VM whose node a fault had just taken is seen dead. Read first, it was seen running
   * and its master counted as taken by us (seed 424242 in make test: two masters killed at once,
   * both counted as taken, "out before: none").
   */
  async sample(): Promise<{ kvm: KvmSample }> {
    const [clusters, pods] = await Promise.all([
      this.client.list<Kc>(KC, { namespace: KVM_NAMESPACE }),
      this.client.list<PodObj>(Pods, { labelSelector: VM_CLUSTER_LABEL }),
    ]);
    const workloads = await Promise.all(clusters.items.map((kc) => this.readWorkload(kc.metadata.name!)));
    const vms = await this.vms();
    const now = Date.now();
    const faulted = new Set(
      vms
        // A boot three seconds past its time hangs (failNextBoots); a dead VM is dead.
        .filter((v) => v.state === 'Dead' || (v.state === 'Booting' && v.bootsAt < now - 3_000))
        .map((v) => `${v.namespace}/${v.name}`),
    );
    const views = clusters.items.map((kc, i): KvmClusterView => {
      const name = kc.metadata.name!;
      const own = pods.items.filter((p) => p.metadata?.namespace === name);
      const workload = workloads[i];
      return {
        name: `${KVM_NAMESPACE}/${name}`,
        masters: kc.spec.masters.map((m) => m.id),
        drainTimeoutMs: drainTimeoutMs(kc.spec),
        vms: own.map((p) => vmPodView(p, faulted.has(`${name}/${p.metadata?.name}`))),
        ...(workload ? { workload } : {}),
      };
    });
    return { kvm: { clusters: views } };
  }

  private async readWorkload(name: string): Promise<KvmClusterView['workload']> {
    const w = await this.workload(name);
    if (!w) return undefined;
    try {
      const [nodes, pods, pdbs] = await Promise.all([
        w.list<NodeObj>(Nodes),
        w.list<PodObj>(Pods, { namespace: APP.namespace }),
        w.list<PdbObj>(PodDisruptionBudgets, { namespace: APP.namespace }),
      ]);
      return {
        nodes: nodes.items.map(
          (n): NodeView => ({
            name: n.metadata!.name!,
            ready: condition(n, 'Ready'),
            unschedulable: n.spec?.unschedulable === true,
            taints: (n.spec?.taints ?? []).map((t) => t.key),
          }),
        ),
        pods: pods.items.map(
          (p): PodView => ({
            name: p.metadata?.name ?? '',
            namespace: p.metadata?.namespace ?? '',
            labels: p.metadata?.labels ?? {},
            ready: condition(p, 'Ready'),
            deleting: !!p.metadata?.deletionTimestamp,
            ...(p.spec?.nodeName ? { node: p.spec.nodeName } : {}),
            ...disruptionOf(p),
          }),
        ),
        pdbs: pdbs.items.map(
          (p): PdbView => ({
            namespace: p.metadata?.namespace ?? '',
            name: p.metadata?.name ?? '',
            matchLabels: p.spec.selector?.matchLabels ?? {},
            minAvailable: p.spec.minAvailable ?? 0,
          }),
        ),
      };
    } catch {
      return undefined; // away (its API server restarting, a slow answer): not judged this sample
    }
  }

  /** What still differs from the settled state ('' when converged): every cluster Created on its release, at its size. */
  async unconverged(): Promise<string> {
    const out: string[] = [];
    const clusters = (await this.client.list<Kc>(KC, { namespace: KVM_NAMESPACE })).items;
    const pods = (await this.client.list<PodObj>(Pods, { labelSelector: VM_CLUSTER_LABEL })).items;
    for (const kc of clusters) {
      const name = kc.metadata.name!;
      const want = kc.spec.masters.length + (kc.spec.workers ?? []).length;
      const at = (type: string) =>
        kc.status?.conditions?.find((c) => c.type === type && c.observedGeneration === kc.metadata.generation)
          ?.status;
      const vms = pods.filter((p) => p.metadata?.namespace === name);
      const onRelease = vms.filter(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          p.metadata?.annotations?.[KVM_ANNOTATIONS.release] === kc.spec.release.version,
      );
      const ok =
        at('Created') === 'True' &&
        at('Updating') === 'False' &&
        kc.status?.versions?.at(-1)?.release === kc.spec.release.version &&
        kc.status?.readyNodes === want &&
        vms.length === want &&
        onRelease.length === want;
      if (!ok)
        out.push(
          `kvm ${name}: Created ${at('Created')}, Updating ${at('Updating')}, ${kc.status?.readyNodes}/${want} Ready, ${onRelease.length} of ${vms.length} VM pods on ${kc.spec.release.version}`,
        );
    }
    if (clusters.length !== this.names.length)
      out.push(`kvm: ${clusters.length} clusters of ${this.names.length}`);
    if (out.length === 0) this.convergedAt ??= Date.now();
    return out.join('; ');
  }

  /** The clusters' status, VM pods and the hypervisor's VMs, for a dump when they do not converge. */
  async dump(): Promise<object> {
    const [clusters, pods, vms] = await Promise.all([
      this.client.list<Kc>(KC, { namespace: KVM_NAMESPACE }),
      this.client.list<PodObj & { status?: { phase?: string } }>(Pods, { labelSelector: VM_CLUSTER_LABEL }),
      this.vms(),
    ]);
    return {
      clusters: clusters.items.map((c) => ({ name: c.metadata.name, spec: c.spec, status: c.status })),
      vmPods: pods.items.map((p) => ({
        name: `${p.metadata?.namespace}/${p.metadata?.name}`,
        node: p.spec?.nodeName,
        phase: p.status?.phase,
        deletionTimestamp: p.metadata?.deletionTimestamp,
        finalizers: p.metadata?.finalizers,
        annotations: p.metadata?.annotations,
        conditions: p.status?.conditions,
      })),
      vms,
      sample: await this.sample().catch(String),
    };
  }

  close(): void {
    for (const c of this.workloads.values()) c.close();
  }
}

function ignoreExists(err: unknown): void {
  if (!isAlreadyExists(err)) throw err;
}

/** A VM pod as the KVM invariants see it. */
export function vmPodView(p: PodObj, faulted: boolean): VmPodView {
  const m = p.metadata ?? {};
  const grace = m.deletionGracePeriodSeconds ?? 0;
  const deletion = Date.parse(m.deletionTimestamp ?? '');
  const drained = m.annotations?.[KVM_ANNOTATIONS.drained];
  return {
    name: m.name ?? '',
    nodeId: m.labels?.[KVM_LABELS.nodeId] ?? '',
    role: m.labels?.[KVM_LABELS.role] === 'master' ? 'master' : 'worker',
    deleting: !Number.isNaN(deletion),
    ...(Number.isNaN(deletion)
      ? {}
      : { deletionAskedAt: deletionAskedAt(deletion - grace * 1000, m.annotations) }),
    held: (m.finalizers ?? []).includes(VM_DRAIN_FINALIZER),
    ...(drained ? { drained } : {}),
    // Whoever it was (a drain's eviction, pod GC once its host Node went, a taint), but the KVM
    // rollout, which marks the master VM pods it evicts: its taking is judged.
    evicted:
      p.status?.conditions?.some((c) => c.type === 'DisruptionTarget' && c.status === 'True') === true &&
      m.annotations?.[KVM_ANNOTATIONS.rolloutEviction] === undefined,
    faulted,
  };
}

/**
 * When a VM pod's deletion was first asked. WHY not deletionTimestamp alone: a later deletion with
 * a shorter grace (pod GC's, once the pod's host Node is gone) moves it, while the drain counts
 * from the first ask, which the operator wrote as drain-started when it began.
 */
function deletionAskedAt(fromTimestamp: number, annotations: Record<string, string> | undefined): number {
  const started = Date.parse(annotations?.[KVM_ANNOTATIONS.drainStarted] ?? '');
  return Number.isNaN(started) ? fromTimestamp : Math.min(fromTimestamp, started);
}
