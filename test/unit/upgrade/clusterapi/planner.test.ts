// The clusterapi provider's decisions, as tables: which MachineDeployments are
// groups, which strategies are refused, the template a new image gets, a
// Machine's instance state, and which MachineSet must shrink to remove one Machine.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Machine, MachineDeployment, MachineSet } from '../../../../src/api/clusterapi.ts';
import {
  CLONED_FROM_LABEL,
  cloneTemplate,
  instanceState,
  launchesNotListed,
  nodeNameOf,
  parsePause,
  pauseValue,
  planScaleDown,
  recordScaleDown,
  SCALED_DOWN_ANNOTATION,
  scaledDownFor,
  scalingGroupsOf,
  strategyDecision,
  templateSwapHold,
} from '../../../../src/upgrade/providers/clusterapi/planner.ts';

const md = (
  name: string,
  o: {
    ns?: string;
    cluster?: string;
    replicas?: number;
    strategy?: 'OnDelete' | 'RollingUpdate';
    template?: string;
    deleting?: boolean;
  } = {},
): MachineDeployment => ({
  metadata: {
    name,
    namespace: o.ns ?? 'ns',
    ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
  spec: {
    clusterName: o.cluster ?? 'c1',
    replicas: o.replicas ?? 3,
    ...(o.strategy ? { rollout: { strategy: { type: o.strategy } } } : {}),
    template: {
      spec: {
        clusterName: o.cluster ?? 'c1',
        infrastructureRef: { apiGroup: 'g', kind: 'K', name: o.template ?? 't2' },
      },
    },
  },
});

const ms = (name: string, template: string, replicas: number, created: string): MachineSet => ({
  metadata: { name, creationTimestamp: created },
  spec: { replicas, template: { spec: { infrastructureRef: { apiGroup: 'g', kind: 'K', name: template } } } },
});

const machine = (
  name: string,
  o: {
    set?: string;
    phase?: string;
    deleting?: boolean;
    annotations?: Record<string, string>;
    nodeRef?: string;
  } = {},
): Machine => ({
  metadata: {
    name,
    namespace: 'ns',
    creationTimestamp: '2026-01-01T00:00:00Z',
    labels: o.set ? { 'cluster.x-k8s.io/set-name': o.set } : {},
    ...(o.annotations ? { annotations: o.annotations } : {}),
    ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:01:00Z' } : {}),
  },
  spec: { clusterName: 'c1', infrastructureRef: { apiGroup: 'g', kind: 'K', name } },
  status: { ...(o.phase ? { phase: o.phase } : {}), ...(o.nodeRef ? { nodeRef: { name: o.nodeRef } } : {}) },
});

describe('scaling groups of a cluster', () => {
  const all = [md('a'), md('b', { cluster: 'c2' }), md('c', { ns: 'other' }), md('d', { deleting: true })];
  const cases: [string, string, string[]][] = [
    ['a cluster name matches its MachineDeployments in any namespace', 'c1', ['ns/a', 'other/c']],
    ['namespace/name matches that namespace only', 'ns/c1', ['ns/a']],
    ['another cluster has its own', 'c2', ['ns/b']],
    ['an unknown cluster has none', 'nope', []],
  ];
  for (const [name, id, want] of cases) {
    it(name, () =>
      assert.deepEqual(
        scalingGroupsOf(all, id).map((g) => g.groupId),
        want,
      ),
    );
  }
  it('are worker groups the autoscaler knows as MachineDeployment/<namespace>/<name>', () => {
    assert.deepEqual(scalingGroupsOf([md('a')], 'c1'), [
      { groupId: 'ns/a', name: 'c1-a', role: 'Worker', autoscalerGroupName: 'MachineDeployment/ns/a' },
    ]);
  });
});

describe('the rollout strategy of a group', () => {
  const cases: [string, MachineDeployment, boolean, string][] = [
    ['OnDelete is what we need', md('a', { strategy: 'OnDelete' }), false, 'ok'],
    ['RollingUpdate is refused without consent', md('a', { strategy: 'RollingUpdate' }), false, 'refuse'],
    ['no strategy is RollingUpdate, refused', md('a'), false, 'refuse'],
    ['RollingUpdate is switched with consent', md('a', { strategy: 'RollingUpdate' }), true, 'setOnDelete'],
  ];
  for (const [name, d, consent, want] of cases)
    it(name, () => assert.equal(strategyDecision(d, consent).kind, want));
  it('the refusal says what to set', () => {
    const d = strategyDecision(md('a', { strategy: 'RollingUpdate' }), false);
    assert.equal(d.kind, 'refuse');
    assert.match(
      d.kind === 'refuse' ? d.message : '',
      /ns\/a .*RollingUpdate.*spec\.rollout\.strategy\.type: OnDelete.*--clusterapi-set-on-delete/,
    );
  });
});

describe('the template of a new image', () => {
  const t = {
    apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta2',
    kind: 'AWSMachineTemplate',
    metadata: { name: 'workers', namespace: 'ns', resourceVersion: '7', uid: 'u', labels: { a: 'b' } },
    spec: { template: { spec: { instanceType: 'm5.large', ami: { id: 'ami-1' } } } },
  };
  const path = 'spec.template.spec.ami.id';
  it('is a copy with the image set, the rest kept, server fields dropped', () => {
    const c = cloneTemplate(t, path, 'ami-2');
    assert.deepEqual(c.spec, { template: { spec: { instanceType: 'm5.large', ami: { id: 'ami-2' } } } });
    assert.equal(c.metadata.resourceVersion, undefined);
    assert.equal(c.metadata.uid, undefined);
    assert.deepEqual(c.metadata.labels, { a: 'b', [CLONED_FROM_LABEL]: 'workers' });
    assert.equal(t.spec.template.spec.ami.id, 'ami-1', 'the original is untouched');
  });
  it('is named by a hash of its spec: the same image, the same name; another image, another name', () => {
    const a = cloneTemplate(t, path, 'ami-2').metadata.name;
    assert.equal(cloneTemplate(t, path, 'ami-2').metadata.name, a);
    assert.notEqual(cloneTemplate(t, path, 'ami-3').metadata.name, a);
    assert.match(a ?? '', /^workers-[0-9a-f]{10}$/);
  });
  it('a clone of a clone descends from the first template, not a chain of hashes', () => {
    const c1 = cloneTemplate(t, path, 'ami-2');
    const c2 = cloneTemplate(c1, path, 'ami-3');
    assert.match(c2.metadata.name ?? '', /^workers-[0-9a-f]{10}$/);
    assert.equal(c2.metadata.labels?.[CLONED_FROM_LABEL], 'workers');
  });
  it('makes the objects on the way to a path the template lacks', () => {
    const c = cloneTemplate({ ...t, spec: { template: { spec: {} } } }, path, 'ami-9');
    assert.deepEqual(c.spec, { template: { spec: { ami: { id: 'ami-9' } } } });
  });
});

describe('a Machine as an instance', () => {
  const cases: [string, Machine, string][] = [
    ['Pending is Creating', machine('m', { phase: 'Pending' }), 'Creating'],
    ['Provisioning is Creating', machine('m', { phase: 'Provisioning' }), 'Creating'],
    ['Provisioned (no Node yet) is Creating', machine('m', { phase: 'Provisioned' }), 'Creating'],
    ['Running is Ready', machine('m', { phase: 'Running' }), 'Ready'],
    ['Deleting is Terminating', machine('m', { phase: 'Deleting' }), 'Terminating'],
    [
      'a deletion timestamp is Terminating whatever the phase',
      machine('m', { phase: 'Running', deleting: true }),
      'Terminating',
    ],
    ['Failed is Failed', machine('m', { phase: 'Failed' }), 'Failed'],
    ['no phase yet is Creating', machine('m'), 'Creating'],
  ];
  for (const [name, m, want] of cases) it(name, () => assert.equal(instanceState(m), want));
  it('its node name is its nodeRef, else its own name', () => {
    assert.equal(nodeNameOf(machine('m', { nodeRef: 'ip-10-0-0-1' })), 'ip-10-0-0-1');
    assert.equal(nodeNameOf(machine('m')), 'm');
  });
});

// An operator killed inside createNode, after the replicas went up and before the Machine
// was listed, asked again on restart: 7 Machines of 4 at surge 2 through Cluster API.
describe('the launches a group asks for that no listed Machine answers yet', () => {
  const NOW = Date.parse('2026-01-01T00:05:00Z');
  const CREATED = Date.parse('2026-01-01T00:00:00Z');
  const listed = (name: string, o: { deleting?: boolean } = {}): Machine => {
    const m = machine(name, o);
    m.spec.providerID = `nw://${name}`;
    return m;
  };
  const cases: [string, number, Machine[], number[]][] = [
    ['every replica a listed Machine: none', 2, [listed('a'), listed('b')], []],
    ['a replica with no Machine yet: one, asked for now', 3, [listed('a'), listed('b')], [NOW]],
    [
      'a Machine with no providerID yet: one, asked for at its creation',
      2,
      [listed('a'), machine('b')],
      [CREATED],
    ],
    [
      'a Machine deleting does not answer a replica: one',
      2,
      [listed('a'), listed('b', { deleting: true })],
      [NOW],
    ],
    ['more Machines than replicas (a removal of ours under way): none', 1, [listed('a'), listed('b')], []],
  ];
  for (const [name, replicas, machines, want] of cases)
    it(name, () => assert.deepEqual(launchesNotListed(md('md', { replicas }), machines, NOW), want));
});

describe('removing one Machine of an OnDelete group', () => {
  const sets = [
    ms('old1', 't0', 2, '2026-01-01T00:00:00Z'),
    ms('old2', 't1', 2, '2026-01-02T00:00:00Z'),
    ms('new', 't2', 3, '2026-01-03T00:00:00Z'),
  ];
  const cases: [
    string,
    Machine,
    { machineSet?: { name: string; replicas: number }; replicas: number } | undefined,
  ][] = [
    [
      'in the oldest old set: that set lowered too, Cluster API choosing nothing',
      machine('m', { set: 'old1' }),
      { machineSet: { name: 'old1', replicas: 1 }, replicas: 2 },
    ],
    [
      'in a younger old set: that set is lowered',
      machine('m', { set: 'old2' }),
      { machineSet: { name: 'old2', replicas: 1 }, replicas: 2 },
    ],
    ['of no set we know: the MachineDeployment alone', machine('m', { set: 'gone' }), { replicas: 2 }],
    [
      'in the current set (a machine that never joined): that set is lowered first',
      machine('m', { set: 'new' }),
      { machineSet: { name: 'new', replicas: 2 }, replicas: 2 },
    ],
    ['already deleting: nothing to do', machine('m', { set: 'old1', deleting: true }), undefined],
  ];
  for (const [name, m, want] of cases) {
    it(name, () => {
      const plan = planScaleDown(md('a'), sets, m);
      if (!want) return assert.equal(plan, undefined);
      assert.deepEqual(plan?.annotate, {
        'cluster.x-k8s.io/delete-machine': 'true',
        'machine.cluster.x-k8s.io/exclude-node-draining': 'true',
      });
      assert.deepEqual(
        { ...(plan?.machineSet ? { machineSet: plan.machineSet } : {}), replicas: plan?.replicas },
        want,
      );
    });
  }
  it('a repeated call does not lower replicas twice: the MachineDeployment records for whom it was lowered', () => {
    const d = md('a');
    assert.equal(scaledDownFor(d).has('m1'), false);
    const once = recordScaleDown(d, 'm1', new Set(['m1', 'm2']));
    assert.equal(once, 'm1');
    const d1 = { ...d, metadata: { ...d.metadata, annotations: { [SCALED_DOWN_ANNOTATION]: once } } };
    assert.equal(scaledDownFor(d1).has('m1'), true, 'asked for m1 already');
    assert.equal(recordScaleDown(d1, 'm2', new Set(['m1', 'm2'])), 'm1,m2');
    assert.equal(recordScaleDown(d1, 'm2', new Set(['m2'])), 'm2', 'Machines gone are dropped');
  });
});

describe('our pause of a MachineDeployment between two writes', () => {
  it('says what the second write does, and is read back', () => {
    const v = pauseValue({ machine: 'md-abc-x1', from: 5, to: 4 });
    assert.equal(v, 'nodewarden: removing Machine md-abc-x1, replicas 5 to 4');
    assert.deepEqual(parsePause(v), { machine: 'md-abc-x1', from: 5, to: 4 });
  });
  it("someone else's pause is not ours", () => {
    assert.equal(parsePause('true'), undefined);
    assert.equal(parsePause(''), undefined);
    assert.equal(parsePause(undefined), undefined);
  });
});

// Against the real manager: the template swapped while the current set still grew (a Machine
// made, its status not yet counting it) had Cluster API cut that set back and delete one of its
// Machines at random, the heir of a node already replaced.
describe('when a group may get its new template', () => {
  const set = (name: string, replicas: number, counted: number, deleting = false): MachineSet => ({
    ...ms(name, `${name}-tpl`, replicas, '2026-01-01T00:00:00Z'),
    status: { replicas: counted },
    ...(deleting
      ? {
          metadata: {
            name,
            creationTimestamp: '2026-01-01T00:00:00Z',
            deletionTimestamp: '2026-01-02T00:00:00Z',
          },
        }
      : {}),
  });
  const table: Array<[string, number, MachineSet[], RegExp | undefined]> = [
    [
      'settled: every set counts the Machines it was asked for',
      5,
      [set('a', 3, 3), set('b', 2, 2)],
      undefined,
    ],
    [
      'a set being lowered (a Machine of it deleting) is no reason to wait',
      4,
      [set('a', 2, 3), set('b', 2, 2)],
      undefined,
    ],
    [
      'the current set asked for a Machine it does not count yet: wait',
      5,
      [set('a', 3, 3), set('b', 2, 1)],
      /MachineSet b counts 1 of its 2 Machines/,
    ],
    [
      'the MachineDeployment raised, its sets not yet: wait',
      5,
      [set('a', 3, 3), set('b', 1, 1)],
      /hold 4 replicas, the MachineDeployment 5/,
    ],
    ['a set being deleted is not counted', 3, [set('a', 3, 3), set('old', 2, 2, true)], undefined],
    ['a new group, no set yet, no replicas', 0, [], undefined],
  ];
  for (const [name, replicas, sets, want] of table)
    it(name, () => {
      const hold = templateSwapHold(md('w', { replicas }), sets);
      if (want) assert.match(hold ?? '', want);
      else assert.equal(hold, undefined);
    });
});
