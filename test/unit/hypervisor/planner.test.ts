import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  actionKey,
  type HypervisorAction,
  planHypervisor,
} from '../../../src/cluster/infra/hypervisor/planner.ts';
import type { ClusterRecord, VmRecord } from '../../../src/cluster/infra/hypervisor/state.ts';

const NOW = 100_000;

function cluster(state: ClusterRecord['state'], patch: Partial<ClusterRecord> = {}): ClusterRecord {
  return {
    cluster: 'c1',
    namespace: 'c1',
    state,
    created: state !== 'Pending',
    secretWritten: true,
    kubeconfigSecret: { namespace: 'default', name: 'c1-kubeconfig' },
    ...patch,
  };
}

function vm(name: string, patch: Partial<VmRecord> = {}): VmRecord {
  return {
    namespace: 'c1',
    name,
    uid: `uid-${name}`,
    cluster: 'c1',
    role: name.startsWith('master') ? 'master' : 'worker',
    host: 'host-0',
    state: 'Booting',
    bootsAt: NOW - 1,
    spec: { kubernetesVersion: 'v1.37.1', osVersion: 'os', cpus: '2', memory: '4Gi', nodeLabels: {} },
    ...patch,
  };
}

const brief = (a: HypervisorAction) => ('node' in a ? `${a.kind} ${a.node}` : `${a.kind} ${a.cluster}`);

function plan(clusters: ClusterRecord[], vms: VmRecord[], neverBoot: string[] = []) {
  const p = planHypervisor({ clusters, vms, faults: { neverBoot }, now: NOW });
  return { actions: p.actions.map(brief), wakeAt: p.wakeAt };
}

describe('planning the hypervisor', () => {
  const cases: {
    name: string;
    clusters: ClusterRecord[];
    vms: VmRecord[];
    neverBoot?: string[];
    actions: string[];
    wakeAt?: number;
  }[] = [
    {
      name: 'workers whose boot is due wait while no master has booted',
      clusters: [cluster('Pending')],
      vms: [vm('worker-1'), vm('worker-2')],
      actions: [],
    },
    {
      name: 'the first master due brings up the control plane',
      clusters: [cluster('Pending')],
      vms: [vm('master-0'), vm('worker-1')],
      actions: ['startControlPlane c1'],
    },
    {
      name: 'a master not due yet: nothing, but a wake-up at its boot time',
      clusters: [cluster('Pending')],
      vms: [vm('master-0', { bootsAt: NOW + 500 }), vm('worker-1', { bootsAt: NOW + 900 })],
      actions: [],
      wakeAt: NOW + 500,
    },
    {
      name: 'while the control plane starts, the VMs wait',
      clusters: [cluster('Starting')],
      vms: [vm('master-0'), vm('worker-1')],
      actions: [],
    },
    {
      name: 'once it runs: the kubeconfig is written and every due VM boots',
      clusters: [cluster('Running', { secretWritten: false })],
      vms: [vm('master-0'), vm('worker-1'), vm('worker-2', { bootsAt: NOW + 1000 })],
      actions: ['writeKubeconfig c1', 'bootVm master-0', 'bootVm worker-1'],
      wakeAt: NOW + 1000,
    },
    {
      name: 'no Secret named yet: nothing to write',
      clusters: [cluster('Running', { secretWritten: false, kubeconfigSecret: undefined })],
      vms: [],
      actions: [],
    },
    {
      name: 'a booted VM is not booted again',
      clusters: [cluster('Running')],
      vms: [vm('worker-1', { state: 'Running', node: 'made' })],
      actions: [],
    },
    {
      name: 'a VM whose pod is gone, or that died, has its Node powered off once',
      clusters: [cluster('Running')],
      vms: [
        vm('worker-1', { state: 'Off', node: 'made' }),
        vm('worker-2', { state: 'Dead', node: 'made' }),
        vm('worker-3', { state: 'Off', node: 'off' }),
        vm('worker-4', { state: 'Off' }),
      ],
      actions: ['powerOff worker-1', 'powerOff worker-2'],
    },
    {
      name: 'a new VM under the name of one going off waits for the power-off',
      clusters: [cluster('Running')],
      vms: [vm('worker-1', { uid: 'old', state: 'Off', node: 'made' }), vm('worker-1', { uid: 'new' })],
      actions: ['powerOff worker-1'],
    },
    {
      name: 'a VM failNextBoots took, or neverBoot names, never boots',
      clusters: [cluster('Running')],
      vms: [vm('worker-1', { stuck: true }), vm('worker-2'), vm('worker-3')],
      neverBoot: ['worker-2'],
      actions: ['bootVm worker-3'],
    },
    {
      name: 'a hung master does not bring up the control plane',
      clusters: [cluster('Pending')],
      vms: [vm('master-0', { stuck: true })],
      actions: [],
    },
    {
      name: 'a control plane stopped with the daemon starts again with no VM due',
      clusters: [cluster('Stopped')],
      vms: [vm('worker-1', { state: 'Running', node: 'made' })],
      actions: ['startControlPlane c1'],
    },
    {
      name: 'a failed start is retried no sooner than its retry time',
      clusters: [cluster('Stopped', { retryAt: NOW + 5000 })],
      vms: [],
      actions: [],
      wakeAt: NOW + 5000,
    },
    {
      name: 'a cluster whose namespace is gone is removed, and nothing else is done for it',
      clusters: [cluster('Removing')],
      vms: [vm('master-0'), vm('worker-1', { state: 'Off', node: 'made' })],
      actions: ['removeCluster c1'],
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const got = plan(c.clusters, c.vms, c.neverBoot);
      assert.deepEqual(got.actions, c.actions);
      assert.equal(got.wakeAt, c.wakeAt);
    });

  it('plans clusters independently', () => {
    const other = (v: VmRecord) => ({ ...v, cluster: 'c2', namespace: 'c2', uid: `c2-${v.uid}` });
    const got = plan(
      [cluster('Running'), { ...cluster('Pending'), cluster: 'c2', namespace: 'c2' }],
      [vm('worker-1'), other(vm('master-0'))],
    );
    assert.deepEqual(got.actions, ['bootVm worker-1', 'startControlPlane c2']);
  });

  it('keys actions so that a cluster’s own steps, and one Node’s, never run at once', () => {
    assert.equal(actionKey({ kind: 'startControlPlane', cluster: 'c1' }), 'cluster:c1');
    assert.equal(actionKey({ kind: 'removeCluster', cluster: 'c1' }), 'cluster:c1');
    assert.equal(actionKey({ kind: 'bootVm', cluster: 'c1', uid: 'a', node: 'w1' }), 'node:c1/w1');
    assert.equal(actionKey({ kind: 'powerOff', cluster: 'c1', uid: 'b', node: 'w1' }), 'node:c1/w1');
  });
});
