import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Action } from '../../../src/upgrade/rollout/actions.ts';
import {
  classifyNodes,
  type GroupView,
  inheritedLabels,
  type ObservedNode,
  type ObservedState,
  type PendingView,
} from '../../../src/upgrade/rollout/classify.ts';
import { planRollout } from '../../../src/upgrade/rollout/planner.ts';

const OLD = 'img-v1';
const NEW = 'img-v2';
const NOW = 1_000_000;
const cpGroup: GroupView = { id: 'cp', role: 'ControlPlane', min: 1, max: 10, image: NEW };
const wGroup: GroupView = { id: 'w', role: 'Worker', min: 1, max: 20, image: NEW };

function node(name: string, o: Partial<ObservedNode> = {}): ObservedNode {
  const groupId = o.groupId ?? (name.startsWith('cp') ? 'cp' : 'w');
  return {
    name,
    providerID: `sim://${name}`,
    groupId,
    role: groupId === 'cp' ? 'ControlPlane' : 'Worker',
    image: OLD,
    kubernetesVersion: 'v1.31.2',
    ready: true,
    ...o,
  };
}
const fresh = (name: string, o: Partial<ObservedNode> = {}) => node(name, { image: NEW, ...o });
/** A donor/heir pair as the controller leaves it after a `pair` action. */
function pair(donor: string, heir: string, d: Partial<ObservedNode> = {}, h: Partial<ObservedNode> = {}) {
  return [node(donor, { annotations: { heir }, ...d }), fresh(heir, { annotations: { donor }, ...h })];
}
const joining = (name: string, o: Partial<PendingView> = {}): PendingView => ({
  name: `pn-${name}`,
  providerID: `sim://${name}`,
  groupId: name.startsWith('cp') ? 'cp' : 'w',
  nodeName: name,
  goal: 'Join',
  deadline: NOW + 60_000,
  ...o,
});
function state(
  o: Partial<ObservedState> & {
    surge?: number;
    unavailable?: number;
    cpFirst?: boolean;
    paused?: boolean;
  } = {},
): ObservedState {
  return {
    nodes: [],
    pending: [],
    groups: [cpGroup, wGroup],
    target: { image: NEW, kubernetesVersion: 'v1.31.2' },
    now: NOW,
    ...o,
    strategy: {
      maxSurge: o.surge ?? 1,
      maxUnavailable: o.unavailable ?? 1,
      controlPlaneFirst: o.cpFirst ?? true,
      paused: o.paused ?? false,
      ...o.strategy,
    },
  };
}
const workers = (n: number, o: Partial<ObservedNode> = {}) =>
  Array.from({ length: n }, (_, i) => node(`w-${i}`, o));
const ofType = <T extends Action['type']>(as: Action[], t: T) =>
  as.filter((a): a is Extract<Action, { type: T }> => a.type === t);
const creates = (as: Action[], group?: string) =>
  ofType(as, 'createNode').filter((a) => group === undefined || a.group === group).length;
const drained = (as: Action[]) => ofType(as, 'drain').map((a) => a.node);

