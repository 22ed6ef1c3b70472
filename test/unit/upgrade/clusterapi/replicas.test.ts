// The clusterapi provider's replica writes: the JSON patch that moves a count only
// from the value read, records the Machine it was lowered for, and lifts our own
// pause of the MachineDeployment (and no one else's) in the same write.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MachineDeployment, MachineSet } from '../../../../src/api/clusterapi.ts';
import type { KubeClient } from '../../../../src/runtime/client.ts';
import type { ClusterApiObjects } from '../../../../src/upgrade/providers/clusterapi/objects.ts';
import { pauseValue, SCALED_DOWN_ANNOTATION } from '../../../../src/upgrade/providers/clusterapi/planner.ts';
import {
  GroupScaler,
  PAUSED_ANNOTATION,
  replicaPatch,
} from '../../../../src/upgrade/providers/clusterapi/replicas.ts';

const obj = (replicas: number | undefined, annotations?: Record<string, string>) => ({
  metadata: { name: 'md', namespace: 'ns', ...(annotations ? { annotations } : {}) },
  spec: replicas === undefined ? {} : { replicas },
});
const test = (v: number) => ({ op: 'test', path: '/spec/replicas', value: v });
const replace = (v: number) => ({ op: 'replace', path: '/spec/replicas', value: v });

describe('replicaPatch', () => {
  const cases: { name: string; obj: ReturnType<typeof obj>; to: number; record?: string; want: unknown[] }[] =
    [
      { name: 'a count moves only from the one read', obj: obj(3), to: 4, want: [test(3), replace(4)] },
      { name: 'no replicas read as 0', obj: obj(undefined), to: 1, want: [test(0), replace(1)] },
      {
        name: 'the record made the annotations when there were none',
        obj: obj(4),
        to: 3,
        record: 'm-1',
        want: [
          test(4),
          replace(3),
          { op: 'add', path: '/metadata/annotations', value: { [SCALED_DOWN_ANNOTATION]: 'm-1' } },
        ],
      },
      {
        name: 'the record added beside other annotations (its slash escaped)',
        obj: obj(4, { other: 'x' }),
        to: 3,
        record: 'm-1,m-2',
        want: [
          test(4),
          replace(3),
          {
            op: 'add',
            path: '/metadata/annotations/upgrade.nodewarden.dev~1scaled-down-for',
            value: 'm-1,m-2',
          },
        ],
      },
      {
        name: 'our pause lifted in the same write',
        obj: obj(4, { [PAUSED_ANNOTATION]: pauseValue({ machine: 'm-1', from: 4, to: 3 }) }),
        to: 3,
        record: 'm-1',
        want: [
          test(4),
          replace(3),
          { op: 'remove', path: '/metadata/annotations/cluster.x-k8s.io~1paused' },
          { op: 'add', path: '/metadata/annotations/upgrade.nodewarden.dev~1scaled-down-for', value: 'm-1' },
        ],
      },
      {
        name: "someone else's pause left alone",
        obj: obj(4, { [PAUSED_ANNOTATION]: 'true' }),
        to: 5,
        want: [test(4), replace(5)],
      },
    ];
  for (const c of cases)
    it(c.name, () => {
      assert.deepEqual(replicaPatch(c.obj, c.to, c.record), c.want);
    });
});

// The retarget case against the real manager: the hold was thrown as a retryable CloudError, and
// the ScalingGroup controller retried hot with a Warning each time. A hold is a deferral.
describe('a template swap held while Cluster API settles the MachineSets', () => {
  const md = { metadata: { name: 'md', namespace: 'ns' }, spec: { replicas: 3 } } as MachineDeployment;
  const set = (replicas: number, counted: number) =>
    ({ metadata: { name: 'md-a' }, spec: { replicas }, status: { replicas: counted } }) as MachineSet;
  const scaler = (sets: MachineSet[]) =>
    new GroupScaler(
      {} as KubeClient,
      {
        deployment: async () => md,
        machineSetsOf: async () => sets,
      } as unknown as ClusterApiObjects,
    );

  it('is answered as a deferral, the swap not made', async () => {
    let swapped = false;
    const d = await scaler([set(3, 2)]).switchTemplate('ns/md', async () => {
      swapped = true;
    });
    assert.equal(swapped, false);
    assert.match(d?.reason ?? '', /keeps its template for now: MachineSet md-a counts 2 of its 3 Machines/);
    assert.ok((d?.retryAfterMs ?? 0) > 0);
  });

  it('swaps once the sets are settled, and answers no deferral', async () => {
    let swapped = false;
    const d = await scaler([set(3, 3)]).switchTemplate('ns/md', async () => {
      swapped = true;
    });
    assert.equal(swapped, true);
    assert.equal(d, undefined);
  });
});
