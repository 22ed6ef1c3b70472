import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeHypervisor } from '../../../src/cluster/infra/hypervisor/addon.ts';
import { hypervisorRequest } from '../../../src/cluster/infra/hypervisor/api.ts';
import { describeFaults } from '../../../src/cluster/infra/hypervisor/cli.ts';
import { ConsoleServer } from '../../../src/cluster/infra/hypervisor/console-api.ts';
import {
  consolePaths,
  type HypervisorFaults,
  type Vm,
  type WorkloadControlPlane,
} from '../../../src/cluster/infra/hypervisor/protocol.ts';
import { HypervisorState } from '../../../src/cluster/infra/hypervisor/state.ts';
import type { ObservedPod } from '../../../src/cluster/infra/hypervisor/vm-pods.ts';

function pod(cluster: string, name: string): ObservedPod {
  return {
    namespace: cluster,
    name,
    uid: `${cluster}-${name}`,
    cluster,
    role: name.startsWith('master') ? 'master' : 'worker',
    host: 'host-0',
    running: true,
    finished: false,
    spec: { kubernetesVersion: 'v1.37.1', osVersion: 'os', cpus: '2', memory: '4Gi', nodeLabels: {} },
    problems: [],
  };
}

describe('the hypervisor console', () => {
  const state = new HypervisorState({ bootDelayMs: 1000 });
  let changed = 0;
  const server = new ConsoleServer(state, () => changed++);
  let url: string;

  before(async () => {
    state.observe(
      {
        pods: [pod('a', 'master-0'), pod('a', 'worker-1'), pod('b', 'master-0')],
        liveNamespaces: new Set(['a', 'b']),
      },
      0,
    );
    state.vmBooted('a-master-0');
    url = await server.start();
  });
  after(() => server.close());

  it('lists the VMs, all or one cluster’s', async () => {
    const all = await hypervisorRequest<Vm[]>(url, 'GET', consolePaths.vms);
    assert.equal(all.length, 3);
    const a = await hypervisorRequest<Vm[]>(url, 'GET', `${consolePaths.vms}?cluster=a`);
    assert.deepEqual(
      a.map((v) => `${v.name}=${v.state}`),
      ['master-0=Running', 'worker-1=Booting'],
    );
    assert.deepEqual(Object.keys(a[0] ?? {}).sort(), [
      'bootsAt',
      'cluster',
      'host',
      'name',
      'namespace',
      'role',
      'state',
    ]);
  });

  it('lists the workload clusters', async () => {
    const clusters = await hypervisorRequest<WorkloadControlPlane[]>(url, 'GET', consolePaths.clusters);
    assert.deepEqual(clusters, [
      { cluster: 'a', state: 'Pending', namespace: 'a' },
      { cluster: 'b', state: 'Pending', namespace: 'b' },
    ]);
  });

  it('merges faults, clears them, and asks the loop for a pass each time', async () => {
    const before = changed;
    const f = await hypervisorRequest<HypervisorFaults>(url, 'PUT', consolePaths.faults, {
      die: ['worker-1'],
    });
    assert.deepEqual(f.die, ['worker-1']);
    assert.equal(state.vm('a-worker-1')?.state, 'Dead');
    const cleared = await hypervisorRequest<HypervisorFaults>(url, 'DELETE', consolePaths.faults);
    assert.deepEqual(cleared, { neverBoot: [], die: [], slowBoot: {}, failNextBoots: 0 });
    assert.equal(changed, before + 2);
  });

  it('answers a bad fault or setting with 400 and what is wrong', async () => {
    await assert.rejects(
      hypervisorRequest(url, 'PUT', consolePaths.faults, { nope: 1 }),
      /400 unknown faults "nope"/,
    );
    await assert.rejects(
      hypervisorRequest(url, 'PUT', consolePaths.settings, { bootDelayMs: -5 }),
      /400 bootDelayMs must be a whole number/,
    );
  });

  it('changes the boot delay', async () => {
    const s = await hypervisorRequest<{ bootDelayMs: number }>(url, 'PUT', consolePaths.settings, {
      bootDelayMs: 250,
    });
    assert.equal(s.bootDelayMs, 250);
    assert.equal(state.getSettings().bootDelayMs, 250);
  });
});

describe('the hypervisor in a line', () => {
  it('counts workload clusters and the VMs that are not off', () => {
    const vm = (state: Vm['state']) => ({ state }) as Vm;
    const cp = { cluster: 'a', state: 'Running' } as WorkloadControlPlane;
    assert.equal(
      describeHypervisor(
        [cp, { ...cp, cluster: 'b' }],
        [vm('Running'), vm('Booting'), vm('Off'), vm('Dead')],
      ),
      '2 workload clusters, 3 VMs, 1 running',
    );
    assert.equal(describeHypervisor([cp], [vm('Running')]), '1 workload cluster, 1 VM, 1 running');
  });

  it('says the faults in force', () => {
    assert.equal(describeFaults({ neverBoot: [], die: [], slowBoot: {}, failNextBoots: 0 }), 'none');
    assert.equal(
      describeFaults({ neverBoot: ['w1'], die: ['w2', 'w3'], slowBoot: { m0: 1500 }, failNextBoots: 2 }),
      'never boot: w1; dead: w2, w3; slow boots: m0=1500ms; next 2 VMs never boot',
    );
  });
});