describe('classifyNodes: the anchor node groups', () => {
  const cases: Array<[string, ObservedNode, PendingView[], keyof ReturnType<typeof classifyNodes>]> = [
    ['on the target', fresh('a'), [], 'upToDate'],
    ['old image', node('a'), [], 'outdated'],
    ['old Kubernetes version', fresh('a', { kubernetesVersion: 'v1.30.0' }), [], 'outdated'],
    ['image differs only in case', fresh('a', { image: 'IMG-V2' }), [], 'upToDate'],
    ['version without the v', fresh('a', { kubernetesVersion: '1.31.2' }), [], 'upToDate'],
    ['outdated with an heir', node('a', { annotations: { heir: 'b' } }), [], 'donors'],
    ['on target with a donor', fresh('a', { annotations: { donor: 'b' } }), [], 'heirs'],
    ['on target with a Join pending', fresh('a'), [joining('a')], 'mints'],
    ['a Leave pending is no mint', fresh('a'), [joining('a', { goal: 'Leave' })], 'upToDate'],
    [
      'obsolete wins over everything',
      node('a', { annotations: { obsolete: true, heir: 'b' } }),
      [],
      'obsolete',
    ],
    ['no providerID', fresh('a', { providerID: '' }), [], 'invalid'],
    ['no image annotation yet', fresh('a', { image: undefined }), [], 'awaitingAnnotation'],
    ['no group annotation yet', fresh('a', { groupId: '' }), [], 'awaitingAnnotation'],
  ];
  for (const [name, n, pending, want] of cases) {
    it(`puts a node with ${name} in ${want}`, () => {
      const c = classifyNodes(state({ nodes: [n], pending }));
      assert.deepEqual(c[want], ['a']);
      const total = Object.entries(c)
        .filter(([k]) => k !== 'pending')
        .flatMap(([, v]) => v);
      assert.equal(total.length, 1, 'exactly one group');
    });
  }
});

describe('surge budget', () => {
  const cases: Array<[string, Partial<Parameters<typeof state>[0]>, number]> = [
    ['surge 1 of 5 outdated', { surge: 1, nodes: workers(5) }, 1],
    ['surge 3 of 5 outdated', { surge: 3, nodes: workers(5) }, 3],
    ['surge 10 of 5 outdated: only what is needed', { surge: 10, nodes: workers(5) }, 5],
    [
      'surge 3 with 2 being created',
      { surge: 3, nodes: workers(5), pending: [joining('n1'), joining('n2')] },
      1,
    ],
    ['surge 3 with a mint', { surge: 3, nodes: [...workers(5), fresh('n1')], pending: [joining('n1')] }, 2],
    ['surge 2 with a paired heir', { surge: 2, nodes: [...workers(4), ...pair('w-9', 'n1')] }, 1],
    [
      'surge 2 with an unannotated stranger',
      { surge: 2, nodes: [...workers(4), fresh('x', { image: undefined })] },
      1,
    ],
  ];
  for (const [name, s, want] of cases) {
    it(`replaces at most maxSurge nodes at once (${name})`, () => {
      assert.equal(creates(planRollout(state(s))), want);
    });
  }
  it("respects a group's own maxSurge under the overall one", () => {
    const a: GroupView = { ...wGroup, id: 'a', maxSurge: 1 };
    const b: GroupView = { ...wGroup, id: 'b' };
    const nodes = [
      ...workers(4, { groupId: 'a' }).map((n) => ({ ...n, name: `a${n.name}` })),
      ...workers(4, { groupId: 'b' }),
    ];
    const plan = planRollout(state({ groups: [a, b], surge: 3, nodes }));
    assert.equal(creates(plan, 'a'), 1);
    assert.equal(creates(plan, 'b'), 2);
  });
  it('never grows a group past its max', () => {
    const plan = planRollout(state({ groups: [{ ...wGroup, max: 6 }], surge: 5, nodes: workers(4) }));
    assert.equal(creates(plan), 2);
  });
  it('skips a group whose launch image is not the target yet', () => {
    assert.equal(creates(planRollout(state({ groups: [{ ...wGroup, image: OLD }], nodes: workers(2) }))), 0);
  });
  it('does nothing when every node is up to date', () => {
    assert.deepEqual(
      planRollout(state({ surge: 5, nodes: [fresh('cp-0'), fresh('w-0'), fresh('w-1')] })),
      [],
    );
  });
});

