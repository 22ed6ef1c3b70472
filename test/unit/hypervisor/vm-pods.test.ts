import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VM_CLUSTER_LABEL, VM_ROLE_LABEL, VmAnnotations } from '../../../src/api/vm-image.ts';
import { observePod, type PodLike, vmNode } from '../../../src/cluster/infra/hypervisor/vm-pods.ts';

const DEFAULTS = { kubernetesVersion: 'v1.37.1' };
/** The management cluster's real nodes: none but real-000. */
const REAL = new Set(['real-000']);

function pod(annotations: Record<string, string>, patch: Partial<PodLike> = {}): PodLike {
  return {
    metadata: {
      name: 'master-0-abc',
      namespace: 'c1',
      uid: 'u1',
      labels: { [VM_CLUSTER_LABEL]: 'c1', [VM_ROLE_LABEL]: 'master' },
      annotations,
    },
    spec: { nodeName: 'host-002' },
    status: { phase: 'Running' },
    ...patch,
  };
}

describe('reading a VM pod', () => {
  it('reads what the VM is and runs from the annotations', () => {
    const vm = observePod(
      pod({
        [VmAnnotations.kubernetesVersion]: 'v1.36.4',
        [VmAnnotations.osVersion]: 'Flatcar Container Linux 4230.2.0',
        [VmAnnotations.cpus]: '4',
        [VmAnnotations.memory]: '8Gi',
        [VmAnnotations.kubeconfigSecret]: 'default/c1-kubeconfig',
        [VmAnnotations.nodeLabels]: '{"release.nodewarden.dev/version":"20.1.0","bad":3}',
      }),
      DEFAULTS,
      REAL,
    );
    assert.deepEqual(vm, {
      namespace: 'c1',
      name: 'master-0-abc',
      uid: 'u1',
      cluster: 'c1',
      role: 'master',
      host: 'host-002',
      running: true,
      finished: false,
      spec: {
        kubernetesVersion: 'v1.36.4',
        osVersion: 'Flatcar Container Linux 4230.2.0',
        cpus: '4',
        memory: '8Gi',
        nodeLabels: { 'release.nodewarden.dev/version': '20.1.0' },
      },
      kubeconfigSecret: { namespace: 'default', name: 'c1-kubeconfig' },
      problems: [],
    });
  });

  it('uses defaults for what is missing or unreadable, and says what it could not read', () => {
    const vm = observePod(
      pod({
        [VmAnnotations.cpus]: 'four',
        [VmAnnotations.memory]: '8 GB',
        [VmAnnotations.kubeconfigSecret]: 'just-a-name',
        [VmAnnotations.nodeLabels]: '[1]',
      }),
      DEFAULTS,
      REAL,
    );
    assert.deepEqual(vm?.spec, {
      kubernetesVersion: 'v1.37.1',
      osVersion: 'nodewarden simulated VM',
      cpus: '2',
      memory: '4Gi',
      nodeLabels: {},
    });
    assert.equal(vm?.kubeconfigSecret, undefined);
    assert.equal(vm?.problems.length, 4);
  });

  const phases: [string, Partial<PodLike>, { running: boolean; finished: boolean }][] = [
    [
      'pending, not scheduled',
      { spec: {}, status: { phase: 'Pending' } },
      { running: false, finished: false },
    ],
    ['scheduled, not running', { status: { phase: 'Pending' } }, { running: false, finished: false }],
    ['running on a node', {}, { running: true, finished: false }],
    ['failed', { status: { phase: 'Failed' } }, { running: false, finished: true }],
    ['succeeded', { status: { phase: 'Succeeded' } }, { running: false, finished: true }],
  ];
  for (const [name, patch, want] of phases)
    it(`a pod ${name}`, () => {
      const vm = observePod(pod({}, patch), DEFAULTS, REAL);
      assert.deepEqual({ running: vm?.running, finished: vm?.finished }, want);
    });

  it('takes a pod without the role label for a worker, and one without the cluster label for no VM', () => {
    const p = pod({});
    delete p.metadata?.labels?.[VM_ROLE_LABEL];
    assert.equal(observePod(p, DEFAULTS, REAL)?.role, 'worker');
    delete p.metadata?.labels?.[VM_CLUSTER_LABEL];
    assert.equal(observePod(p, DEFAULTS, REAL), undefined);
  });

  // On a real node the VM image runs the VM (issue 23): the simulator must neither boot it nor write its kubeconfig.
  const hosts: [string, Partial<PodLike>, boolean][] = [
    ['not scheduled yet', { spec: {}, status: { phase: 'Pending' } }, true],
    ['on a simulated host', {}, true],
    ['on a real node', { spec: { nodeName: 'real-000' } }, false],
    ['pending on a real node', { spec: { nodeName: 'real-000' }, status: { phase: 'Pending' } }, false],
  ];
  for (const [name, patch, simulated] of hosts)
    it(`a VM pod ${name} is ${simulated ? '' : 'not '}the simulator's`, () => {
      assert.equal(observePod(pod({}, patch), DEFAULTS, REAL) !== undefined, simulated);
    });
});

describe('the Node a VM becomes', () => {
  const spec = {
    kubernetesVersion: 'v1.36.4',
    osVersion: 'Flatcar Container Linux 4230.2.0',
    cpus: '4',
    memory: '8Gi',
    nodeLabels: { 'release.nodewarden.dev/version': '20.1.0' },
  };

  it('is named as the pod, kwok-managed, with its capacity and versions', () => {
    const n = vmNode({ name: 'worker-1-xyz', role: 'worker', host: 'host-002', uid: 'u9', spec });
    assert.equal(n.metadata?.name, 'worker-1-xyz');
    assert.equal(n.metadata?.annotations?.['kwok.x-k8s.io/node'], 'fake');
    assert.equal(n.status?.capacity?.cpu, '4');
    assert.equal(n.status?.capacity?.memory, '8Gi');
    assert.equal(n.status?.nodeInfo?.kubeletVersion, 'v1.36.4');
    assert.equal(n.status?.nodeInfo?.osImage, 'Flatcar Container Linux 4230.2.0');
    assert.equal(n.status?.nodeInfo?.bootID, 'u9');
    assert.equal(n.metadata?.labels?.['release.nodewarden.dev/version'], '20.1.0');
    assert.equal(n.metadata?.labels?.['node-role.kubernetes.io/control-plane'], undefined);
    assert.equal(n.spec?.taints, undefined);
  });

  it('is a control-plane node, tainted, for a master', () => {
    const n = vmNode({ name: 'master-0-abc', role: 'master', host: 'host-000', uid: 'u1', spec });
    assert.equal(n.metadata?.labels?.['node-role.kubernetes.io/control-plane'], '');
    assert.deepEqual(n.spec?.taints, [
      { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
    ]);
  });
});
