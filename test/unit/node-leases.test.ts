import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  clearNodeLeases,
  leasesLeftBehind,
  type NodeLease,
  nodesWithoutHeartbeat,
} from '../../src/cluster/node-leases.ts';
import type { KubeClient } from '../../src/runtime/client.ts';

const T = Date.parse('2026-01-01T12:00:00.500Z');
const at = (ms: number) => new Date(T + ms).toISOString();
function lease(name: string, o: { created?: number; renewed?: number; holder?: string } = {}): NodeLease {
  return {
    metadata: { name, creationTimestamp: at(o.created ?? 0).replace(/\.\d{3}Z$/, 'Z') },
    spec: { holderIdentity: o.holder ?? 'kwok-new', renewTime: at(o.renewed ?? 0) },
  };
}

describe('leasesLeftBehind: the node leases an earlier kwok created', () => {
  const cases: [string, NodeLease[], string[]][] = [
    ['none when every lease is created after the start', [lease('a', { created: 2000 })], []],
    [
      'a lease from the run before',
      [lease('a', { created: -3_600_000 }), lease('b', { created: 1000 })],
      ['a'],
    ],
    // creationTimestamp has whole seconds: a lease of the start's own second is the new kwok's.
    ['not one created in the same second as the start', [lease('a', { created: -400 })], []],
    ['one created the second before', [lease('a', { created: -1500 })], ['a']],
  ];
  for (const [what, leases, want] of cases)
    it(what, () =>
      assert.deepEqual(
        leasesLeftBehind(leases, T).map((l) => l.metadata?.name),
        want,
      ),
    );
});

describe('nodesWithoutHeartbeat: nodes the running kwok does not keep yet', () => {
  const nodes = ['a', 'b', 'c'];
  const cases: [string, NodeLease[], string[]][] = [
    ['none when one kwok renewed every lease since', nodes.map((n) => lease(n, { renewed: 100 })), []],
    ['a node without a lease', [lease('a', { renewed: 100 }), lease('b', { renewed: 100 })], ['c']],
    [
      'a lease last renewed before the start (the old kwok held it)',
      [
        lease('a', { renewed: 100 }),
        lease('b', { renewed: 100 }),
        lease('c', { renewed: -5000, holder: 'old' }),
      ],
      ['c'],
    ],
    [
      'a fresh lease of another holder than the rest',
      [
        lease('a', { renewed: 100 }),
        lease('b', { renewed: 100 }),
        lease('c', { renewed: 100, holder: 'other' }),
      ],
      ['c'],
    ],
    ['every node when no lease exists', [], ['a', 'b', 'c']],
  ];
  for (const [what, leases, want] of cases)
    it(what, () => assert.deepEqual(nodesWithoutHeartbeat(nodes, leases, T), want));
});

/**
 * A stand-in API server with nodes a, b and c, whose leases exist until deleted;
 * `landing` are leases a dead kwok's writes still in flight create after each delete round.
 */
function leaseStore(landing: NodeLease[][]) {
  const leases = new Map(['a', 'b', 'c'].map((n) => [n, lease(n)]));
  const deleted: string[] = [];
  const client = {
    listAll: async (type: { kind: string }) =>
      type.kind === 'Node'
        ? { items: ['a', 'b', 'c'].map((name) => ({ metadata: { name } })) }
        : { items: [...leases.values(), lease('not-a-node')] },
    delete: async (_type: unknown, name: string) => {
      leases.delete(name);
      deleted.push(name);
      if (leases.size === 0) for (const l of landing.shift() ?? []) leases.set(l.metadata!.name!, l);
    },
  };
  return { client: client as unknown as KubeClient, deleted, leases };
}

describe('clearNodeLeases: no node lease left while kwok is stopped', () => {
  it('deletes every node lease in one round when none comes back', async () => {
    const store = leaseStore([]);
    assert.equal(await clearNodeLeases(store.client, 1), 1);
    assert.deepEqual(store.deleted.toSorted(), ['a', 'b', 'c']);
    assert.equal(store.leases.size, 0);
  });

  it("deletes again a lease the dead kwok's late write created after the first delete", async () => {
    const store = leaseStore([[lease('b', { holder: 'kwok-dead' })]]);
    assert.equal(await clearNodeLeases(store.client, 1), 2);
    assert.deepEqual(store.deleted.toSorted(), ['a', 'b', 'b', 'c']);
    assert.equal(store.leases.size, 0);
  });

  it('says which leases keep coming back, and whose they are', async () => {
    const again = () => [lease('c', { holder: 'kwok-alive' })];
    const store = leaseStore([again(), again(), again()]);
    await assert.rejects(clearNodeLeases(store.client, 1, 3), /came back 3 times.*c \(held by kwok-alive\)/);
  });
});