describe('unavailability budget', () => {
  const pairs = (n: number, prefix = 'w') =>
    Array.from({ length: n }, (_, i) => pair(`${prefix}-${i}`, `${prefix}-new-${i}`)).flat();
  it('drains at most maxUnavailable donors at once, counting drains in flight', () => {
    assert.deepEqual(drained(planRollout(state({ unavailable: 2, nodes: pairs(4) }))), ['w-0', 'w-1']);
    const inFlight = [...pair('w-8', 'w-new-8', { drain: 'Running' }), ...pairs(4)];
    assert.deepEqual(drained(planRollout(state({ unavailable: 2, nodes: inFlight }))), ['w-0']);
  });
  it('with maxUnavailable 0 (surge-only) drains only donors whose heir is Ready, as many as the surge', () => {
    const rest = [node('w-x'), node('w-y')];
    const nodes = [...pairs(3), ...pair('w-7', 'w-new-7', {}, { ready: false }), ...rest];
    const plan = planRollout(state({ surge: 5, unavailable: 0, nodes }));
    assert.deepEqual(drained(plan), ['w-0', 'w-1', 'w-2']);
    // Surge 5, four heirs already count: one more node, and nothing out before it is Ready.
    assert.equal(creates(plan), 1);
  });
  it('with maxUnavailable 0 makes progress only by surging', () => {
    const plan = planRollout(state({ surge: 2, unavailable: 0, nodes: workers(4) }));
    assert.deepEqual([creates(plan), drained(plan)], [2, []]);
    const rest = [node('w-x'), node('w-y')];
    const later = planRollout(state({ surge: 2, unavailable: 0, nodes: [...pairs(2), ...rest] }));
    assert.deepEqual([creates(later), drained(later)], [0, ['w-0', 'w-1']]);
  });
  it("respects a group's own maxUnavailable", () => {
    const plan = planRollout(
      state({ unavailable: 5, groups: [cpGroup, { ...wGroup, maxUnavailable: 1 }], nodes: pairs(3) }),
    );
    assert.deepEqual(drained(plan), ['w-0']);
  });
  it('counts a failed drain as still out', () => {
    const nodes = [...pair('w-8', 'w-new-8', { drain: 'Failed' }), ...pairs(1)];
    assert.deepEqual(drained(planRollout(state({ nodes }))), []);
  });
  it('drains a donor only once its heir is Ready', () => {
    assert.deepEqual(drained(planRollout(state({ nodes: pair('w-0', 'n', {}, { ready: false }) }))), []);
  });
  it('never takes two control-plane nodes out at once', () => {
    const groups = [{ ...cpGroup, maxUnavailable: 3 }, wGroup];
    assert.deepEqual(drained(planRollout(state({ unavailable: 3, groups, nodes: pairs(3, 'cp') }))), [
      'cp-0',
    ]);
    const busy = [...pair('cp-9', 'cp-new-9', { drain: 'Running' }), ...pairs(2, 'cp')];
    assert.deepEqual(drained(planRollout(state({ unavailable: 3, groups, nodes: busy }))), []);
  });
  it('creates at most one control-plane node at a time', () => {
    const cps = ['cp-0', 'cp-1', 'cp-2'].map((n) => node(n));
    assert.equal(creates(planRollout(state({ surge: 3, nodes: cps })), 'cp'), 1);
    assert.equal(creates(planRollout(state({ surge: 3, nodes: cps, pending: [joining('cp-new')] }))), 0);
  });
});

describe('control plane first', () => {
  const nodes = [node('cp-0'), fresh('cp-1'), ...workers(3)];
  it('waits for control-plane groups before workers', () => {
    const plan = planRollout(state({ surge: 4, nodes }));
    assert.deepEqual(
      ofType(plan, 'createNode').map((a) => a.group),
      ['cp'],
    );
  });
  it('keeps workers waiting while a control-plane replacement is in flight', () => {
    const plan = planRollout(state({ surge: 4, nodes: [...pair('cp-0', 'cp-new'), ...workers(3)] }));
    assert.equal(creates(plan), 0);
  });
  it('starts workers once every control-plane node is up to date', () => {
    const plan = planRollout(state({ surge: 4, nodes: [fresh('cp-0'), ...workers(3)] }));
    assert.equal(creates(plan, 'w'), 3);
  });
  it('replaces both at once when controlPlaneFirst is off', () => {
    const plan = planRollout(state({ surge: 4, cpFirst: false, nodes }));
    assert.deepEqual([creates(plan, 'cp'), creates(plan, 'w')], [1, 3]);
  });
});

