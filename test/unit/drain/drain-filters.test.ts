import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type DrainOptions,
  decidePod,
  drainFilters,
  drainPolicy,
  type Pod,
  type PodDecision,
  REASONS,
} from '../../../src/drain/index.ts';

type Trait = 'daemonSet' | 'replicaSet' | 'mirror' | 'emptyDir' | 'terminating' | 'succeeded' | 'failed';

/** A pod on node n1 with the given traits; no owner unless one is named (i.e. unmanaged). */
function pod(name: string, traits: Trait[] = [], labels: Record<string, string> = {}): Pod {
  const has = (t: Trait) => traits.includes(t);
  const owner = has('daemonSet') ? 'DaemonSet' : has('replicaSet') ? 'ReplicaSet' : undefined;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      labels,
      annotations: has('mirror') ? { 'kubernetes.io/config.mirror': 'abc' } : {},
      ownerReferences: owner
        ? [{ apiVersion: 'apps/v1', kind: owner, name: 'owner', uid: 'o1', controller: true }]
        : [],
      ...(has('terminating') ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: {
      nodeName: 'n1',
      volumes: has('emptyDir') ? [{ name: 'scratch', emptyDir: {} }] : [{ name: 'cfg', configMap: {} }],
    },
    status: { phase: has('succeeded') ? 'Succeeded' : has('failed') ? 'Failed' : 'Running' },
  } as Pod;
}

const decide = (p: Pod, opts: DrainOptions = {}) => decidePod(p, drainPolicy(opts));
const evict: PodDecision = { action: 'evict' };
const skip = (reason: string): PodDecision => ({ action: 'skip', reason });
const block = (reason: string): PodDecision => ({ action: 'block', reason });
const wait: PodDecision = { action: 'wait', reason: REASONS.terminating };

describe('drain filters', () => {
  it("run in kubectl drain's order, with the pod selector first", () => {
    assert.deepEqual(
      drainFilters.map((f) => f.name),
      ['podSelector', 'skipDeleted', 'daemonSet', 'mirror', 'localStorage', 'unreplicated'],
    );
  });

  it('default to the medik8s settings: grace -1, emptyDir, unmanaged and DaemonSet pods allowed', () => {
    assert.deepEqual(drainPolicy(), {
      gracePeriodSeconds: -1,
      deleteEmptyDirData: true,
      evictUnmanagedPods: true,
      ignoreDaemonSets: true,
      selector: undefined,
    });
  });

  const cases: Array<[string, Pod, DrainOptions, PodDecision, string | undefined]> = [
    ['a ReplicaSet pod is evicted', pod('rs', ['replicaSet']), {}, evict, undefined],
    ['a DaemonSet pod is skipped', pod('ds', ['daemonSet']), {}, skip(REASONS.daemonSetSkipped), 'daemonSet'],
    [
      'a DaemonSet pod blocks the drain when ignoreDaemonSets=false',
      pod('ds', ['daemonSet']),
      { ignoreDaemonSets: false },
      block(REASONS.daemonSetBlocked),
      'daemonSet',
    ],
    ['a mirror pod is skipped', pod('static', ['mirror']), {}, skip(REASONS.mirror), 'mirror'],
    [
      'a mirror pod is skipped even when completed',
      pod('static', ['mirror', 'succeeded']),
      {},
      skip(REASONS.mirror),
      'mirror',
    ],
    ['an emptyDir pod is evicted by default', pod('tmp', ['replicaSet', 'emptyDir']), {}, evict, undefined],
    [
      'an emptyDir pod blocks the drain when deleteEmptyDirData=false',
      pod('tmp', ['replicaSet', 'emptyDir']),
      { deleteEmptyDirData: false },
      block(REASONS.localStorageBlocked),
      'localStorage',
    ],
    ['an unmanaged pod is evicted by default', pod('bare'), {}, evict, undefined],
    [
      'an unmanaged pod blocks the drain when evictUnmanagedPods=false',
      pod('bare'),
      { evictUnmanagedPods: false },
      block(REASONS.unmanagedBlocked),
      'unreplicated',
    ],
    [
      'an unmanaged emptyDir pod is refused for its local storage first (filter order)',
      pod('bare-tmp', ['emptyDir']),
      { deleteEmptyDirData: false, evictUnmanagedPods: false },
      block(REASONS.localStorageBlocked),
      'localStorage',
    ],
    [
      'a completed pod is evicted even when unmanaged with emptyDir and both refused',
      pod('job', ['emptyDir', 'succeeded']),
      { deleteEmptyDirData: false, evictUnmanagedPods: false },
      evict,
      undefined,
    ],
    [
      'a failed DaemonSet pod is evicted even when ignoreDaemonSets=false',
      pod('ds-failed', ['daemonSet', 'failed']),
      { ignoreDaemonSets: false },
      evict,
      undefined,
    ],
    [
      'a terminating pod is waited for, never evicted again',
      pod('old', ['replicaSet', 'terminating']),
      {},
      wait,
      'skipDeleted',
    ],
    [
      'a terminating unmanaged pod is waited for even when evictUnmanagedPods=false',
      pod('old', ['terminating']),
      { evictUnmanagedPods: false },
      wait,
      'skipDeleted',
    ],
    [
      'a terminating DaemonSet pod stays skipped, so it cannot hold the drain',
      pod('ds-old', ['daemonSet', 'terminating', 'succeeded']),
      {},
      skip(REASONS.daemonSetSkipped),
      'skipDeleted',
    ],
    [
      'a terminating DaemonSet pod is waited for when ignoreDaemonSets=false',
      pod('ds-old', ['daemonSet', 'terminating']),
      { ignoreDaemonSets: false },
      wait,
      'skipDeleted',
    ],
    [
      'a terminating mirror pod stays skipped',
      pod('static', ['mirror', 'terminating']),
      {},
      skip(REASONS.mirror),
      'skipDeleted',
    ],
    [
      'a pod outside the podSelector is skipped',
      pod('web', ['replicaSet'], { app: 'web' }),
      { podSelector: 'app=db' },
      skip(REASONS.notSelected),
      'podSelector',
    ],
    [
      'a pod inside the podSelector is evicted',
      pod('db', ['replicaSet'], { app: 'db', tier: 'data' }),
      { podSelector: 'app in (db,cache),tier' },
      evict,
      undefined,
    ],
    [
      'a pod outside the podSelector is skipped before any policy could block it',
      pod('ds', ['daemonSet'], { app: 'agent' }),
      { podSelector: 'app!=agent', ignoreDaemonSets: false },
      skip(REASONS.notSelected),
      'podSelector',
    ],
    [
      'a terminating pod outside the podSelector is not waited for',
      pod('old', ['replicaSet', 'terminating'], { app: 'web' }),
      { podSelector: 'app=db' },
      skip(REASONS.notSelected),
      'podSelector',
    ],
    [
      'an empty podSelector selects every pod',
      pod('web', ['replicaSet'], { app: 'web' }),
      { podSelector: '' },
      evict,
      undefined,
    ],
  ];

  for (const [name, p, opts, want, filter] of cases) {
    it(name, () => {
      const got = decide(p, opts);
      assert.deepEqual(got.decision, want);
      assert.equal(got.filter, filter);
    });
  }

  it('rejects an unparsable podSelector with a message naming the field', () => {
    assert.throws(() => drainPolicy({ podSelector: 'app in (a' }), /invalid podSelector/);
  });
});
