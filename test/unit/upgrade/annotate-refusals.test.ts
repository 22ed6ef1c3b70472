import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../../src/runtime/client.ts';
import type { ReconcileContext } from '../../../src/runtime/reconcile.ts';
import { NodeAnnotator, type Refusal, untoldRefusals } from '../../../src/upgrade/controllers/annotate.ts';
import { CloudError, type CloudProvider } from '../../../src/upgrade/providers/interface.ts';
import type { NodeObject } from '../../../src/upgrade/rollout/observe.ts';

const CP_REFUSAL =
  'clusterapi: Machine ns/cp-0 belongs to no MachineDeployment (a control-plane Machine: its control-plane provider replaces it, nodewarden never does)';

const node = (name: string): NodeObject => ({
  metadata: { name, uid: `uid-${name}` },
  spec: { providerID: `capi://${name}` },
});

/** A cloud that knows w-0 and refuses cp-0 for good, counting what it is asked. */
function cloud() {
  const asked: string[] = [];
  const c = {
    scalingGroupId: async (id: string) => {
      asked.push(id);
      if (id === 'capi://cp-0') throw new CloudError(CP_REFUSAL, { retryable: false });
      if (id === 'capi://w-1') throw new CloudError('throttled', { retryable: true });
      return 'ns/workers';
    },
    nodeImage: async () => 'img-1',
  } as unknown as CloudProvider;
  return { c, asked };
}

const client = { patch: async () => ({}) } as unknown as KubeClient;
const log = { warn() {} } as unknown as ReconcileContext['log'];

describe('a node the cloud refuses: each NodeVersion says why, once', () => {
  it('two NodeVersions listing the control-plane node invalid each get the reason, the cloud asked once', async () => {
    const { c, asked } = cloud();
    const annotator = new NodeAnnotator(client, c);
    const told = new Map<string, Set<string>>();
    const round = async (nv: string) => {
      const r = await annotator.annotate([node('cp-0'), node('w-0')], log);
      const u = untoldRefusals(r.refusals, told.get(nv) ?? new Set());
      told.set(nv, u.told);
      return { refused: [...r.refused], said: [...r.problems, ...u.problems].map((p) => p.message) };
    };
    const first = await round('first');
    assert.deepEqual(first.refused, ['cp-0']);
    assert.equal(first.said.length, 1);
    assert.match(first.said[0] ?? '', /cannot annotate node cp-0: .*control-plane provider replaces it/);
    const second = await round('second');
    assert.deepEqual(second.refused, ['cp-0'], 'invalid for the second NodeVersion too');
    assert.deepEqual(second.said, first.said, 'the second NodeVersion says it as well');
    assert.deepEqual((await round('first')).said, [], 'not again, round after round');
    assert.equal(asked.filter((id) => id === 'capi://cp-0').length, 1, 'the cloud asked once');
  });

  it('a transient error is a problem of the round that met it, not a refusal', async () => {
    const { c } = cloud();
    const r = await new NodeAnnotator(client, c).annotate([node('w-1')], log);
    assert.deepEqual([...r.refused], []);
    assert.deepEqual(r.refusals, []);
    assert.deepEqual(
      r.problems.map((p) => p.message),
      ['cloud: cannot annotate node w-1: throttled'],
    );
  });
});

describe('untoldRefusals', () => {
  const cp = (at: number): Refusal => ({ node: 'cp-0', key: `uid-cp-0@${at}`, message: `refused at ${at}` });
  const table: Array<[string, Refusal[], string[], string[], string[]]> = [
    ['nothing refused', [], [], [], []],
    ['a refusal not yet said', [cp(1)], [], ['refused at 1'], ['uid-cp-0@1']],
    ['a refusal said already', [cp(1)], ['uid-cp-0@1'], [], ['uid-cp-0@1']],
    [
      'the node asked again and refused again: news again',
      [cp(2)],
      ['uid-cp-0@1'],
      ['refused at 2'],
      ['uid-cp-0@2'],
    ],
    ['a refusal no longer held is forgotten', [], ['uid-cp-0@1'], [], []],
  ];
  for (const [name, refusals, told, said, after] of table)
    it(name, () => {
      const u = untoldRefusals(refusals, new Set(told));
      assert.deepEqual(
        u.problems.map((p) => [p.cause, p.message]),
        said.map((m) => ['cloudError', m]),
      );
      assert.deepEqual([...u.told], after);
    });
});
