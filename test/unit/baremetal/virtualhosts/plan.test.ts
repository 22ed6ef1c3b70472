// planPool as a table: pool + nodes + what exists → VMs to make and give up.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type PlanInput,
  planPool,
  selects,
  type VmRef,
} from '../../../../src/baremetal/virtualhosts/plan.ts';

const HV = { 'nodewarden.dev/hypervisor': 'true' };
const nodes = [
  { name: 'worker-000', labels: HV },
  { name: 'worker-001', labels: HV },
  { name: 'worker-002', labels: {} },
];
const flavor = (name: string, count: number) => ({
  name,
  count,
  networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
});
const input = (over: Partial<PlanInput> = {}): PlanInput => ({
  pool: 'lab',
  spec: { nodeSelector: { matchLabels: HV }, nodes: [flavor('master', 1), flavor('worker', 2)] },
  deleting: false,
  nodes,
  existingVms: [],
  existingHypervisors: [],
  agentReady: new Set(['worker-000', 'worker-001']),
  ...over,
});
const vms = (node: string, flavorName: string, ...indexes: number[]): VmRef[] =>
  indexes.map((index) => ({ node, flavor: flavorName, index }));
const everything = [
  ...vms('worker-000', 'master', 0),
  ...vms('worker-000', 'worker', 0, 1),
  ...vms('worker-001', 'master', 0),
  ...vms('worker-001', 'worker', 0, 1),
];

describe('planPool', () => {
  const cases: {
    name: string;
    input: PlanInput;
    desired: string[];
    waiting?: string[];
    giveUp: string[];
    release?: string[];
  }[] = [
    {
      name: 'a new pool: every flavor on every selected node, named <pool>-<node>-<flavor>-<i>',
      input: input(),
      desired: [
        'lab-worker-000-master-0',
        'lab-worker-000-worker-0',
        'lab-worker-000-worker-1',
        'lab-worker-001-master-0',
        'lab-worker-001-worker-0',
        'lab-worker-001-worker-1',
      ],
      giveUp: [],
    },
    {
      name: 'a steady pool gives nothing up',
      input: input({ existingVms: everything, existingHypervisors: ['worker-000', 'worker-001'] }),
      desired: [
        'lab-worker-000-master-0',
        'lab-worker-000-worker-0',
        'lab-worker-000-worker-1',
        'lab-worker-001-master-0',
        'lab-worker-001-worker-0',
        'lab-worker-001-worker-1',
      ],
      giveUp: [],
    },
    {
      name: 'scaling a flavor 4 → 2 gives up the highest-numbered VMs first',
      input: input({
        spec: { nodeSelector: { matchLabels: HV }, nodes: [flavor('worker', 2)] },
        nodes: nodes.slice(0, 1),
        existingVms: vms('worker-000', 'worker', 0, 1, 2, 3),
      }),
      desired: ['lab-worker-000-worker-0', 'lab-worker-000-worker-1'],
      giveUp: ['lab-worker-000-worker-3:scaledDown', 'lab-worker-000-worker-2:scaledDown'],
    },
    {
      name: 'a flavor removed from the spec gives its VMs up',
      input: input({
        spec: { nodeSelector: { matchLabels: HV }, nodes: [flavor('worker', 2)] },
        existingVms: everything,
      }),
      desired: [
        'lab-worker-000-worker-0',
        'lab-worker-000-worker-1',
        'lab-worker-001-worker-0',
        'lab-worker-001-worker-1',
      ],
      giveUp: ['lab-worker-000-master-0:flavorRemoved', 'lab-worker-001-master-0:flavorRemoved'],
    },
    {
      name: 'a node leaving the selector gives up its VMs and is released',
      input: input({
        nodes: [nodes[0]!, { name: 'worker-001', labels: {} }],
        existingVms: everything,
        existingHypervisors: ['worker-000', 'worker-001'],
      }),
      desired: ['lab-worker-000-master-0', 'lab-worker-000-worker-0', 'lab-worker-000-worker-1'],
      giveUp: [
        'lab-worker-001-worker-1:nodeLeft',
        'lab-worker-001-master-0:nodeLeft',
        'lab-worker-001-worker-0:nodeLeft',
      ],
      release: ['worker-001:nodeLeft'],
    },
    {
      name: 'a node being deleted counts as gone',
      input: input({
        nodes: [nodes[0]!, { ...nodes[1]!, deleting: true }],
        existingVms: vms('worker-001', 'master', 0),
        existingHypervisors: ['worker-001'],
      }),
      desired: ['lab-worker-000-master-0', 'lab-worker-000-worker-0', 'lab-worker-000-worker-1'],
      giveUp: ['lab-worker-001-master-0:nodeLeft'],
      release: ['worker-001:nodeLeft'],
    },
    {
      name: 'a pool being deleted gives everything up',
      input: input({
        deleting: true,
        existingVms: everything,
        existingHypervisors: ['worker-000', 'worker-001'],
      }),
      desired: [],
      giveUp: [
        'lab-worker-000-worker-1:poolDeleted',
        'lab-worker-001-worker-1:poolDeleted',
        'lab-worker-000-master-0:poolDeleted',
        'lab-worker-000-worker-0:poolDeleted',
        'lab-worker-001-master-0:poolDeleted',
        'lab-worker-001-worker-0:poolDeleted',
      ],
      release: ['worker-000:poolDeleted', 'worker-001:poolDeleted'],
    },
    {
      name: 'VMs wait for their node’s agent',
      input: input({ agentReady: new Set(['worker-001']) }),
      desired: [
        'lab-worker-000-master-0',
        'lab-worker-000-worker-0',
        'lab-worker-000-worker-1',
        'lab-worker-001-master-0',
        'lab-worker-001-worker-0',
        'lab-worker-001-worker-1',
      ],
      waiting: ['lab-worker-000-master-0', 'lab-worker-000-worker-0', 'lab-worker-000-worker-1'],
      giveUp: [],
    },
    {
      name: 'count 0 makes nothing',
      input: input({ spec: { nodeSelector: { matchLabels: HV }, nodes: [flavor('worker', 0)] } }),
      desired: [],
      giveUp: [],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const plan = planPool(c.input);
      assert.deepEqual(
        plan.desired.map((d) => d.name),
        c.desired,
      );
      assert.deepEqual(
        plan.waiting.map((d) => d.name),
        c.waiting ?? [],
      );
      assert.deepEqual(
        plan.ready.map((d) => d.name),
        c.desired.filter((d) => !(c.waiting ?? []).includes(d)),
      );
      assert.deepEqual(
        plan.giveUp.map((g) => `${g.name}:${g.cause}`),
        c.giveUp,
      );
      assert.deepEqual(
        plan.releaseHypervisors.map((r) => `${r.node}:${r.cause}`),
        c.release ?? [],
      );
    });
});

