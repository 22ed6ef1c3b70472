// A host a cluster gives back leaves its status before its label frees it. Found by the fault soak
// (seed 424242, run 3 with the KVM load): tenantHosts, one sample with metal3/bm-r0-01 listed in
// the status of both soak-tenant/tc-1 and tc-2. tc-2, scaled from 4 hosts to 1, unlabelled its
// hosts one by one and wrote its status only after all three releases; tc-1, just made again,
// claimed the first host freed and listed it meanwhile. The label was never on two clusters,
// but the status (and the services rendered with it) named a host another cluster held.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TENANT_FINALIZER, TENANT_LABELS, TenantClusters } from '../../../src/api/tenant.ts';
import type { KubeClient } from '../../../src/runtime/client.ts';
import type { EventRecorder } from '../../../src/runtime/events.ts';
import type { CacheReader, ReconcilerDeps } from '../../../src/runtime/host.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import type { ReconcileContext } from '../../../src/runtime/reconcile.ts';
import { TenantClusterReconciler } from '../../../src/tenant/controller.ts';

type Obj = {
  metadata: Record<string, unknown> & { name: string; namespace: string; resourceVersion: string };
  spec?: unknown;
  status?: { hosts?: Record<string, { name: string; namespace: string }[]>; claimedHosts?: number };
};

const held = (name: string, rv: string): Obj => ({
  metadata: {
    name,
    namespace: 'metal3',
    resourceVersion: rv,
    labels: {
      [TENANT_LABELS.clusterNamespace]: 'soak-tenant',
      [TENANT_LABELS.clusterName]: 'tc-2',
      [TENANT_LABELS.role]: 'Worker',
      [TENANT_LABELS.standby]: 'false',
    },
  },
  spec: { online: true },
  status: { provisioning: { state: 'available' }, operationalStatus: 'OK', poweredOn: true } as never,
});

/** tc-2 holding bm-0 and bm-1 (both in its status), asked for one; `deleting` marks it deleted. */
function setup(deleting: boolean) {
  const log = createLogger({ level: 'silent' });
  const hosts = [held('bm-0', '10'), held('bm-1', '11')];
  const listing = hosts.map((h) => ({ name: h.metadata.name, namespace: 'metal3', standby: false }));
  let tc: Obj = {
    ...TenantClusters.make(
      { name: 'tc-2', namespace: 'soak-tenant' },
      { nodes: { Worker: { labelSelector: { matchLabels: {} }, count: { active: 1, standby: 0 } } } },
    ),
    status: { hosts: { Worker: listing }, claimedHosts: 2 },
  } as Obj;
  tc.metadata = {
    ...tc.metadata,
    resourceVersion: '5',
    generation: 1,
    finalizers: [TENANT_FINALIZER],
    ...(deleting ? { deletionTimestamp: '2026-11-26T17:52:00Z' } : {}),
  };
  /** What tc-2's status listed at each host release, and the finalizer patches' guards. */
  const listedAtRelease: string[][] = [];
  const finalizerGuards: unknown[] = [];
  const listed = () => Object.values(tc.status?.hosts ?? {}).flatMap((l) => l.map((h) => h.name));
  const client = {
    patch: async (_t: unknown, name: string, _ns: string, patch: { metadata: Record<string, unknown> }) => {
      if (name === 'tc-2') {
        finalizerGuards.push(patch.metadata.resourceVersion);
        return tc;
      }
      const labels = patch.metadata.labels as Record<string, string | null>;
      if (labels[TENANT_LABELS.clusterName] === null) listedAtRelease.push(listed());
      const h = hosts.find((x) => x.metadata.name === name)!;
      h.metadata.resourceVersion = String(Number(h.metadata.resourceVersion) + 100);
      return structuredClone(h);
    },
    updateStatus: async (_t: unknown, obj: Obj) => {
      tc = structuredClone({ ...obj, metadata: { ...obj.metadata, resourceVersion: '6' } });
      return tc;
    },
    get: async () => {
      throw Object.assign(new Error('not found'), { code: 404 });
    },
  } as unknown as KubeClient;
  const cache = {
    get: () => tc,
    list: (type: { kind: string }) =>
      type.kind === 'BareMetalHost' ? hosts.map((h) => structuredClone(h)) : [],
  } as unknown as CacheReader;
  const events = { normal: () => {}, warning: () => {} } as unknown as EventRecorder;
  const deps: ReconcilerDeps = { client, cache, events, log };
  const r = new TenantClusterReconciler(deps, { sipCompatibleLabels: false });
  const ctx = { controller: 'tenantcluster', log, signal: new AbortController().signal } as ReconcileContext;
  return {
    listedAtRelease,
    finalizerGuards,
    listed,
    reconcile: () => r.reconcile({ name: 'tc-2', namespace: 'soak-tenant' }, ctx),
  };
}

describe('a host a tenant cluster gives back', () => {
  it('on a scale-down, is gone from the status before its label is removed', async () => {
    const s = setup(false);
    await s.reconcile();
    assert.equal(s.listedAtRelease.length, 1, 'one host released');
    assert.deepEqual(s.listedAtRelease[0], ['bm-0'], 'the released host bm-1 no longer listed');
    assert.deepEqual(s.listed(), ['bm-0']);
  });

  it('when its cluster is deleted, is gone from the status before its label is removed', async () => {
    const s = setup(true);
    await s.reconcile();
    assert.deepEqual(s.listedAtRelease, [[], []], 'both released with none listed');
    // The finalizer patch is guarded by the copy the status write returned, not the one it replaced.
    assert.deepEqual(s.finalizerGuards, ['6']);
  });
});
