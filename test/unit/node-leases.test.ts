import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { leasesLeftBehind, type NodeLease, nodesWithoutHeartbeat } from '../../src/cluster/node-leases.ts';

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
