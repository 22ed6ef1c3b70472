// Found by the fault soak (seed 424242, cloud throttling half the calls): a donor whose
// instance deletion failed had its heir's pairing cleared anyway, so the donor stood
// alone, was paired again and replaced a second time (one instance too many per failure).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../../src/runtime/client.ts';
import type { K8sObject } from '../../../src/runtime/resources.ts';
import { CloudError, type CloudProvider } from '../../../src/upgrade/providers/interface.ts';
import type { Action } from '../../../src/upgrade/rollout/actions.ts';
import type { ObservedState } from '../../../src/upgrade/rollout/classify.ts';
import { planRollout } from '../../../src/upgrade/rollout/planner.ts';
import { applier, NOW, node, observed } from './fixtures.ts';

const replacedPair = observed([
  node('old', { annotations: { heir: 'new' }, drain: 'Succeeded' }),
  node('new', { image: 'img-2', annotations: { donor: 'old' } }),
]);
const expiredJoin = observed(
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
  const a = applier(client, cloud);
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
