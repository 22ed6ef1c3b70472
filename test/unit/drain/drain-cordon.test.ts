import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CordonClient, cordonNode } from '../../../src/drain/index.ts';
import { Nodes } from '../../../src/runtime/resources.ts';

describe('cordonNode', () => {
  it('marks the node unschedulable with a merge patch that names nothing else', async () => {
    const calls: unknown[][] = [];
    const client: CordonClient = {
      async patch(...args: unknown[]) {
        calls.push(args);
        return {} as never;
      },
    } as CordonClient;
    await cordonNode(client, 'node-1');
    assert.deepEqual(calls, [
      [Nodes, 'node-1', undefined, { spec: { unschedulable: true } }, { type: 'merge' }],
    ]);
  });

  it('passes the API server refusal on (a node that is gone is the caller to judge)', async () => {
    const client = {
      async patch() {
        throw new Error('nodes "node-1" not found');
      },
    } as unknown as CordonClient;
    await assert.rejects(cordonNode(client, 'node-1'), /not found/);
  });
});