describe('joins that fail', () => {
  const expired = joining('n1', { deadline: NOW - 1 });
  for (const surge of [1, 5]) {
    it(`deletes a node that never joined and creates exactly one replacement (surge ${surge})`, () => {
      const plan = planRollout(state({ surge, nodes: [node('w-0')], pending: [expired] }));
      assert.deepEqual(plan, [
        {
          type: 'deleteNode',
          cause: 'neverJoined',
          node: 'n1',
          providerID: 'sim://n1',
          reason: 'instance never joined (pending node pn-n1 expired)',
        },
        {
          type: 'deletePending',
          cause: 'joinExpired',
          name: 'pn-n1',
          reason: 'node did not join before its deadline',
          requires: 'deleteNode:sim://n1',
        },
        {
          type: 'createNode',
          cause: 'outdated',
          group: 'w',
          outdated: ['w-0'],
          reason: '1 outdated node(s) in w',
        },
      ]);
    });
  }
  it('also deletes a node that registered but was never annotated', () => {
    const plan = planRollout(
      state({ nodes: [node('w-0'), fresh('n1', { image: undefined })], pending: [expired] }),
    );
    assert.deepEqual(
      ofType(plan, 'deleteNode').map((a) => a.node),
      ['n1'],
    );
    assert.equal(creates(plan), 1);
  });
  it('keeps waiting for a join before its deadline', () => {
    const plan = planRollout(state({ surge: 5, nodes: [node('w-0')], pending: [joining('n1')] }));
    assert.deepEqual(plan, []);
  });
  it('forgets the Join of a node that joined and was already paired', () => {
    const plan = planRollout(
      state({ nodes: pair('w-0', 'n1', { drain: 'Running' }), pending: [joining('n1')] }),
    );
    assert.deepEqual(
      ofType(plan, 'deletePending').map((a) => a.name),
      ['pn-n1'],
    );
  });
});

describe('pairing and replacement', () => {
  it('pairs each mint with an outdated node in its group and retires the PendingNode', () => {
    const plan = planRollout(
      state({ nodes: [node('w-1'), node('cp-0'), fresh('n1')], pending: [joining('n1')] }),
    );
    assert.deepEqual(
      ofType(plan, 'pair').map((a) => [a.donor, a.heir]),
      [['w-1', 'n1']],
    );
    assert.deepEqual(
      ofType(plan, 'deletePending').map((a) => a.name),
      ['pn-n1'],
    );
  });
  it('replaces a not-Ready outdated node first', () => {
    const plan = planRollout(
      state({ nodes: [node('w-1'), node('w-2', { ready: false }), fresh('n1')], pending: [joining('n1')] }),
    );
    assert.equal(ofType(plan, 'pair')[0]?.donor, 'w-2');
  });
  it('marks a mint with nothing to replace obsolete, and drains then deletes obsolete nodes', () => {
    const plan = planRollout(state({ nodes: [fresh('w-0'), fresh('n1')], pending: [joining('n1')] }));
    assert.deepEqual(
      ofType(plan, 'markObsolete').map((a) => a.node),
      ['n1'],
    );
    const obs = (drain?: 'Succeeded') =>
      fresh('n1', { annotations: { obsolete: true }, ...(drain ? { drain } : {}) });
    assert.deepEqual(
      planRollout(state({ nodes: [obs()] })).map((a) => a.type),
      ['drain'],
    );
    assert.deepEqual(
      planRollout(state({ nodes: [obs('Succeeded')] })).map((a) => a.type),
      ['deleteNode'],
    );
  });
  it("copies the donor's labels to its heir except reserved ones", () => {
    const labels = {
      team: 'payments',
      'example.com/tier': 'gold',
      'kubernetes.io/hostname': 'w-1',
      'node.kubernetes.io/instance-type': 'm5',
      'k8s.io/x': '1',
      'topology.k8s.io/zone': 'a',
      'notkubernetes.io/keep': 'yes',
    };
    const want = { 'example.com/tier': 'gold', 'notkubernetes.io/keep': 'yes', team: 'payments' };
    assert.deepEqual(inheritedLabels(labels), want);
    const plan = planRollout(
      state({ nodes: [node('w-1', { labels }), fresh('n1')], pending: [joining('n1')] }),
    );
    assert.deepEqual(ofType(plan, 'pair')[0]?.labels, want);
  });
  it('deletes the donor once its drain succeeded and releases the heir', () => {
    const plan = planRollout(state({ nodes: pair('w-0', 'n1', { drain: 'Succeeded' }) }));
    assert.deepEqual(
      plan.map((a) => [a.type, 'node' in a ? a.node : '']),
      [
        ['deleteNode', 'w-0'],
        ['clearPairing', 'n1'],
      ],
    );
  });
  it('never deletes a donor whose heir vanished: cancels its drain and unpairs it', () => {
    const plan = planRollout(
      state({ surge: 0, nodes: [node('w-0', { annotations: { heir: 'gone' }, drain: 'Succeeded' })] }),
    );
    assert.deepEqual(
      plan.map((a) => a.type),
      ['cancelDrain', 'clearPairing'],
    );
  });
});