describe('selects (a LabelSelector)', () => {
  const labels = { role: 'hv', rack: 'r1' };
  const cases: { name: string; selector: Parameters<typeof selects>[0]; want: boolean }[] = [
    { name: 'matchLabels that match', selector: { matchLabels: { role: 'hv' } }, want: true },
    { name: 'matchLabels that do not', selector: { matchLabels: { role: 'db' } }, want: false },
    { name: 'an empty selector selects nothing', selector: {}, want: false },
    {
      name: 'In',
      selector: { matchExpressions: [{ key: 'rack', operator: 'In', values: ['r1', 'r2'] }] },
      want: true,
    },
    {
      name: 'NotIn',
      selector: { matchExpressions: [{ key: 'rack', operator: 'NotIn', values: ['r1'] }] },
      want: false,
    },
    {
      name: 'NotIn of a missing key',
      selector: { matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['r1'] }] },
      want: true,
    },
    { name: 'Exists', selector: { matchExpressions: [{ key: 'rack', operator: 'Exists' }] }, want: true },
    {
      name: 'DoesNotExist',
      selector: { matchExpressions: [{ key: 'rack', operator: 'DoesNotExist' }] },
      want: false,
    },
    {
      name: 'labels and expressions together',
      selector: {
        matchLabels: { role: 'hv' },
        matchExpressions: [{ key: 'rack', operator: 'In', values: ['r2'] }],
      },
      want: false,
    },
  ];
  for (const c of cases) it(c.name, () => assert.equal(selects(c.selector, labels), c.want));
});
