// VmPodReconciler: the drain before a VM dies. Every VM pod carries our
// finalizer (from its Deployment's template), so its deletion — a scale-down,
// an update, an unhealthy replacement, someone's kubectl delete — waits here:
// the workload node named as the pod is cordoned and drained with the drain
// library (PDBs in the workload cluster honoured, DaemonSet pods left), bounded
// by spec.drain.timeout from the deletion; then the pod is marked drained and
// let go, and the hypervisor powers the VM off. No drain while the whole
// cluster is being deleted (anchor 3.15.0), nor for a VM that never joined.
// Where the anchor needed a DrainerConfig, node-operator and a shutdown
// sidecar polling every 5 s, this is one reconcile loop.
import { KVM_ANNOTATIONS, type KVMCluster, KVMClusters, VM_DRAIN_FINALIZER } from '../../api/kvm.ts';
import { VM_CLUSTER_LABEL } from '../../api/vm-image.ts';
import { cordonNode, DrainTracker, drainStep, type Pod } from '../../drain/index.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { isConflict, isNotFound } from '../../runtime/errors.ts';
import { hasFinalizer, isBeingDeleted, removeFinalizer } from '../../runtime/finalizers.ts';
import type { ReconcilerDeps } from '../../runtime/host.ts';
import { done, type Request, type Result, requeueAfter } from '../../runtime/reconcile.ts';
import { type K8sObject, Nodes, Pods } from '../../runtime/resources.ts';
import { CONFLICT_REQUEUE_MS } from '../../runtime/status.ts';
import type { WorkloadClients } from '../act/workload-clients.ts';
import { drainSeconds, drains } from '../metrics.ts';
import { drainTimeoutMs } from '../plan/spec.ts';
import { DRAIN_PODS_LEFT, type KVMClusterObject, type PodObject } from '../plan/views.ts';

const KC = KVMClusters.type;
const UNREACHABLE_POLL_MS = 5000;
const DRAIN_POLL_MAX_MS = 2000;

type Outcome = 'Drained' | 'TimedOut' | 'Skipped';

/**
 * When the deletion was asked for: the API server sets deletionTimestamp to that
 * moment plus the grace period (600 s for a VM pod), so the grace is taken off.
 */
export function deletionRequestedAt(pod: PodObject, now = Date.now()): number {
  const at = Date.parse(pod.metadata?.deletionTimestamp ?? '');
  if (Number.isNaN(at)) return now;
  return Math.min(now, at - (pod.metadata?.deletionGracePeriodSeconds ?? 0) * 1000);
}

export class VmPodReconciler {
  private readonly deps: ReconcilerDeps;
  private readonly workloads: WorkloadClients;
  private readonly trackers = new Map<string, DrainTracker>();

  constructor(deps: ReconcilerDeps, workloads: WorkloadClients) {
    this.deps = deps;
    this.workloads = workloads;
  }

  async reconcile(req: Request): Promise<Result> {
    // The freshest copy of the process's Pods informers: the one that told of the deletion holds it.
    const pod = this.deps.cache.get<PodObject>(Pods, req.name, req.namespace);
    if (!pod || !isBeingDeleted(pod) || !hasFinalizer(pod, VM_DRAIN_FINALIZER)) return done();
    const annotations = pod.metadata?.annotations ?? {};
    if (annotations[KVM_ANNOTATIONS.drained]) return this.release(pod, undefined);
    const cluster = pod.metadata?.labels?.[VM_CLUSTER_LABEL] ?? '';
    const kc = this.deps.cache.list<KVMClusterObject>(KC).find((c) => c.metadata.name === cluster);
    if (!kc || isBeingDeleted(kc)) return this.release(pod, 'Skipped', 'the cluster is being deleted');

    const startedAt = Date.parse(annotations[KVM_ANNOTATIONS.drainStarted] ?? '') || deletionRequestedAt(pod);
    const elapsed = Date.now() - startedAt;
    const timedOut = elapsed >= drainTimeoutMs(kc.spec);
    const ref = { namespace: kc.metadata.namespace ?? 'default', cluster };
    const workload = await this.workloads.client(ref);
    const node = workload ? await this.workloadNode(workload, pod.metadata?.name ?? '') : 'unreachable';
    if (node === 'absent') return this.release(pod, 'Skipped', 'its VM never joined the workload cluster');
    if (!annotations[KVM_ANNOTATIONS.drainStarted]) {
      await this.annotate(pod, { [KVM_ANNOTATIONS.drainStarted]: new Date(startedAt).toISOString() });
      this.deps.events.normal(
        kc,
        'DrainStarted',
        'Drain',
        `draining workload node ${pod.metadata?.name} before its VM goes`,
      );
    }
    if (node === 'unreachable' || !workload) {
      this.workloads.stale(ref);
      if (timedOut) return this.release(pod, 'TimedOut', 'the workload cluster did not answer', kc, elapsed);
      return requeueAfter(UNREACHABLE_POLL_MS);
    }
    const result = await this.drainOnce(workload, pod);
    if (result === 'unreachable') {
      if (timedOut) return this.release(pod, 'TimedOut', 'the workload cluster did not answer', kc, elapsed);
      return requeueAfter(UNREACHABLE_POLL_MS);
    }
    if (result.done) return this.release(pod, 'Drained', 'drained', kc, elapsed);
    if (timedOut) {
      return this.release(
        pod,
        'TimedOut',
        `${result.left} pods still on it after ${Math.round(elapsed / 1000)}s`,
        kc,
        elapsed,
      );
    }
    if (annotations[DRAIN_PODS_LEFT] !== String(result.left))
      await this.annotate(pod, { [DRAIN_PODS_LEFT]: String(result.left) });
    return requeueAfter(Math.min(result.nextCheckMs, DRAIN_POLL_MAX_MS));
  }

