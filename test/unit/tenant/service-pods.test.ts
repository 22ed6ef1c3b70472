// Why a support service's pod is not running, read from its pods as
// `kubectl describe` would tell it, and the ServicesRunning condition made of it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ServicePod,
  servicePodStates,
  servicesEvent,
  servicesRunningCondition,
} from '../../../src/tenant/service-pods.ts';
import type { ServiceField } from '../../../src/tenant/services/index.ts';

const UNSCHEDULABLE =
  "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available.";

function pod(
  component: string,
  name: string,
  status: ServicePod['status'],
  extra: Partial<ServicePod['metadata']> & { node?: string } = {},
): ServicePod {
  const { node, ...meta } = extra;
  return {
    metadata: {
      name,
      labels: { 'app.kubernetes.io/component': component },
      creationTimestamp: '2026-11-26T10:00:00Z',
      ...meta,
    },
    ...(node ? { spec: { nodeName: node } } : {}),
    status,
  };
}
const ready = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
const pending = {
  phase: 'Pending',
  conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: UNSCHEDULABLE }],
};
const waiting = (reason: string, message?: string) => ({
  phase: 'Pending',
  conditions: [{ type: 'PodScheduled', status: 'True' }],
  containerStatuses: [
    { name: 'c', ready: false, state: { waiting: { reason, ...(message ? { message } : {}) } } },
  ],
});

describe('the state of each service pod', () => {
  const cases: { name: string; fields: ServiceField[]; pods: ServicePod[]; want: object[] }[] = [
    {
      name: 'a Ready pod runs, with its node',
      fields: ['jumpHost'],
      pods: [pod('jumphost', 'jh-1', ready, { node: 'real-0' })],
      want: [{ component: 'jumphost', running: true, pod: 'jh-1', node: 'real-0' }],
    },
    {
      name: "an unschedulable pod gives the scheduler's message",
      fields: ['controlPlaneLoadBalancer'],
      pods: [pod('controlplane-lb', 'lb-1', pending)],
      want: [
        {
          component: 'controlplane-lb',
          running: false,
          pod: 'lb-1',
          trouble: 'Unschedulable',
          message: UNSCHEDULABLE,
        },
      ],
    },
    {
      name: "a container the kubelet holds gives the kubelet's reason",
      fields: ['jumpHost'],
      pods: [
        pod('jumphost', 'jh-1', waiting('ErrImageNeverPull', 'Container image "x" is not present'), {
          node: 'n',
        }),
      ],
      want: [
        {
          component: 'jumphost',
          running: false,
          pod: 'jh-1',
          node: 'n',
          trouble: 'ContainerWaiting',
          detail: 'ErrImageNeverPull',
          message: 'ErrImageNeverPull: Container image "x" is not present',
        },
      ],
    },
    {
      name: 'a container still being created is starting, not in trouble of its own',
      fields: ['jumpHost'],
      pods: [pod('jumphost', 'jh-1', waiting('ContainerCreating'), { node: 'n' })],
      want: [
        {
          component: 'jumphost',
          running: false,
          pod: 'jh-1',
          node: 'n',
          trouble: 'ContainerCreating',
          message: 'starting on n',
        },
      ],
    },
    {
      name: 'a running pod whose probe fails is not ready',
      fields: ['jumpHost'],
      pods: [
        pod(
          'jumphost',
          'jh-1',
          { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] },
          { node: 'n' },
        ),
      ],
      want: [
        {
          component: 'jumphost',
          running: false,
          pod: 'jh-1',
          node: 'n',
          trouble: 'NotReady',
          message: 'running on n but not ready (its probe fails)',
        },
      ],
    },
    {
      name: 'a pod the scheduler has not looked at yet is not called Unschedulable',
      fields: ['controlPlaneLoadBalancer'],
      pods: [pod('controlplane-lb', 'lb-1', { phase: 'Pending' })],
      want: [
        {
          component: 'controlplane-lb',
          running: false,
          pod: 'lb-1',
          trouble: 'Scheduling',
          message: 'waiting for the scheduler',
        },
      ],
    },
    {
      name: 'no pod at all',
      fields: ['workerLoadBalancer'],
      pods: [],
      want: [{ component: 'worker-lb', running: false, trouble: 'NoPod', message: 'no pod yet' }],
    },
    {
      name: 'during a rollout, the old pod still Ready keeps the service running',
      fields: ['jumpHost'],
      pods: [
        pod('jumphost', 'jh-new', pending, { creationTimestamp: '2026-11-26T11:00:00Z' }),
        pod('jumphost', 'jh-old', ready, { node: 'a' }),
      ],
      want: [
        {
          component: 'jumphost',
          running: true,
          pod: 'jh-old',
          node: 'a',
          replacing: { pod: 'jh-new', message: UNSCHEDULABLE },
        },
      ],
    },
    {
      name: 'once the newest pod is Ready, an older one not yet going is no rollout',
      fields: ['jumpHost'],
      pods: [
        pod('jumphost', 'jh-old', ready, { node: 'a' }),
        pod('jumphost', 'jh-new', ready, { node: 'b', creationTimestamp: '2026-11-26T11:00:00Z' }),
      ],
      want: [{ component: 'jumphost', running: true, pod: 'jh-new', node: 'b' }],
    },
    {
      name: 'a pod on its way out does not count; the newest of the rest is told about',
      fields: ['jumpHost'],
      pods: [
        pod('jumphost', 'jh-going', ready, { node: 'a', deletionTimestamp: '2026-11-26T11:00:00Z' }),
        pod('jumphost', 'jh-1', pending, { creationTimestamp: '2026-11-26T10:00:00Z' }),
        pod('jumphost', 'jh-2', waiting('ImagePullBackOff'), {
          node: 'b',
          creationTimestamp: '2026-11-26T10:05:00Z',
        }),
      ],
      want: [
        {
          component: 'jumphost',
          running: false,
          pod: 'jh-2',
          node: 'b',
          trouble: 'ContainerWaiting',
          detail: 'ImagePullBackOff',
          message: 'ImagePullBackOff',
        },
      ],
    },
    {
      name: 'only the services asked for, in a fixed order, each from its own pods',
      fields: ['jumpHost', 'controlPlaneLoadBalancer'],
      pods: [
        pod('jumphost', 'jh', ready, { node: 'a' }),
        pod('worker-lb', 'w', pending),
        pod('controlplane-lb', 'lb', ready, { node: 'b' }),
      ],
      want: [
        { component: 'controlplane-lb', running: true, pod: 'lb', node: 'b' },
        { component: 'jumphost', running: true, pod: 'jh', node: 'a' },
      ],
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(servicePodStates(c.fields, c.pods), c.want));
});

