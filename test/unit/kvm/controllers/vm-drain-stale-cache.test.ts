// The VM drain reads the freshest copy of a pod the process's Pods informers
// hold, not the first one's. Found by the fault soak (seed 20261124, issue 26):
// after an API server restart the maintenance drain's informer of every pod was
// behind, waiting out its backoff; the VM pods' informer told of a deletion, the
// drain read the other's stale copy ("not being deleted") and returned, and
// nothing woke it again.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { KVM_ANNOTATIONS, KVMClusters, VM_DRAIN_FINALIZER } from '../../../../src/api/kvm.ts';
import { VM_CLUSTER_LABEL } from '../../../../src/api/vm-image.ts';
import { VmPodReconciler } from '../../../../src/kvm/controllers/vm-drain.ts';
import type { PodObject } from '../../../../src/kvm/plan/views.ts';
import { SharedCache } from '../../../../src/runtime/cache.ts';
import { KubeClient } from '../../../../src/runtime/client.ts';
import { Pods } from '../../../../src/runtime/resources.ts';
import { FakeApiServer, until } from '../../runtime/fake-apiserver.ts';

const POD = 'worker-w1-abc';
const CLUSTER = 'c1';
const vmPod = (deleting: boolean) => ({
  metadata: {
    name: POD,
    namespace: CLUSTER,
    labels: { [VM_CLUSTER_LABEL]: CLUSTER },
    finalizers: [VM_DRAIN_FINALIZER],
    ...(deleting ? { deletionTimestamp: new Date().toISOString(), deletionGracePeriodSeconds: 0 } : {}),
  },
  spec: { nodeName: 'host-1' },
});

describe('VM drain: a deletion told by the VM pods informer, while another Pods informer is behind', () => {
  let fake: FakeApiServer;
  let client: KubeClient;
  let cache: SharedCache;

  beforeEach(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0 });
    cache = new SharedCache(client, { backoffInitialMs: 10, backoffMaxMs: 50 });
  });
  afterEach(async () => {
    await cache.stop();
    client.close();
    await fake.stop();
  });

  it('starts the drain (drain-started written) rather than taking the pod for one not being deleted', async () => {
    // The maintenance drain's informer of every pod comes first, as in the operator.
    cache.informer(Pods);
    cache.informer(KVMClusters.type);
    fake.upsert(KVMClusters.type, { metadata: { name: CLUSTER, namespace: 'default' }, spec: {} });
    fake.upsert(Pods, vmPod(false));
    cache.start();
    await cache.waitForSync();
    // Its watch falls behind; the pod's deletion reaches only an informer that lists it afresh.
    fake.stallWatches();
    fake.upsert(Pods, vmPod(true));
    const vmPods = cache.informer<PodObject>(Pods, { labelSelector: VM_CLUSTER_LABEL });
    await until(() => !!vmPods.get(POD, CLUSTER)?.metadata?.deletionTimestamp, 'the VM pods informer');

    const events = { normal: () => {}, warning: () => {} };
    const workloads = { client: async () => undefined, stale: () => {} };
    const r = new VmPodReconciler({ client, cache, events, log: console } as never, workloads as never);
    const result = await r.reconcile({ name: POD, namespace: CLUSTER });
    const stored = fake.get(Pods, POD, CLUSTER);
    assert.ok(
      stored?.metadata?.annotations?.[KVM_ANNOTATIONS.drainStarted],
      'the drain began: drain-started is written',
    );
    assert.ok(result.requeueAfterMs !== undefined, 'and it looks again while the workload cluster is away');
  });
});
