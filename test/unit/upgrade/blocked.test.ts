import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeMaintenance } from '../../../src/api/maintenance.ts';
import type { NodeVersion, ScalingGroup } from '../../../src/api/upgrade.ts';
import { describeRollout, stateOf } from '../../../src/upgrade/format.ts';
import { describeBlocks, drainBlocks } from '../../../src/upgrade/rollout/blocked.ts';
import { classifyNodes, type ObservedNode } from '../../../src/upgrade/rollout/classify.ts';
import { observe } from '../../../src/upgrade/rollout/observe.ts';
import { nextStatus } from '../../../src/upgrade/rollout/status.ts';

const NOW = 1_000_000;
const nv = {
  apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
  kind: 'NodeVersion',
  metadata: { name: 'blocked', generation: 1 },
  spec: { image: 'img-2' },
} as NodeVersion;

type Blocked = NonNullable<NonNullable<NodeMaintenance['status']>['blockedPods']>;
const maintenance = (node: string, phase: string, blockedPods: Blocked): NodeMaintenance =>
  ({
    metadata: { name: `upgrade-${node}` },
    spec: { nodeName: node },
    status: { phase, blockedPods },
  }) as NodeMaintenance;
const refused = (name: string, pdb?: string) => ({
  namespace: 'shop',
  name,
  ...(pdb ? { pdb } : {}),
  message: "Cannot evict pod as it would violate the pod's disruption budget.",
});

/** One round's status for a fleet of one outdated node, with these drains blocked. */
function statusWith(blocked: ReturnType<typeof drainBlocks>, problems = 0) {
  const s = observe({
    nodeVersion: nv,
    groups: [
      {
        metadata: { name: 'w' },
        spec: { groupId: 'w', role: 'Worker', nodeVersion: 'blocked', min: 1 },
        status: { imageReference: 'img-2' },
      } as ScalingGroup,
    ],
    nodes: [],
    pending: [],
    maintenances: [],
    mayCreate: true,
    now: NOW,
  });
  const node: ObservedNode = {
    name: 'w-0',
    providerID: 'sim://w-0',
    groupId: 'w',
    role: 'Worker',
    image: 'img-1',
    kubernetesVersion: 'v1.37.1',
    ready: true,
  };
  const state = { ...s, nodes: [node] };
  const problem = { cause: 'drainFailed' as const, message: 'drain of node w-0 failed' };
  return nextStatus(
    nv,
    classifyNodes(state),
    state,
    { problems: problems ? [problem] : [], replaced: 0, blocked },
    new Date(NOW),
  );
}
const condition = (st: NodeVersion['status'], type: string) => st?.conditions?.find((c) => c.type === type);

describe('a drain blocked by a PodDisruptionBudget', () => {
  it('is read from our running maintenances, not from finished or failed ones', () => {
    const blocks = drainBlocks([
      maintenance('w-2', 'Running', [refused('db-0', 'db'), refused('cache-1')]),
      maintenance('w-1', 'Running', []),
      maintenance('w-3', 'Failed', [refused('db-1', 'db')]),
      maintenance('w-4', 'Succeeded', [refused('db-2', 'db')]),
    ]);
    assert.deepEqual(blocks, [
      {
        node: 'w-2',
        pods: [
          { namespace: 'shop', name: 'db-0', pdb: 'db' },
          { namespace: 'shop', name: 'cache-1' },
        ],
      },
    ]);
  });

  it('names the node, the pods and the PDBs in one sentence per node, counting pods past five', () => {
    const many = Array.from({ length: 7 }, (_, i) => refused(`web-${i}`, 'web'));
    assert.equal(
      describeBlocks(drainBlocks([maintenance('w-1', 'Running', [refused('db-0', 'db'), refused('x')])])),
      'drain of node w-1 waits: pod shop/db-0 (PodDisruptionBudget shop/db), pod shop/x (eviction refused)',
    );
    assert.match(
      describeBlocks(drainBlocks([maintenance('w-2', 'Running', many)])),
      /web-4 .*\) and 2 more$/,
    );
  });

  it('sets DrainBlocked True while the rollout waits, leaving Degraded and Progressing as they were', () => {
    const st = statusWith(drainBlocks([maintenance('w-0', 'Running', [refused('db-0', 'db')])]));
    const blocked = condition(st, 'DrainBlocked');
    assert.equal(blocked?.status, 'True');
    assert.equal(blocked?.reason, 'EvictionBlocked');
    assert.equal(blocked?.message, 'drain of node w-0 waits: pod shop/db-0 (PodDisruptionBudget shop/db)');
    assert.equal(condition(st, 'Degraded')?.status, 'False');
    assert.match(condition(st, 'Degraded')?.message ?? '', /see DrainBlocked/);
    assert.equal(condition(st, 'Progressing')?.status, 'True');
    // a drain that failed past drainTimeout is still Degraded DrainFailed, as designed
    assert.equal(condition(statusWith([], 1), 'Degraded')?.reason, 'DrainFailed');
  });

  it('clears DrainBlocked once nothing is blocked', () => {
    const st = statusWith([]);
    assert.equal(condition(st, 'DrainBlocked')?.status, 'False');
    assert.equal(condition(st, 'Degraded')?.message, 'no problems');
  });

  it('is said in the --wait line and the list STATE', () => {
    const status = statusWith(drainBlocks([maintenance('w-0', 'Running', [refused('db-0', 'db')])]));
    const withStatus = { ...nv, status };
    assert.match(
      describeRollout(withStatus),
      /, drain blocked: drain of node w-0 waits: pod shop\/db-0 \(PodDisruptionBudget shop\/db\)/,
    );
    assert.equal(stateOf(withStatus), 'Progressing,DrainBlocked');
  });
});