  private async workloadNode(
    workload: KubeClient,
    name: string,
  ): Promise<K8sObject | 'absent' | 'unreachable'> {
    try {
      return await workload.get(Nodes, name);
    } catch (err) {
      return isNotFound(err) ? 'absent' : 'unreachable';
    }
  }

  /** Cordons, then one drain step; 'unreachable' when the workload cluster does not answer. */
  private async drainOnce(
    workload: KubeClient,
    pod: PodObject,
  ): Promise<{ done: boolean; left: number; nextCheckMs: number } | 'unreachable'> {
    const node = pod.metadata?.name ?? '';
    try {
      await cordonNode(workload, node);
      const pods = await workload.listAll<Pod>(Pods, { fieldSelector: `spec.nodeName=${node}` });
      const key = pod.metadata?.uid ?? node;
      const tracker = this.trackers.get(key) ?? new DrainTracker();
      this.trackers.set(key, tracker);
      const step = await drainStep(workload, tracker, pods.items, {
        ignoreDaemonSets: true,
        deleteEmptyDirData: true,
        evictUnmanagedPods: true,
      });
      return {
        done: step.done,
        left: step.pending.length + step.blocked.length,
        nextCheckMs: step.nextCheckMs,
      };
    } catch (err) {
      if (isNotFound(err)) return { done: true, left: 0, nextCheckMs: 0 };
      return 'unreachable';
    }
  }

  private async annotate(pod: PodObject, annotations: Record<string, string>): Promise<void> {
    await this.deps.client.patch(
      Pods,
      pod.metadata?.name ?? '',
      pod.metadata?.namespace,
      { metadata: { annotations } },
      { type: 'merge' },
    );
  }

  /** Marks the pod drained (when an outcome is given) and removes our finalizer, in one guarded write. */
  private async release(
    pod: PodObject,
    outcome: Outcome | undefined,
    why?: string,
    kc?: KVMCluster,
    elapsedMs?: number,
  ): Promise<Result> {
    const finalizers = removeFinalizer(pod, VM_DRAIN_FINALIZER).object.metadata?.finalizers ?? [];
    const patch = {
      metadata: {
        resourceVersion: pod.metadata?.resourceVersion,
        finalizers,
        ...(outcome ? { annotations: { [KVM_ANNOTATIONS.drained]: outcome } } : {}),
      },
    };
    try {
      await this.deps.client.patch(Pods, pod.metadata?.name ?? '', pod.metadata?.namespace, patch, {
        type: 'merge',
      });
    } catch (err) {
      if (isNotFound(err)) return done();
      if (isConflict(err)) return requeueAfter(CONFLICT_REQUEUE_MS);
      throw err;
    }
    this.trackers.delete(pod.metadata?.uid ?? '');
    if (outcome)
      drains.inc({
        outcome: outcome === 'Drained' ? 'drained' : outcome === 'TimedOut' ? 'timedOut' : 'skipped',
      });
    if (elapsedMs !== undefined) drainSeconds.observe(elapsedMs / 1000);
    if (kc && outcome === 'TimedOut')
      this.deps.events.warning(
        kc,
        'DrainTimedOut',
        'Drain',
        `${pod.metadata?.name}: ${why}; its VM goes anyway`,
      );
    else if (kc && outcome === 'Drained')
      this.deps.events.normal(kc, 'NodeDrained', 'Drain', `${pod.metadata?.name} drained; its VM goes`);
    return done();
  }
}
