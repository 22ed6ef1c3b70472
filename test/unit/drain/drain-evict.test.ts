import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type EvictClient,
  type EvictionOutcome,
  evictionsTotal,
  evictPod,
  evictPods,
  type Pod,
} from '../../../src/drain/index.ts';
import { ApiError } from '../../../src/runtime/errors.ts';

const pod = (name: string, ns = 'ns'): Pod => ({ metadata: { name, namespace: ns, uid: `uid-${name}` } });

interface Call {
  name: string;
  namespace: string;
  opts: { gracePeriodSeconds?: number } | undefined;
}

/** A client whose evict answers from `answer` (throw to refuse), recording each call. */
function fakeClient(answer: (name: string) => Error | undefined = () => undefined) {
  const calls: Call[] = [];
  const client: EvictClient & { calls: Call[] } = {
    calls,
    async evict(name, namespace, opts) {
      calls.push({ name, namespace, opts });
      await new Promise((r) => setImmediate(r));
      const err = answer(name);
      if (err) throw err;
    },
  };
  return client;
}

// Status bodies as the API server sends them, after the client folded causes into the message.
const pdbRefusal = () =>
  new ApiError(
    429,
    "Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget web-pdb needs 3 healthy pods and has 3 currently)",
    {
      reason: 'TooManyRequests',
      causes: [
        {
          reason: 'DisruptionBudget',
          message: 'The disruption budget web-pdb needs 3 healthy pods and has 3 currently',
        },
      ],
    },
  );

describe('evictPod', () => {
  const cases: Array<[string, Error | undefined, EvictionOutcome]> = [
    ['an accepted eviction is evicted', undefined, { result: 'evicted' }],
    [
      'a 404 means the pod is already gone',
      new ApiError(404, 'pods "a" not found', { reason: 'NotFound' }),
      { result: 'gone' },
    ],
    [
      'a 429 is a PDB refusal naming the budget from the cause',
      pdbRefusal(),
      { result: 'blocked', pdb: 'web-pdb', message: pdbRefusal().message },
    ],
    [
      'a 429 names the budget from the message when there are no causes',
      new ApiError(
        429,
        "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget db.v2 is still being processed by the server.",
      ),
      {
        result: 'blocked',
        pdb: 'db.v2',
        message:
          "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget db.v2 is still being processed by the server.",
      },
    ],
    [
      'a 429 without a budget name is still blocked, pdb left out',
      new ApiError(429, 'Too many requests, please try again later.'),
      { result: 'blocked', message: 'Too many requests, please try again later.' },
    ],
    [
      'a 403 in a terminating namespace is reported so the caller waits',
      new ApiError(
        403,
        'pods "a" is forbidden: unable to create new content in namespace ns because it is being terminated',
        {
          reason: 'Forbidden',
          causes: [
            {
              reason: 'NamespaceTerminating',
              message: 'namespace ns is being terminated',
              field: 'metadata.namespace',
            },
          ],
        },
      ),
      {
        result: 'terminating-namespace',
        message:
          'pods "a" is forbidden: unable to create new content in namespace ns because it is being terminated',
      },
    ],
    [
      'any other 403 (RBAC) is an error',
      new ApiError(403, 'pods "a" is forbidden: User "x" cannot create resource "pods/eviction"'),
      { result: 'error', message: 'pods "a" is forbidden: User "x" cannot create resource "pods/eviction"' },
    ],
    [
      'a 500 for a pod under several PDBs is an error',
      new ApiError(
        500,
        'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      ),
      {
        result: 'error',
        message:
          'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
      },
    ],
    [
      'a broken connection is an error',
      new Error('socket hang up'),
      { result: 'error', message: 'socket hang up' },
    ],
  ];

  for (const [name, err, want] of cases) {
    it(name, async () => {
      const before =
        (await evictionsTotal.get()).values.find((v) => v.labels.result === want.result)?.value ?? 0;
      assert.deepEqual(
        await evictPod(
          fakeClient(() => err),
          pod('a'),
        ),
        want,
      );
      const after =
        (await evictionsTotal.get()).values.find((v) => v.labels.result === want.result)?.value ?? 0;
      assert.equal(after - before, 1, 'nodewarden_evictions_total{result} counts it');
    });
  }

  it("sends the pod's name, namespace and a non-negative grace period", async () => {
    const c = fakeClient();
    await evictPod(c, pod('a', 'team'), { gracePeriodSeconds: 0 });
    await evictPod(c, pod('b', 'team'), { gracePeriodSeconds: 30 });
    assert.deepEqual(c.calls, [
      { name: 'a', namespace: 'team', opts: { gracePeriodSeconds: 0 } },
      { name: 'b', namespace: 'team', opts: { gracePeriodSeconds: 30 } },
    ]);
  });

  it("leaves the grace period out when negative, so the pod's own applies (kubectl -1)", async () => {
    const c = fakeClient();
    await evictPod(c, pod('a'), { gracePeriodSeconds: -1 });
    await evictPod(c, pod('b'));
    assert.deepEqual(
      c.calls.map((x) => x.opts),
      [{}, {}],
    );
  });
});

describe('evictPods', () => {
  it('returns every outcome keyed by pod, in the order given', async () => {
    const pods = ['a', 'b', 'c'].map((n) => pod(n));
    const c = fakeClient((n) => (n === 'b' ? pdbRefusal() : undefined));
    const got = await evictPods(c, pods);
    assert.deepEqual([...got.keys()], pods);
    assert.deepEqual(
      [...got.values()].map((o) => o.result),
      ['evicted', 'blocked', 'evicted'],
    );
  });

  it('keeps at most `concurrency` evictions in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const client: EvictClient = {
      async evict() {
        peak = Math.max(peak, ++inFlight);
        await new Promise((r) => setTimeout(r, 2));
        inFlight--;
      },
    };
    const pods = Array.from({ length: 50 }, (_, i) => pod(`p${i}`));
    const got = await evictPods(client, pods, {}, 8);
    assert.equal(got.size, 50);
    assert.equal(peak, 8);
  });

  it('does nothing for no pods', async () => {
    const c = fakeClient();
    assert.equal((await evictPods(c, [])).size, 0);
    assert.equal(c.calls.length, 0);
  });
});