describe('paused', () => {
  it('paused finishes replacements in flight (pairs its mint, drains for its Ready heirs) but creates nothing', () => {
    const nodes = [
      ...pair('w-0', 'n0', { drain: 'Succeeded' }),
      ...pair('w-1', 'n1', { drain: 'Running' }),
      ...pair('w-2', 'n2'),
      node('w-3'),
      node('w-5'),
      fresh('n4'),
    ];
    const plan = planRollout(
      state({ surge: 9, unavailable: 9, nodes, pending: [joining('n4')], paused: true }),
    );
    assert.deepEqual(
      plan.map((a) => a.type),
      ['deleteNode', 'clearPairing', 'pair', 'deletePending', 'drain'],
    );
    const running = planRollout(state({ surge: 9, unavailable: 9, nodes, pending: [joining('n4')] }));
    assert.ok(creates(running) > 0 && drained(running).length > 0 && ofType(running, 'pair').length > 0);
  });
});

describe('retargeting', () => {
  it('retargets when the image changes mid-rollout', () => {
    // Rollout to NEW in flight: w-0→n0 paired, n1 a mint, n2 being created. Now the target is v3.
    const nodes = [...pair('w-0', 'n0', { drain: 'Running' }), fresh('n1'), node('w-1')];
    const v3 = state({
      surge: 5,
      nodes,
      pending: [joining('n1', { image: NEW }), joining('n2', { image: NEW })],
      groups: [cpGroup, { ...wGroup, image: 'img-v3' }],
      target: { image: 'img-v3', kubernetesVersion: 'v1.31.2' },
    });
    const c = classifyNodes(v3);
    assert.deepEqual([c.outdated, c.donors, c.heirs, c.mints], [['n0', 'n1', 'w-1'], ['w-0'], [], []]);
    const plan = planRollout(v3);
    assert.deepEqual(
      plan
        .filter((a) => a.type !== 'createNode')
        .map((a) => [a.type, 'node' in a ? a.node : 'name' in a ? a.name : '']),
      [
        // The surplus mark before the Join goes: a skipped mark must leave the Join.
        ['markObsolete', 'n1'],
        ['deletePending', 'pn-n1'],
        ['cancelDrain', 'w-0'],
        ['markObsolete', 'n0'],
        ['clearPairing', 'w-0'],
      ],
    );
    // n0 and n1 were made for NEW: removed, not replaced. n2 (for NEW) is no surge toward v3.
    // Left to replace: w-0 and w-1 → 2 new nodes, and the group ends at its old size.
    assert.equal(creates(plan, 'w'), 2);
  });
});