describe('the ServicesRunning condition', () => {
  it('is True with where each runs, or True for no services at all', () => {
    const states = servicePodStates(
      ['controlPlaneLoadBalancer', 'jumpHost'],
      [
        pod('controlplane-lb', 'lb', ready, { node: 'real-0' }),
        pod('jumphost', 'jh', ready, { node: 'real-1' }),
      ],
    );
    assert.deepEqual(servicesRunningCondition(states), {
      type: 'ServicesRunning',
      status: 'True',
      reason: 'Running',
      message: 'controlplane-lb on real-0, jumphost on real-1',
    });
    assert.equal(servicesRunningCondition(undefined).reason, 'NoServices');
  });

  it('is True, RollingOut, while an older pod serves for a newer one still starting', () => {
    const states = servicePodStates(
      ['controlPlaneLoadBalancer', 'jumpHost'],
      [
        pod('controlplane-lb', 'lb', ready, { node: 'real-0' }),
        pod('jumphost', 'jh-old', ready, { node: 'real-1' }),
        pod('jumphost', 'jh-new', waiting('ContainerCreating'), {
          node: 'real-0',
          creationTimestamp: '2026-11-26T11:00:00Z',
        }),
      ],
    );
    assert.deepEqual(servicesRunningCondition(states), {
      type: 'ServicesRunning',
      status: 'True',
      reason: 'RollingOut',
      message: 'controlplane-lb on real-0, jumphost on real-1 (being replaced by jh-new: starting on real-0)',
    });
  });

  it("puts an unschedulable service first, with the scheduler's message, and names every one down", () => {
    const states = servicePodStates(
      ['controlPlaneLoadBalancer', 'jumpHost'],
      [
        pod('controlplane-lb', 'lb', waiting('CrashLoopBackOff'), { node: 'n' }),
        pod('jumphost', 'jh', pending),
      ],
    );
    const c = servicesRunningCondition(states);
    assert.equal(c.status, 'False');
    assert.equal(c.reason, 'Unschedulable');
    assert.equal(c.message, `controlplane-lb (lb): CrashLoopBackOff; jumphost (jh): ${UNSCHEDULABLE}`);
  });

  it("takes the kubelet's reason when it is one the API server accepts, the trouble otherwise", () => {
    const kubelet = servicesRunningCondition(
      servicePodStates(['jumpHost'], [pod('jumphost', 'jh', waiting('ImagePullBackOff'), { node: 'n' })]),
    );
    assert.equal(kubelet.reason, 'ImagePullBackOff');
    const odd = servicesRunningCondition(
      servicePodStates(['jumpHost'], [pod('jumphost', 'jh', waiting('not a reason!'), { node: 'n' })]),
    );
    assert.equal(odd.reason, 'ContainerWaiting');
  });
});

describe('the Event a turn of ServicesRunning deserves', () => {
  const f = (reason: string, message = reason) => ({ status: 'False', reason, message });
  const t = (reason = 'Running') => ({ status: 'True', reason, message: 'jumphost on a' });
  const cases: { name: string; was?: object; now?: object; want?: object }[] = [
    { name: 'a new pod waiting for the scheduler: none', was: undefined, now: f('Scheduling') },
    { name: 'a new pod being created: none', was: f('Scheduling'), now: f('ContainerCreating') },
    {
      name: "the scheduler's verdict: a Warning with its message",
      was: f('Scheduling'),
      now: f('Unschedulable', '0/3 nodes are available'),
      want: { type: 'Warning', reason: 'ServiceNotRunning', message: '0/3 nodes are available' },
    },
    {
      name: "the kubelet's: a Warning",
      was: t(),
      now: f('CrashLoopBackOff'),
      want: { type: 'Warning', reason: 'ServiceNotRunning', message: 'CrashLoopBackOff' },
    },
    { name: 'the same reason again: none', was: f('CrashLoopBackOff'), now: f('CrashLoopBackOff') },
    {
      name: 'running again after trouble: a Normal Event',
      was: f('ImagePullBackOff'),
      now: t(),
      want: { type: 'Normal', reason: 'ServicesRunning', message: 'jumphost on a' },
    },
    { name: 'running after only starting up: none', was: f('ContainerCreating'), now: t() },
    { name: 'a rollout under way and done: none', was: t('RollingOut'), now: t() },
  ];
  for (const c of cases)
    it(c.name, () => assert.deepEqual(servicesEvent(c.was as never, c.now as never), c.want));
});
