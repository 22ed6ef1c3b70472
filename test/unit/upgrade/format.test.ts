import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type NodeVersion,
  NodeVersions,
  type PendingNode,
  PendingNodes,
  type ScalingGroup,
  ScalingGroups,
} from '../../../src/api/upgrade.ts';
import {
  describeFinished,
  describeRollout,
  detail,
  groupTable,
  nodeVersionTable,
  pendingNodeTable,
  rolloutDone,
  rolloutInProgress,
  rolloutLineMemo,
  scalingGroupTable,
  stateOf,
  totalsOf,
} from '../../../src/upgrade/format.ts';

type Status = NonNullable<NodeVersion['status']>;
type Condition = NonNullable<Status['conditions']>[number];

const NOW = Date.parse('2030-01-01T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

const cond = (type: string, status: Condition['status'], reason: string, message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: ago(60),
});

function nodeVersion(
  status?: Status,
  opts: { generation?: number; spec?: Partial<NodeVersion['spec']> } = {},
): NodeVersion {
  const nv = NodeVersions.make(
    { name: 'default', generation: opts.generation ?? 2, creationTimestamp: ago(3600) },
    { image: 'img-2', ...opts.spec },
  );
  return status ? { ...nv, status } : nv;
}

const progressing = (extra: Partial<Status> = {}): Status => ({
  observedGeneration: 2,
  counts: { total: 13, upToDate: 5, outdated: 8, donors: 1, heirs: 2, mints: 1, pending: 1 },
  groups: [
    {
      groupId: 'workers-b',
      role: 'Worker',
      total: 6,
      upToDate: 0,
      outdated: 6,
      replacing: 0,
      draining: 0,
      imageReference: 'img-1',
    },
    {
      groupId: 'workers-a',
      role: 'Worker',
      total: 4,
      upToDate: 2,
      outdated: 2,
      replacing: 3,
      draining: 1,
      imageReference: 'img-2',
    },
    {
      groupId: 'cp',
      role: 'ControlPlane',
      total: 3,
      upToDate: 3,
      outdated: 0,
      replacing: 0,
      draining: 0,
      imageReference: 'img-2',
    },
  ],
  replaced: 5,
  conditions: [
    cond('Outdated', 'True', 'NodesOutOfDate', '8 nodes to replace'),
    cond('Progressing', 'True', 'ReplacingNodes', '3 replacements in flight'),
    cond('Degraded', 'False', 'AsExpected'),
  ],
  startTime: ago(320),
  finishTime: ago(86_400), // the previous rollout's
  ...extra,
});

const finished = (): Status => ({
  observedGeneration: 2,
  counts: { total: 13, upToDate: 13, outdated: 0 },
  replaced: 13,
  conditions: [
    cond('Outdated', 'False', 'NodesUpToDate'),
    cond('Progressing', 'False', 'RolloutComplete'),
    cond('Degraded', 'False', 'AsExpected'),
  ],
  startTime: ago(1200),
  finishTime: ago(600),
});

describe('reading the rollout state from status', () => {
  it('is in progress while Progressing is True, whatever the generation', () => {
    assert.equal(rolloutInProgress(nodeVersion(progressing())), true);
    assert.equal(rolloutInProgress(nodeVersion(progressing({ observedGeneration: 1 }))), true);
  });

  it('is in progress when Outdated is True for the current generation only', () => {
    const outdatedOnly = (gen: number) =>
      nodeVersion(
        progressing({
          observedGeneration: gen,
          conditions: [cond('Outdated', 'True', 'NodesOutOfDate'), cond('Progressing', 'False', 'Paused')],
        }),
      );
    assert.equal(rolloutInProgress(outdatedOnly(2)), true);
    assert.equal(rolloutInProgress(outdatedOnly(1)), false);
  });

  it('is not in progress when finished, or before any status', () => {
    assert.equal(rolloutInProgress(nodeVersion(finished())), false);
    assert.equal(rolloutInProgress(nodeVersion()), false);
  });

  it('is done only when Outdated and Progressing are False at the current generation', () => {
    assert.equal(rolloutDone(nodeVersion(finished())), true);
    assert.equal(rolloutDone(nodeVersion({ ...finished(), observedGeneration: 1 })), false);
    assert.equal(rolloutDone(nodeVersion(progressing())), false);
    assert.equal(rolloutDone(nodeVersion()), false);
    // no Outdated condition yet: the operator has not judged the nodes
    assert.equal(rolloutDone(nodeVersion({ ...finished(), conditions: [] })), false);
    // a condition stamped with the previous generation describes the previous spec
    const stale = finished();
    stale.conditions = [{ ...cond('Outdated', 'False', 'NodesUpToDate'), observedGeneration: 1 }];
    assert.equal(rolloutDone(nodeVersion(stale)), false);
  });

  it('takes totals from counts, else sums the groups', () => {
    assert.deepEqual(totalsOf(progressing()), {
      total: 13,
      upToDate: 5,
      outdated: 8,
      replacing: 3,
      draining: 1,
    });
    assert.deepEqual(totalsOf({ ...progressing(), counts: undefined }), {
      total: 13,
      upToDate: 5,
      outdated: 8,
      replacing: 3,
      draining: 1,
    });
    assert.deepEqual(totalsOf(undefined), { total: 0, upToDate: 0, outdated: 0, replacing: 0, draining: 0 });
  });

  it('names the state for the list table', () => {
    assert.equal(stateOf(nodeVersion(progressing())), 'Progressing');
    assert.equal(stateOf(nodeVersion(finished())), 'UpToDate');
    assert.equal(stateOf(nodeVersion()), 'Waiting');
    const paused = nodeVersion(
      progressing({
        conditions: [cond('Outdated', 'True', 'NodesOutOfDate'), cond('Degraded', 'True', 'DrainFailed')],
      }),
      { spec: { image: 'img-2', strategy: { paused: true } } },
    );
    assert.equal(stateOf(paused), 'Outdated,Paused,Degraded');
  });
});

