// Found by the fault soak (seed 424242, cloud throttling half the calls): a donor whose
// instance deletion failed had its heir's pairing cleared anyway, so the donor stood
// alone, was paired again and replaced a second time (one instance too many per failure).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeVersion } from '../../../src/api/upgrade.ts';
import type { KubeClient } from '../../../src/runtime/client.ts';
import type { EventRecorder } from '../../../src/runtime/events.ts';
import type { K8sObject } from '../../../src/runtime/resources.ts';
import { RolloutApplier } from '../../../src/upgrade/controllers/apply.ts';
import { CloudError, type CloudProvider } from '../../../src/upgrade/providers/interface.ts';
import type { Action } from '../../../src/upgrade/rollout/actions.ts';
import type { ObservedNode, ObservedState, PendingView } from '../../../src/upgrade/rollout/classify.ts';
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
const state = (nodes: ObservedNode[], pending: PendingView[] = []): ObservedState => ({
  nodes,
  pending,
  groups: [{ id: 'w', role: 'Worker', min: 1, max: 20, image: 'img-2' }],
  target: { image: 'img-2', kubernetesVersion: '' },
  strategy: { maxSurge: 1, maxUnavailable: 0, controlPlaneFirst: true, paused: false },
  now: NOW,
});
const replacedPair = state([
  node('old', { annotations: { heir: 'new' }, drain: 'Succeeded' }),
  node('new', { image: 'img-2', annotations: { donor: 'old' } }),
]);
const expiredJoin = state(
  [node('a')],
  [{ name: 'pn-x', providerID: 'sim://x', groupId: 'w', goal: 'Join', deadline: NOW - 1 }],
);

/** Applies `actions` with a cloud whose deleteNode fails or not; returns what was written. */
async function apply(actions: Action[], deleteFails: boolean): Promise<string[]> {
  const wrote: string[] = [];
  const cloud = {
    deleteNode: async (id: string) => {
      if (deleteFails) throw new CloudError('rate exceeded (injected)', { retryable: true });
      wrote.push(`cloud delete ${id}`);
    },
  } as unknown as CloudProvider;
  const client = {
    delete: async (_t: unknown, name: string) => void wrote.push(`delete ${name}`),
    createIfAbsent: async (_t: unknown, o: K8sObject) => void wrote.push(`create ${o.metadata?.name}`),
    patch: async (_t: unknown, name: string) => void wrote.push(`patch ${name}`),
  } as unknown as KubeClient;
  const events = { normal() {}, warning() {} } as unknown as EventRecorder;
  const log = { debug() {}, info() {}, warn() {} } as never;
  const a = new RolloutApplier(
    { client, cloud, events, maintenance: () => undefined, node: () => undefined },
    nv,
    new Date(NOW),
    log,
  );
  await a.applyAll(actions);
  return wrote;
}

describe('actions that require an instance deletion wait for it', () => {
  const table: Array<[string, ObservedState, boolean, (w: string[]) => boolean]> = [
    ['a replaced donor deleted: its heir is released', replacedPair, false, (w) => w.includes('patch new')],
    [
      'a replaced donor not deleted: its heir stays paired',
      replacedPair,
      true,
      (w) => !w.includes('patch new'),
    ],
    ['an expired join deleted: its PendingNode goes', expiredJoin, false, (w) => w.includes('delete pn-x')],
    [
      'an expired join not deleted: its PendingNode stays, still counting the instance',
      expiredJoin,
      true,
      (w) => !w.includes('delete pn-x'),
    ],
  ];
  for (const [name, s, fails, ok] of table) {
    it(name, async () => {
      const wrote = await apply(planRollout(s), fails);
      assert.ok(ok(wrote), `wrote: ${wrote.join(', ')}`);
    });
  }

  it('the plan says which deletion each of them requires', () => {
    const req = (s: ObservedState) =>
      planRollout(s).flatMap((a) => (a.requires ? [`${a.type}<-${a.requires}`] : []));
    assert.deepEqual(req(replacedPair), ['clearPairing<-deleteNode:sim://old']);
    assert.deepEqual(req(expiredJoin), ['deletePending<-deleteNode:sim://x']);
  });
});