describe('determinism', () => {
  it('returns the same plan whatever the input order', () => {
    const nodes = [
      ...pair('w-0', 'n0', { drain: 'Succeeded' }),
      ...pair('w-1', 'n1'),
      ...workers(6).slice(2),
      fresh('n4'),
    ];
    const pending = [joining('n4'), joining('n5', { deadline: NOW - 1 }), joining('n6')];
    const a = planRollout(state({ surge: 4, unavailable: 2, nodes, pending }));
    const b = planRollout(
      state({ surge: 4, unavailable: 2, nodes: [...nodes].reverse(), pending: [...pending].reverse() }),
    );
    assert.deepEqual(b, a);
    assert.ok(a.length >= 6);
  });
});

describe('failed drains', () => {
  it('reports a failed drain so it is recorded and retried, and keeps the pair', () => {
    const plan = planRollout(state({ nodes: pair('w-0', 'n0', { drain: 'Failed' }) }));
    assert.deepEqual(
      ofType(plan, 'drainFailed').map((a) => a.node),
      ['w-0'],
    );
    assert.deepEqual(ofType(plan, 'clearPairing'), []);
    assert.deepEqual(ofType(plan, 'deleteNode'), []);
  });
  it('waits out the backoff before draining again', () => {
    const waiting = pair('w-0', 'n0', { drainRetryAt: NOW + 1000 });
    assert.deepEqual(drained(planRollout(state({ nodes: waiting }))), []);
    const due = pair('w-0', 'n0', { drainRetryAt: NOW - 1 });
    assert.deepEqual(drained(planRollout(state({ nodes: due }))), ['w-0']);
  });
  it('retries a failed drain of an obsolete node too', () => {
    const n = fresh('n9', { annotations: { obsolete: true }, drain: 'Failed' });
    assert.deepEqual(
      ofType(planRollout(state({ nodes: [n] })), 'drainFailed').map((a) => a.node),
      ['n9'],
    );
  });
});

describe('guards beyond the anchor', () => {
  it('creates nothing while the autoscaler may still resize groups', () => {
    const plan = planRollout(state({ surge: 3, nodes: workers(3), mayCreate: false }));
    assert.equal(creates(plan), 0);
  });
  it('adopts a new node whose PendingNode was never written, instead of creating another', () => {
    const plan = planRollout(state({ nodes: [node('w-0'), fresh('n0', { orphanedJoin: true })] }));
    assert.deepEqual(
      ofType(plan, 'pair').map((a) => [a.donor, a.heir]),
      [['w-0', 'n0']],
    );
    assert.equal(creates(plan), 0);
  });
  it('rolls out only the image when no Kubernetes version is targeted', () => {
    const c = classifyNodes(
      state({
        nodes: [fresh('w-0', { kubernetesVersion: 'v1.30.0' })],
        target: { image: NEW, kubernetesVersion: '' },
      }),
    );
    assert.deepEqual(c.upToDate, ['w-0']);
  });
});