describe('the --wait progress line', () => {
  it('shows the bar, the fraction, replacements and drains in flight', () => {
    assert.equal(
      describeRollout(nodeVersion(progressing())),
      '[#######-------------] 5/13 up to date, 3 replacing, 1 draining, progressing (ReplacingNodes)',
    );
  });

  it('says the operator has not observed the new generation', () => {
    assert.equal(
      describeRollout(nodeVersion(progressing({ observedGeneration: 1 }), { generation: 3 })),
      '[#######-------------] 5/13 up to date, 3 replacing, 1 draining, ' +
        'waiting for the operator to observe generation 3',
    );
    assert.match(
      describeRollout(nodeVersion()),
      /0\/0 up to date, waiting for the operator to observe generation 2$/,
    );
  });

  it('shows pause, degradation and the last error', () => {
    const nv = nodeVersion(
      progressing({
        conditions: [
          cond('Outdated', 'True', 'NodesOutOfDate'),
          cond('Degraded', 'True', 'DrainFailed', 'drain of worker-3 failed twice'),
        ],
        lastError: 'PDB shop/web blocks worker-3',
      }),
      { spec: { image: 'img-2', strategy: { paused: true } } },
    );
    assert.match(
      describeRollout(nv),
      /, paused, degraded: drain of worker-3 failed twice, last error: PDB shop\/web blocks worker-3$/,
    );
  });

  it('says the degraded message once when it is also the last error', () => {
    const message =
      "drain of node worker-3 failed: Cannot evict pod as it would violate the pod's disruption budget.";
    const nv = nodeVersion(
      progressing({
        conditions: [
          cond('Progressing', 'True', 'RollingOut'),
          cond('Degraded', 'True', 'DrainFailed', message),
        ],
        lastError: message,
      }),
    );
    const line = describeRollout(nv);
    assert.equal(line.split(message).length - 1, 1, line);
    assert.doesNotMatch(line, /last error/);
  });

  describe('over a sequence of statuses', () => {
    const counts = (upToDate: number, outdated: number, surge = 0): Status =>
      progressing({
        counts: { total: upToDate + outdated + surge, upToDate, outdated, mints: surge },
        groups: [],
      });
    const filled = (line: string) => /^\[(#*)/.exec(line)?.[1]?.length ?? -1;

    it('never draws a shorter bar as new nodes join and the total grows and shrinks', () => {
      const memo = rolloutLineMemo(true);
      // 3 nodes to replace; 2 surge nodes join; one takes over; the donor goes; a retry sets one back.
      const seq = [
        counts(1, 2),
        counts(1, 2, 2),
        counts(1, 2, 1),
        counts(2, 1, 1),
        counts(2, 1),
        counts(1, 2),
      ];
      const bars = seq.map((st) => filled(describeRollout(nodeVersion(st), memo)));
      for (let i = 1; i < bars.length; i++) assert.ok(bars[i]! >= bars[i - 1]!, `bars ${bars.join(' ')}`);
      assert.match(describeRollout(nodeVersion(counts(1, 2, 2))), /^\[######-+\] 1\/3 up to date/);
    });

    it('starts the bar afresh for a new generation', () => {
      const memo = rolloutLineMemo(true);
      describeRollout(nodeVersion(counts(3, 0)), memo);
      const retarget = { ...counts(0, 3), observedGeneration: 3 };
      assert.equal(filled(describeRollout(nodeVersion(retarget, { generation: 3 }), memo)), 0);
    });

    it('prints the same degraded message once in a log, and again after it changed', () => {
      const memo = rolloutLineMemo(true);
      const degraded = (upToDate: number, message: string) =>
        nodeVersion({
          ...counts(upToDate, 3 - upToDate),
          conditions: [
            cond('Progressing', 'True', 'RollingOut'),
            cond('Degraded', 'True', 'DrainFailed', message),
          ],
          lastError: message,
        });
      const lines = [
        describeRollout(degraded(0, 'drain of worker-1 failed')),
        describeRollout(degraded(0, 'drain of worker-1 failed'), memo),
        describeRollout(degraded(1, 'drain of worker-1 failed'), memo),
        describeRollout(degraded(1, 'drain of worker-2 failed'), memo),
      ].slice(1);
      const mentions = lines.join('\n').split('worker-1 failed').length - 1;
      assert.equal(mentions, 1, lines.join('\n'));
      assert.match(lines[1] ?? '', /degraded \(DrainFailed, as above\)/);
      assert.match(lines[2] ?? '', /degraded: drain of worker-2 failed$/);
      // On a terminal the line is redrawn in place: it keeps the message.
      const tty = rolloutLineMemo(false);
      describeRollout(degraded(0, 'drain of worker-1 failed'), tty);
      assert.match(
        describeRollout(degraded(1, 'drain of worker-1 failed'), tty),
        /degraded: drain of worker-1 failed$/,
      );
    });
  });

  it('ends on a summary with the count replaced and the time taken', () => {
    assert.equal(
      describeFinished(nodeVersion(finished()), NOW),
      'nodeversion/default: 13/13 nodes up to date on img-2, 13 nodes replaced in 10m',
    );
  });
});

describe('status display', () => {
  const text = detail(
    nodeVersion(progressing({ lastError: 'drain of worker-3 timed out' }), {
      spec: { image: 'img-2', imageVersion: '2.0', kubernetesVersion: 'v1.37.1', strategy: { maxSurge: 3 } },
    }),
    NOW,
  );
  const lines = text.split('\n');

  it('has one line per group, control plane first, with bar, fraction, replacing, draining and image', () => {
    const at = lines.indexOf('Groups:');
    assert.ok(at > 0, text);
    assert.match(lines[at + 1] ?? '', /^ {2}GROUP +ROLE +UP-TO-DATE +REPLACING +DRAINING +IMAGE$/);
    assert.match(lines[at + 2] ?? '', /^ {2}cp +ControlPlane +\[##########\] 3\/3 +0 +0 +img-2$/);
    assert.match(lines[at + 3] ?? '', /^ {2}workers-a +Worker +\[#####-----\] 2\/4 +3 +1 +img-2$/);
    assert.match(lines[at + 4] ?? '', /^ {2}workers-b +Worker +\[----------\] 0\/6 +0 +0 +img-1 \*$/);
    assert.match(lines[at + 5] ?? '', /^ {2}\* the group does not launch img-2 yet$/);
  });

  it('shows the target, strategy, totals, conditions with reasons, last error and timings', () => {
    assert.match(text, /^Image: +img-2 \(version 2\.0\)$/m);
    assert.match(text, /^Kubernetes: +v1\.37\.1$/m);
    assert.match(
      text,
      /^Strategy: +max surge 3, max unavailable 1, control plane first, drain timeout 30m, node ready timeout 15m$/m,
    );
    assert.match(text, /^State: +Progressing$/m);
    assert.match(
      text,
      /^Nodes: +5\/13 up to date, 8 outdated, 1 draining, 2 taking over, 1 joined, not yet paired, 1 pending; 5 replaced$/m,
    );
    assert.match(text, /^Conditions: +Outdated=True \(NodesOutOfDate\): 8 nodes to replace$/m);
    assert.match(text, /^ {13}Progressing=True \(ReplacingNodes\): 3 replacements in flight$/m);
    assert.match(text, /^ {13}Degraded=False \(AsExpected\)$/m);
    assert.match(text, /^Last error: +drain of worker-3 timed out$/m);
    assert.match(text, /^Started: +2030-01-01T11:54:40\.000Z \(5m20s ago\)$/m);
    // the finish time is the previous rollout's: this one is still going
    assert.doesNotMatch(text, /^Finished:/m);
    assert.match(text, /^Elapsed: +5m20s$/m);
  });

  it('counts drains once: the summary and the DRAINING column agree', () => {
    // Three donors are paired; only one of them is draining yet.
    const st = progressing({
      counts: { total: 9, upToDate: 3, outdated: 6, donors: 3, heirs: 3 },
      groups: [
        { groupId: 'workers', role: 'Worker', total: 9, upToDate: 3, outdated: 6, replacing: 3, draining: 1 },
      ],
    });
    const shown = detail(nodeVersion(st), NOW);
    assert.match(shown, /^ {2}workers +Worker +\S+ 3\/9 +3 +1 +-$/m);
    assert.match(
      shown,
      /^Nodes: +3\/9 up to date, 6 outdated, 1 draining, 2 paired, not draining, 3 taking over;/m,
    );
    assert.doesNotMatch(shown, /3 draining/);
    assert.equal(totalsOf(st).draining, 1);
    assert.match(describeRollout(nodeVersion(st)), /, 3 replacing, 1 draining,/);
  });

  it('shows the finish time and the rollout duration once finished', () => {
    const done = detail(nodeVersion(finished()), NOW);
    assert.match(done, /^State: +UpToDate$/m);
    assert.match(done, /^Finished: +2030-01-01T11:50:00\.000Z \(10m ago\)$/m);
    assert.match(done, /^Elapsed: +10m$/m);
  });

  it('says it waits for the operator when the status is of an older generation', () => {
    const stale = detail(nodeVersion(progressing(), { generation: 4 }), NOW);
    assert.match(
      stale,
      /^State: +waiting for the operator to observe generation 4 \(the status below is of generation 2\)$/m,
    );
    const fresh = detail(nodeVersion(undefined, { generation: 1 }), NOW);
    assert.match(fresh, /^State: +waiting for the operator to observe generation 1$/m);
    assert.doesNotMatch(fresh, /^(Groups|Nodes|Conditions):/m);
  });

  it('shows a paused strategy and one that does not put the control plane first', () => {
    const nv = nodeVersion(finished(), {
      spec: { image: 'img-2', strategy: { paused: true, controlPlaneFirst: false, drainTimeout: '0' } },
    });
    assert.match(
      detail(nv, NOW),
      /^Strategy: +max surge 1, max unavailable 1, control plane with the workers, drain timeout none, node ready timeout 15m, PAUSED/m,
    );
  });

  it('prints no footnote when every group launches the target image', () => {
    assert.doesNotMatch(groupTable(nodeVersion(finished())), /\*/);
  });
});

describe('list tables', () => {
  it('NodeVersions with image, versions, up-to-date fraction, state and age', () => {
    const lines = nodeVersionTable(
      [nodeVersion(progressing(), { spec: { image: 'img-2', imageVersion: '2.0' } })],
      NOW,
    ).split('\n');
    assert.match(lines[0] ?? '', /^NAME +IMAGE +VERSION +KUBERNETES +UP-TO-DATE +STATE +AGE$/);
    assert.match(lines[1] ?? '', /^default +img-2 +2\.0 +- +5\/13 +Progressing +60m$/);
  });

  it('ScalingGroups with group id, role, bounds and the image they launch', () => {
    const sg: ScalingGroup = {
      ...ScalingGroups.make(
        { name: 'workers-a' },
        { groupId: 'projects/p/zones/z/instanceGroups/workers-a', role: 'Worker', min: 1, max: 10 },
      ),
      status: { imageReference: 'img-2' },
    };
    const lines = scalingGroupTable([sg]).split('\n');
    assert.match(lines[0] ?? '', /^NAME +GROUP +ROLE +MIN +MAX +AUTOSCALING +IMAGE$/);
    assert.match(
      lines[1] ?? '',
      /^workers-a +projects\/p\/zones\/z\/instanceGroups\/workers-a +Worker +1 +10 +no +img-2$/,
    );
  });

  it('PendingNodes with goal, cloud state and how far the deadline is', () => {
    const pn = (
      name: string,
      goal: 'Join' | 'Leave',
      deadline: string,
      cspState?: 'Creating',
    ): PendingNode => ({
      ...PendingNodes.make(
        { name },
        { providerID: `sim://${name}`, groupID: 'workers-a', nodeName: name, goal, deadline },
      ),
      ...(cspState ? { status: { cspState } } : {}),
    });
    const lines = pendingNodeTable(
      [
        pn('worker-7', 'Join', new Date(NOW + 240_000).toISOString(), 'Creating'),
        pn('worker-2', 'Leave', ago(90)),
      ],
      NOW,
    ).split('\n');
    assert.match(lines[0] ?? '', /^NAME +NODE +GOAL +CSPSTATE +REACHED +DEADLINE$/);
    assert.match(lines[1] ?? '', /^worker-7 +worker-7 +Join +Creating +no +in 4m$/);
    assert.match(lines[2] ?? '', /^worker-2 +worker-2 +Leave +- +no +90s ago$/);
  });
});
