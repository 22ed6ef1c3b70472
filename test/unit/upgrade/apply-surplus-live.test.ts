// Found by the fault soak (seed 20261124, 2026-11-26, with the bare-metal load), twice: a replica
// that took the lease after a partition planned from a cache its watches had stopped feeding. Once
// it gave up an heir "not Ready in time" that had since joined, replaced its donor and turned
// Ready; once it took two heirs already released from their deleted donors for mints with no
// outdated node left. Each was marked surplus, drained and deleted: the group stayed one or two
// nodes short. A node is now marked surplus only when the API server holds it as the plan saw it
// (and an heir's donor is still there).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeVersion } from '../../../src/api/upgrade.ts';
import type { KubeClient } from '../../../src/runtime/client.ts';
import { ApiError } from '../../../src/runtime/errors.ts';
import type { EventRecorder } from '../../../src/runtime/events.ts';
import type { K8sObject } from '../../../src/runtime/resources.ts';
import { RolloutApplier } from '../../../src/upgrade/controllers/apply.ts';
import type { CloudProvider } from '../../../src/upgrade/providers/interface.ts';
import type { ObservedNode, ObservedState, PendingView } from '../../../src/upgrade/rollout/classify.ts';
import type { NodeObject } from '../../../src/upgrade/rollout/observe.ts';
import { planRollout } from '../../../src/upgrade/rollout/planner.ts';

const NOW = 1_000_000;
const nv = {
  apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
  kind: 'NodeVersion',
  metadata: { name: 'req', generation: 1, uid: 'u1' },
  spec: { image: 'img-2' },
} as NodeVersion & K8sObject;
const node = (name: string, o: Partial<ObservedNode> = {}): ObservedNode => ({
  name,
  providerID: `sim://${name}`,
  groupId: 'w',
  role: 'Worker',
  image: 'img-1',
  kubernetesVersion: 'v1.37.1',
  ready: true,
  ...o,
});
const view = (nodes: ObservedNode[], pending: PendingView[] = []): ObservedState => ({
  nodes,
  pending,
  groups: [{ id: 'w', role: 'Worker', min: 1, max: 20, image: 'img-2' }],
  target: { image: 'img-2', kubernetesVersion: '' },
  strategy: { maxSurge: 1, maxUnavailable: 0, controlPlaneFirst: true, paused: false },
  now: NOW,
  heirReadyTimeoutMs: 30_000,
});
/** Donor "old" paired 60 s ago with heir "new", not Ready in the cache. */
const heirNotReady = view([
  node('old', { annotations: { heir: 'new' }, pairedAt: NOW - 60_000 }),
  node('new', { image: 'img-2', ready: false, annotations: { donor: 'old' } }),
]);
/** "new" on target with its Join PendingNode still cached, and no outdated node left: a mint with no donor. */
const mintNoDonor = view(
  [node('new', { image: 'img-2' })],
  [
    {
      name: 'new',
      providerID: 'sim://new',
      groupId: 'w',
      nodeName: 'new',
      goal: 'Join',
      deadline: NOW + 60_000,
      image: 'img-2',
    },
  ],
);

/** The API server's nodes: resourceVersion ("1" is what the cache holds) and readiness. */
type Live = Record<string, { rv: string; ready: boolean } | undefined>;
const nodeObject = (name: string, rv: string, ready: boolean) =>
  ({
    metadata: { name, uid: `uid-${name}`, resourceVersion: rv },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  }) as NodeObject;

/** Applies the cached view's plan against an API server holding `live`; answers the nodes patched. */
async function patched(cached: ObservedState, live: Live): Promise<string[]> {
  const wrote: string[] = [];
  const client = {
    get: async (_t: unknown, name: string) => {
      const n = live[name];
      if (!n) throw new ApiError(404, `nodes "${name}" not found`, { reason: 'NotFound' });
      return nodeObject(name, n.rv, n.ready);
    },
    patch: async (_t: unknown, name: string) => void wrote.push(name),
    delete: async () => {},
    createIfAbsent: async () => {},
  } as unknown as KubeClient;
  const inCache = new Map(cached.nodes.map((n) => [n.name, nodeObject(n.name, '1', n.ready)]));
  const a = new RolloutApplier(
    {
      client,
      cloud: {} as CloudProvider,
      events: { normal() {}, warning() {} } as unknown as EventRecorder,
      maintenance: () => undefined,
      node: (name) => inCache.get(name),
    },
    nv,
    new Date(NOW),
    { debug() {}, info() {}, warn() {} } as never,
  );
  await a.applyAll(planRollout(cached));
  return wrote;
}

describe('a node is marked surplus only when the API server holds it as the plan saw it', () => {
  it('the cached views mark "new" surplus', () => {
    for (const [s, cause] of [
      [heirNotReady, 'heirNotReady'],
      [mintNoDonor, 'noDonor'],
    ] as const)
      assert.ok(
        planRollout(s).some((a) => a.type === 'markObsolete' && a.node === 'new' && a.cause === cause),
      );
  });
  const table: Array<[string, ObservedState, Live, boolean]> = [
    [
      'heir: live as cached, donor there: given up',
      heirNotReady,
      { old: { rv: '1', ready: true }, new: { rv: '1', ready: false } },
      true,
    ],
    [
      'heir: changed since (Ready now): kept',
      heirNotReady,
      { old: { rv: '1', ready: true }, new: { rv: '2', ready: true } },
      false,
    ],
    [
      'heir: its donor already gone (it replaced it): kept',
      heirNotReady,
      { new: { rv: '1', ready: false } },
      false,
    ],
    ['heir: gone itself: nothing marked', heirNotReady, { old: { rv: '1', ready: true } }, false],
    ['mint: live as cached: surplus', mintNoDonor, { new: { rv: '1', ready: true } }, true],
    [
      'mint: changed since (paired and released): kept',
      mintNoDonor,
      { new: { rv: '7', ready: true } },
      false,
    ],
  ];
  for (const [name, cached, live, marked] of table)
    it(name, async () => {
      const wrote = await patched(cached, live);
      assert.equal(wrote.includes('new'), marked, `patched: ${wrote.join(', ')}`);
    });
});
