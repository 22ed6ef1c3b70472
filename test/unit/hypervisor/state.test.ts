import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HypervisorState, KEPT_OFF_VMS } from '../../../src/cluster/infra/hypervisor/state.ts';
import type { ObservedPod } from '../../../src/cluster/infra/hypervisor/vm-pods.ts';

function pod(name: string, patch: Partial<ObservedPod> = {}): ObservedPod {
  return {
    namespace: 'c1',
    name,
    uid: `uid-${name}`,
    cluster: 'c1',
    role: name.startsWith('master') ? 'master' : 'worker',
    host: 'host-0',
    running: true,
    finished: false,
    spec: { kubernetesVersion: 'v1.37.1', osVersion: 'os', cpus: '2', memory: '4Gi', nodeLabels: {} },
    problems: [],
    ...patch,
  };
}

const LIVE = new Set(['c1', 'default']);
const states = (s: HypervisorState) => Object.fromEntries(s.vmList().map((v) => [v.name, v.state]));

describe('the hypervisor state', () => {
  it('boots a VM once its pod runs on a node, after the boot delay', () => {
    const s = new HypervisorState({ bootDelayMs: 2000 });
    s.observe({ pods: [pod('worker-1', { running: false, host: undefined })], liveNamespaces: LIVE }, 1000);
    assert.deepEqual(states(s), { 'worker-1': 'Pending' });
    s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 5000);
    const vm = s.vm('uid-worker-1');
    assert.equal(vm?.state, 'Booting');
    assert.equal(vm?.bootsAt, 7000);
    assert.equal(vm?.host, 'host-0');
    // Seen again later: the boot time does not move.
    s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 6000);
    assert.equal(s.vm('uid-worker-1')?.bootsAt, 7000);
  });

  it('boots a VM the slowBoot fault names after its own delay, and the next failNextBoots never', () => {
    const s = new HypervisorState({ bootDelayMs: 2000 });
    s.setFaults({ slowBoot: { 'worker-1': 30_000 }, failNextBoots: 1 });
    s.observe({ pods: [pod('worker-1'), pod('worker-2'), pod('worker-3')], liveNamespaces: LIVE }, 0);
    assert.equal(s.vm('uid-worker-1')?.bootsAt, 30_000);
    assert.equal(s.vm('uid-worker-1')?.stuck, true, 'the first to boot took the one failing boot');
    assert.equal(s.vm('uid-worker-2')?.stuck, undefined);
    assert.equal(s.getFaults().failNextBoots, 0);
  });

  it('hangs a VM the neverBoot fault names when its boot time comes, for good', () => {
    const s = new HypervisorState({ bootDelayMs: 1000 });
    s.setFaults({ neverBoot: ['worker-1'] });
    s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 0);
    assert.equal(s.vm('uid-worker-1')?.stuck, undefined, 'not before its boot time');
    s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 1000);
    assert.equal(s.vm('uid-worker-1')?.stuck, true);
    s.clearFaults();
    s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 2000);
    assert.equal(s.vm('uid-worker-1')?.stuck, true);
    assert.equal(s.vm('uid-worker-1')?.state, 'Booting');
  });

  it('kills a VM the die fault names, at once, while its pod stays', () => {
    const s = new HypervisorState();
    s.observe({ pods: [pod('worker-1'), pod('worker-2', { running: false })], liveNamespaces: LIVE }, 0);
    s.vmBooted('uid-worker-1');
    s.setFaults({ die: ['worker-1', 'worker-2'] });
    assert.deepEqual(states(s), { 'worker-1': 'Dead', 'worker-2': 'Pending' });
    // A pending VM named dies once it starts.
    s.observe({ pods: [pod('worker-1'), pod('worker-2')], liveNamespaces: LIVE }, 10);
    assert.deepEqual(states(s), { 'worker-1': 'Dead', 'worker-2': 'Dead' });
  });

  it('turns a VM off when its pod is gone, or finished', () => {
    const s = new HypervisorState();
    s.observe({ pods: [pod('worker-1'), pod('worker-2')], liveNamespaces: LIVE }, 0);
    s.observe({ pods: [pod('worker-2', { finished: true, running: false })], liveNamespaces: LIVE }, 10);
    assert.deepEqual(states(s), { 'worker-1': 'Off', 'worker-2': 'Off' });
  });

  it('takes a pod of the same name but a new uid for a new VM', () => {
    const s = new HypervisorState();
    s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 0);
    s.observe({ pods: [pod('worker-1', { uid: 'second' })], liveNamespaces: LIVE }, 10);
    assert.equal(s.vm('uid-worker-1')?.state, 'Off');
    assert.equal(s.vm('second')?.state, 'Booting');
  });

  it('knows a cluster by its first pod, and its Secret by the pod naming one', () => {
    const s = new HypervisorState();
    const secret = { namespace: 'default', name: 'c1-kubeconfig' };
    s.observe(
      { pods: [pod('worker-1'), pod('master-0', { kubeconfigSecret: secret })], liveNamespaces: LIVE },
      0,
    );
    assert.deepEqual(s.cluster('c1'), {
      cluster: 'c1',
      namespace: 'c1',
      state: 'Pending',
      created: false,
      secretWritten: false,
      kubeconfigSecret: secret,
    });
    s.controlPlaneRunning('c1', 'https://127.0.0.1:1');
    s.kubeconfigWritten('c1');
    const moved = { namespace: 'default', name: 'other' };
    s.observe({ pods: [pod('master-0', { kubeconfigSecret: moved })], liveNamespaces: LIVE }, 1);
    assert.equal(s.cluster('c1')?.secretWritten, false, 'a Secret named anew is written anew');
  });

  it('marks a cluster for removal when its namespace is gone or going, ignoring its pods there', () => {
    const s = new HypervisorState();
    s.observe({ pods: [pod('master-0')], liveNamespaces: LIVE }, 0);
    s.observe({ pods: [pod('master-0')], liveNamespaces: new Set(['default']) }, 10);
    assert.equal(s.cluster('c1')?.state, 'Removing');
    assert.equal(s.vm('uid-master-0')?.state, 'Off');
    s.clusterRemoved('c1');
    assert.deepEqual([s.clusterList(), s.vmList()], [[], []]);
  });

  it('counts a start that failed: back to where it was, with a retry time', () => {
    const s = new HypervisorState();
    s.observe({ pods: [pod('master-0')], liveNamespaces: LIVE }, 0);
    s.controlPlaneStarting('c1');
    s.controlPlaneFailed('c1', 5000);
    assert.equal(s.cluster('c1')?.state, 'Pending');
    assert.equal(s.cluster('c1')?.retryAt, 5000);
    s.controlPlaneRunning('c1', 'https://127.0.0.1:1');
    assert.equal(s.cluster('c1')?.retryAt, undefined);
    assert.equal(s.cluster('c1')?.created, true);
  });

  it('keeps a VM dead that died while its Node was being made, with its Node made', () => {
    const s = new HypervisorState();
    s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 0);
    s.setFaults({ die: ['worker-1'] });
    s.vmBooted('uid-worker-1');
    assert.equal(s.vm('uid-worker-1')?.state, 'Dead');
    assert.equal(s.vm('uid-worker-1')?.node, 'made');
  });

  it('restores after a restart: control planes that ran are Stopped, Secrets written again', () => {
    const s = new HypervisorState({ bootDelayMs: 500 });
    s.observe(
      {
        pods: [pod('master-0', { kubeconfigSecret: { namespace: 'default', name: 'k' } })],
        liveNamespaces: LIVE,
      },
      0,
    );
    s.controlPlaneRunning('c1', 'https://127.0.0.1:1');
    s.kubeconfigWritten('c1');
    s.setFaults({ die: ['x'] });
    const back = HypervisorState.restore(JSON.parse(JSON.stringify(s.snapshot())));
    assert.equal(back.cluster('c1')?.state, 'Stopped');
    assert.equal(back.cluster('c1')?.secretWritten, false);
    assert.equal(back.cluster('c1')?.server, undefined);
    assert.deepEqual(back.getFaults().die, ['x']);
    assert.equal(back.getSettings().bootDelayMs, 500);
    assert.deepEqual(back.vmList(), s.vmList());
  });

  it('refuses faults and settings it does not know, or bad values', () => {
    const s = new HypervisorState();
    assert.throws(() => s.setFaults({ neverJoin: ['a'] }), /unknown faults "neverJoin"/);
    assert.throws(() => s.setFaults({ die: 'worker-1' }), /die must be a list of pod names/);
    assert.throws(() => s.setFaults({ slowBoot: { a: -1 } }), /slowBoot.a must be a whole number/);
    assert.throws(() => s.setFaults({ failNextBoots: 1.5 }), /failNextBoots/);
    assert.throws(() => s.setSettings({ bootDelay: 1 }), /unknown settings: bootDelay/);
    assert.throws(() => s.setSettings({ bootDelayMs: '2s' }), /bootDelayMs/);
    assert.deepEqual(s.getFaults(), { neverBoot: [], die: [], slowBoot: {}, failNextBoots: 0 });
  });

  it('tells its snapshot writer of every change, and only of changes', () => {
    const s = new HypervisorState();
    let changes = 0;
    s.onChange(() => changes++);
    assert.equal(s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 0), true);
    assert.equal(s.observe({ pods: [pod('worker-1')], liveNamespaces: LIVE }, 1), false);
    assert.equal(changes, 1);
  });

  it('keeps only the last VMs of a cluster that are off with nothing left to do', () => {
    const s = new HypervisorState();
    const n = KEPT_OFF_VMS + 5;
    const pods = Array.from({ length: n }, (_, i) => pod(`worker-${i}`));
    s.observe({ pods, liveNamespaces: LIVE }, 0);
    s.vmBooted('uid-worker-0'); // its Node still to be powered off: kept whatever its age
    s.observe({ pods: [], liveNamespaces: LIVE }, 1);
    const left = s.vmList().map((v) => v.name);
    assert.equal(left.length, KEPT_OFF_VMS + 1);
    assert.ok(left.includes('worker-0'));
    assert.ok(left.includes(`worker-${n - 1}`));
    assert.ok(!left.includes('worker-1'));
  });
});
