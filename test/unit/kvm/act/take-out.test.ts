// The rollout takes a master out by evicting its VM pod through the masters'
// disruption budget, marked first so a look from outside tells it from a drain's;
// the budget, not a look here, keeps a second master in (plan/serving.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KVM_ANNOTATIONS, KVM_LABELS } from '../../../../src/api/kvm.ts';
import { VM_CLUSTER_LABEL } from '../../../../src/api/vm-image.ts';
import { ObjectApplier } from '../../../../src/kvm/act/apply.ts';
import { ClusterActions } from '../../../../src/kvm/act/cluster-actions.ts';
import { ApiError } from '../../../../src/runtime/errors.ts';

type Answer = 'evicted' | 429 | 404;

interface FakePod {
  name: string;
  deleting?: boolean;
}

/** The pods' labels from their names: master-m2-x is master m2's. */
function labelsOf(name: string): Record<string, string> {
  const [role = '', id = ''] = name.split('-');
  return { [VM_CLUSTER_LABEL]: 'c1', [KVM_LABELS.role]: role, [KVM_LABELS.nodeId]: id };
}

function actions(pods: FakePod[], answer: Answer) {
  const calls: string[] = [];
  const client = {
    // As the API server answers: only the pods every k=v of the selector matches.
    list: async (_t: unknown, o: { namespace: string; labelSelector: string }) => {
      calls.push(`list ${o.namespace} ${o.labelSelector}`);
      const want = o.labelSelector.split(',').map((kv) => kv.split('=') as [string, string]);
      const items = pods
        .map((p) => ({
          metadata: {
            name: p.name,
            namespace: 'c1',
            labels: labelsOf(p.name),
            ...(p.deleting ? { deletionTimestamp: '2026-11-26T00:00:00Z' } : {}),
          },
        }))
        .filter((p) => want.every(([k, v]) => p.metadata.labels[k] === v));
      return { items };
    },
    patch: async (_t: unknown, name: string, _ns: string, body: { metadata: { annotations: object } }) => {
      const v = Object.values(body.metadata.annotations)[0];
      calls.push(`${v === null ? 'unmark' : 'mark'} ${name}`);
      assert.deepEqual(Object.keys(body.metadata.annotations), [KVM_ANNOTATIONS.rolloutEviction]);
    },
    evict: async (name: string) => {
      calls.push(`evict ${name}`);
      if (answer === 429)
        throw new ApiError(429, "Cannot evict pod as it would violate the pod's disruption budget.");
      if (answer === 404) throw new ApiError(404, 'not found');
    },
  };
  const log = { info: () => {}, warn: () => {} };
  const a = new ClusterActions({ client, log } as never, {} as never);
  return { a, calls };
}

const kc = {
  metadata: { name: 'c1', namespace: 'default' },
  spec: { masters: [{ id: 'm1' }, { id: 'm2' }, { id: 'm3' }] },
} as never;
/** The two masters not taken, each with a serving VM pod. */
const serving = [{ name: 'master-m1-a' }, { name: 'master-m3-a' }];
const node = (role: 'master' | 'worker', id: string) =>
  ({ node: { role, id }, name: `${role}-${id}` }) as never;
const listed = `list c1 ${VM_CLUSTER_LABEL}=c1,${KVM_LABELS.nodeId}=m2`;

describe('ClusterActions.takeOut: a master goes through the masters disruption budget', () => {
  it('a worker may always go, with no request', async () => {
    const { a, calls } = actions([{ name: 'worker-w1-x' }], 'evicted');
    assert.equal(await a.takeOut(kc, node('worker', 'w1')), true);
    assert.deepEqual(calls, []);
  });
  it('a master: its serving VM pod marked, then evicted; it may be updated', async () => {
    const { a, calls } = actions(
      [...serving, { name: 'master-m2-x' }, { name: 'master-m2-old', deleting: true }],
      'evicted',
    );
    assert.equal(await a.takeOut(kc, node('master', 'm2')), true);
    assert.deepEqual(calls, [listed, 'mark master-m2-x', 'evict master-m2-x']);
  });
  it('the budget allows none (429): the mark is taken back and the update waits', async () => {
    const { a, calls } = actions([...serving, { name: 'master-m2-x' }], 429);
    assert.equal(await a.takeOut(kc, node('master', 'm2')), false);
    assert.deepEqual(calls.slice(1), ['mark master-m2-x', 'evict master-m2-x', 'unmark master-m2-x']);
  });
  it('a pod gone meanwhile is out already: the update goes on', async () => {
    const { a } = actions([...serving, { name: 'master-m2-x' }], 404);
    assert.equal(await a.takeOut(kc, node('master', 'm2')), true);
  });
});

describe('ClusterActions.updateNode: the rollout read the Deployment live as outdated', () => {
  it('writes the ConfigMap and the Deployment even when the same content was applied before', async () => {
    const writes: string[] = [];
    const client = {
      patch: async (_t: unknown, name: string) => {
        writes.push(name);
      },
    };
    const applier = new ObjectApplier(client as never);
    const events = { normal: () => {} };
    const a = new ClusterActions({ client, events, log: { info: () => {} } } as never, applier);
    const n = {
      name: 'master-m1',
      node: { role: 'master', id: 'm1' },
      configMap: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'master-m1-config', namespace: 'c1' },
      },
      deployment: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'master-m1', namespace: 'c1' },
      },
    } as never;
    const cluster = { metadata: { name: 'c1' }, spec: { release: { version: '20.2.0' } } } as never;
    await a.updateNode(cluster, n);
    await a.updateNode(cluster, n);
    assert.deepEqual(writes, ['master-m1-config', 'master-m1', 'master-m1-config', 'master-m1']);
  });
});