// Through Cluster API a retarget at surge 1 had 6 and 7 Machines of 4 alive at once: the
// nodes made for the earlier target (still joining, or joined and surplus) were not counted.
describe('the surge after a retarget counts every node beyond the group, whatever its image', () => {
  const MID = 'img-mid';
  const four = () => workers(4);
  const surplus = (name: string, o: Partial<ObservedNode> = {}) =>
    node(name, { image: MID, annotations: { obsolete: true }, ...o });
  const table: Array<[string, Partial<Parameters<typeof state>[0]>, number]> = [
    ['nothing beyond the group: one new node', { nodes: four() }, 1],
    [
      'a node still joining for the earlier target: none',
      { nodes: four(), pending: [joining('m0', { image: MID })] },
      0,
    ],
    [
      'at surge 2, a node still joining for the earlier target: one',
      { surge: 2, nodes: four(), pending: [joining('m0', { image: MID })] },
      1,
    ],
    [
      'a Ready surplus node of the earlier target still standing: none',
      { nodes: [...four(), surplus('m0')] },
      0,
    ],
    [
      'a node of the earlier target joining this round (surplus from now): none',
      { nodes: [...four(), node('m0', { image: MID })], pending: [joining('m0', { image: MID })] },
      0,
    ],
    [
      'an heir made for the earlier target (surplus from now), its donor still there: none',
      {
        nodes: [...pair('w-0', 'm0', {}, { image: MID }), ...workers(4).slice(1)],
      },
      0,
    ],
    [
      'a surplus node not Ready (an heir given up): it serves nothing, one new node',
      {
        nodes: [...four(), surplus('m0', { ready: false, createdAt: NOW - 60_000 })],
        nodeReadyTimeoutMs: 30_000,
      },
      1,
    ],
    [
      'a surplus node of the earlier target just made, not Ready yet: none',
      {
        nodes: [...four(), surplus('m0', { ready: false, createdAt: NOW - 5_000 })],
        nodeReadyTimeoutMs: 30_000,
      },
      0,
    ],
    [
      'a surplus node not Ready, no nodeReadyTimeout (never given up): none',
      { nodes: [...four(), surplus('m0', { ready: false, createdAt: NOW - 3_600_000 })] },
      0,
    ],
    [
      'a launch asked for that the cloud lists no instance of yet (a restart inside createNode): none',
      { nodes: four(), requestedLaunches: new Map([['w', [NOW - 5_000]]]), nodeReadyTimeoutMs: 30_000 },
      0,
    ],
    [
      'at surge 2, a launch asked for and not listed yet: one',
      { surge: 2, nodes: four(), requestedLaunches: new Map([['w', [NOW]]]) },
      1,
    ],
    [
      'a launch asked for longer ago than nodeReadyTimeout and still not listed: given up, one new node',
      { nodes: four(), requestedLaunches: new Map([['w', [NOW - 60_000]]]), nodeReadyTimeoutMs: 30_000 },
      1,
    ],
  ];
  for (const [name, o, want] of table)
    it(name, () => {
      assert.equal(creates(planRollout(state({ unavailable: 0, ...o }))), want);
    });
});

describe('heirs that never become Ready, and surplus control-plane nodes', () => {
  const paired = (at: number, ready: boolean) => pair('w-0', 'n0', { pairedAt: at }, { ready });
  it('gives up an heir not Ready within the timeout of pairing: obsolete, donor free for a new heir', () => {
    const plan = planRollout(state({ nodes: paired(NOW - 60_000, false), nodeReadyTimeoutMs: 30_000 }));
    assert.deepEqual(
      ofType(plan, 'markObsolete').map((a) => a.node),
      ['n0'],
    );
    assert.deepEqual(
      ofType(plan, 'clearPairing').map((a) => a.node),
      ['w-0'],
    );
    assert.equal(creates(plan), 1, 'a new heir for w-0');
  });
  it('waits for an heir still within its time, or Ready', () => {
    for (const nodes of [paired(NOW - 10_000, false), paired(NOW - 60_000, true)]) {
      const plan = planRollout(state({ nodes, nodeReadyTimeoutMs: 30_000 }));
      assert.deepEqual(ofType(plan, 'markObsolete'), []);
    }
    assert.deepEqual(ofType(planRollout(state({ nodes: paired(NOW - 60_000, false) })), 'markObsolete'), []);
  });
  it('drains a surplus control-plane node only while no other control-plane node is out', () => {
    const surplus = fresh('cp-9', { annotations: { obsolete: true } });
    const busy = [...pair('cp-0', 'cp-new-0', { drain: 'Running' }), surplus];
    assert.deepEqual(drained(planRollout(state({ nodes: busy }))), []);
    assert.deepEqual(drained(planRollout(state({ nodes: [surplus] }))), ['cp-9']);
    const draining = [{ ...surplus, drain: 'Running' as const }, ...pair('cp-1', 'cp-new-1')];
    assert.deepEqual(drained(planRollout(state({ unavailable: 3, nodes: draining }))), []);
  });
});
