// The simulated hypervisor of a local cluster against real control planes:
// plain pods carrying the protocol's labels and annotations (as the KVM
// operator's Deployments will make them) become VMs; the first master brings
// up the workload cluster's own control plane, whose kubeconfig lands in the
// Secret the pod names; each VM is a Node of that cluster; a pod gone, or a VM
// that dies, leaves its Node NotReady for good; down + up brings the workload
// cluster back and catches up; the namespace gone removes everything.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Node, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  KUBECONFIG_KEY,
  VM_CLUSTER_LABEL,
  VM_ROLE_LABEL,
  VmAnnotations,
  type VmRole,
} from '../../src/api/vm-image.ts';
import { parsePools } from '../../src/cluster/fleet.ts';
import { simulatedHypervisor } from '../../src/cluster/infra/hypervisor/addon.ts';
import { hypervisorRequest } from '../../src/cluster/infra/hypervisor/api.ts';
import { hypervisorCommand } from '../../src/cluster/infra/hypervisor/cli.ts';
import { consolePaths, type Vm } from '../../src/cluster/infra/hypervisor/protocol.ts';
import { endpointConfigMap } from '../../src/cluster/infra/kit/discovery.ts';
import { infraDir, LocalClusters } from '../../src/cluster/local-cluster.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { KubeConfig } from '../../src/runtime/kubeconfig.ts';
import { ConfigMaps, type K8sObject, Namespaces, Nodes, Pods, Secrets } from '../../src/runtime/resources.ts';
import { eventually } from '../harness/cluster.ts';
import { type CommandRun, runCommand } from '../harness/command-io.ts';

const NAME = 'nwtest-hv';
const ID = 'hv-a';
const SECRET = { namespace: 'default', name: `${ID}-kubeconfig` };
const OS = 'Flatcar Container Linux 4230.2.0';

function hypervisor(...args: string[]): Promise<CommandRun> {
  return runCommand(hypervisorCommand, [...args, '--cluster', NAME]);
}

function vmPod(name: string, role: VmRole, version: string): V1Pod & K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: ID,
      labels: { [VM_CLUSTER_LABEL]: ID, [VM_ROLE_LABEL]: role },
      annotations: {
        [VmAnnotations.kubernetesVersion]: version,
        [VmAnnotations.osVersion]: OS,
        [VmAnnotations.cpus]: role === 'master' ? '4' : '2',
        [VmAnnotations.memory]: role === 'master' ? '8Gi' : '6Gi',
        [VmAnnotations.nodeLabels]: JSON.stringify({ 'release.nodewarden.dev/version': '20.1.0' }),
        ...(role === 'master'
          ? { [VmAnnotations.kubeconfigSecret]: `${SECRET.namespace}/${SECRET.name}` }
          : {}),
      },
    },
    spec: { containers: [{ name: 'k8s-kvm', image: 'example.invalid/k8s-kvm:0.6.2' }] },
  };
}

const readyOf = (n: V1Node | undefined) => n?.status?.conditions?.find((c) => c.type === 'Ready')?.status;

describe('the simulated hypervisor of a local cluster', () => {
  let clusters: LocalClusters;
  let mc: KubeClient;
  let wc: KubeClient | undefined;
  let endpoint: string;
  const dir = () => infraDir(NAME, 'hypervisor');
  const workloadDir = () => join(dir(), 'workloads', 'clusters', ID);
  const vms = () => hypervisorRequest<Vm[]>(endpoint, 'GET', consolePaths.vms);
  const node = (name: string) => wc!.get<V1Node>(Nodes, name).catch(() => undefined);

  before(async () => {
    clusters = await LocalClusters.open({ quiet: true, infrastructure: [simulatedHypervisor] });
    const info = await clusters.up({
      name: NAME,
      pools: parsePools('host=3'),
      infraFlags: { 'hypervisor-boot-delay': '1s' },
    });
    assert.ok(info.infrastructure.hypervisor?.endpoint, 'cluster status shows the hypervisor');
    endpoint = info.infrastructure.hypervisor.endpoint;
    mc = KubeClient.fromKubeConfig(clusters.kubeConfig(NAME));
  });

  after(async () => {
    wc?.close();
    mc?.close();
    // NODEWARDEN_TEST_KEEP_CLUSTER=1 keeps it (and the hypervisor's log) for a look.
    if (process.env.NODEWARDEN_TEST_KEEP_CLUSTER !== '1') await clusters?.delete(NAME);
  });

  it('publishes its console in kube-system, with the boot delay cluster up gave', async () => {
    const cm = endpointConfigMap('hypervisor');
    const published = await mc.get<{ data?: Record<string, string> }>(ConfigMaps, cm.name, cm.namespace);
    assert.equal(published.data?.endpoint, endpoint);
    const settings = await hypervisorRequest<{ bootDelayMs: number }>(endpoint, 'GET', consolePaths.settings);
    assert.equal(settings.bootDelayMs, 1000);
  });

  it('boots a master and two workers into a workload cluster of its own, reachable by the Secret', async () => {
    await mc.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ID } });
    const started = Date.now();
    for (const [name, role] of [
      ['master-0', 'master'],
      ['worker-1', 'worker'],
      ['worker-2', 'worker'],
    ] as const)
      await mc.create(Pods, vmPod(name, role, 'v1.37.1'));
    const secret = await eventually(
      'the kubeconfig Secret',
      () => mc.get<V1Secret>(Secrets, SECRET.name, SECRET.namespace).catch(() => undefined),
      90_000,
      500,
    );
    process.stderr.write(`[hypervisor] kubeconfig Secret after ${(Date.now() - started) / 1000}s\n`);
    const kc = new KubeConfig();
    kc.loadFromString(Buffer.from(secret.data?.[KUBECONFIG_KEY] ?? '', 'base64').toString());
    assert.match(kc.getCurrentCluster()?.server ?? '', /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(kc.getCurrentCluster()?.caData, 'the kubeconfig carries its CA inline');
    wc = KubeClient.fromKubeConfig(kc);
    const nodes = await eventually(
      'three Ready Nodes in the workload cluster',
      async () => {
        const items = (await wc!.list<V1Node>(Nodes)).items;
        return items.length === 3 && items.every((n) => readyOf(n) === 'True') ? items : undefined;
      },
      60_000,
      500,
    );
    process.stderr.write(`[hypervisor] 3 Ready Nodes after ${(Date.now() - started) / 1000}s\n`);
    const byName = new Map(nodes.map((n) => [n.metadata?.name, n]));
    assert.deepEqual([...byName.keys()].sort(), ['master-0', 'worker-1', 'worker-2']);
    for (const n of nodes) {
      assert.equal(n.status?.nodeInfo?.kubeletVersion, 'v1.37.1');
      assert.equal(n.status?.nodeInfo?.osImage, OS);
      assert.equal(n.metadata?.labels?.['release.nodewarden.dev/version'], '20.1.0');
    }
    const master = byName.get('master-0');
    assert.equal(master?.status?.capacity?.cpu, '4');
    assert.equal(master?.status?.capacity?.memory, '8Gi');
    assert.equal(master?.metadata?.labels?.['node-role.kubernetes.io/control-plane'], '');
    assert.equal(
      byName.get('worker-1')?.metadata?.labels?.['node-role.kubernetes.io/control-plane'],
      undefined,
    );
    const console = await vms();
    assert.deepEqual(console.map((v) => `${v.name}=${v.state}`).sort(), [
      'master-0=Running',
      'worker-1=Running',
      'worker-2=Running',
    ]);
  });

  it('lists the VMs and clusters on its console command, and in cluster status', async () => {
    const listed = await hypervisor('vms', '-o', 'json');
    assert.equal(listed.code, 0, listed.err);
    assert.equal((JSON.parse(listed.out) as Vm[]).length, 3);
    const table = await hypervisor('clusters');
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, new RegExp(`${ID}\\s+${ID}\\s+Running\\s+3/3`));
    const status = await clusters.status(NAME);
    assert.equal(status.infrastructure.hypervisor?.summary, '1 workload cluster, 3 VMs, 3 running');
  });

  it('turns the Node of a deleted pod NotReady (Ready Unknown), and it stays so', async () => {
    await mc.delete(Pods, 'worker-2', ID, { gracePeriodSeconds: 0 });
    await eventually(
      'worker-2 Ready Unknown',
      async () => ((await readyOf(await node('worker-2'))) === 'Unknown' ? true : undefined),
      30_000,
      300,
    );
    const n = await node('worker-2');
    assert.equal(
      n?.metadata?.annotations?.['kwok.x-k8s.io/node'],
      undefined,
      'kwok no longer plays its kubelet',
    );
    // kwok must not take it back, nor anything flip it to Ready: watched for 12 s.
    for (let i = 0; i < 12; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      assert.notEqual(readyOf(await node('worker-2')), 'True', `Ready again after ${i + 1}s`);
    }
    assert.equal(readyOf(await node('worker-1')), 'True', 'the other VMs run on');
  });

  it('lets a VM die under the die fault: its Node goes NotReady while the pod stays', async () => {
    const set = await hypervisor('faults', '--set', JSON.stringify({ die: ['worker-1'] }), '-o', 'json');
    assert.equal(set.code, 0, set.err);
    await eventually(
      'worker-1 Ready Unknown',
      async () => (readyOf(await node('worker-1')) === 'Unknown' ? true : undefined),
      30_000,
      300,
    );
    assert.ok(await mc.get(Pods, 'worker-1', ID), 'the pod stays');
    assert.equal((await vms()).find((v) => v.name === 'worker-1')?.state, 'Dead');
    await hypervisor('faults', '--clear');
  });

  it('never boots a VM the neverBoot fault names, and boots the others', async () => {
    await hypervisorRequest(endpoint, 'PUT', consolePaths.faults, { neverBoot: ['worker-3'] });
    await mc.create(Pods, vmPod('worker-3', 'worker', 'v1.37.1'));
    await mc.create(Pods, vmPod('worker-4', 'worker', 'v1.37.2'));
    await eventually(
      'worker-4 Ready',
      async () => (readyOf(await node('worker-4')) === 'True' ? true : undefined),
      30_000,
      300,
    );
    assert.equal((await node('worker-4'))?.status?.nodeInfo?.kubeletVersion, 'v1.37.2');
    await new Promise((r) => setTimeout(r, 2000)); // well past worker-3's boot time too
    assert.equal(await node('worker-3'), undefined, 'no Node for a VM that never boots');
    assert.equal((await vms()).find((v) => v.name === 'worker-3')?.state, 'Booting');
    await hypervisorRequest(endpoint, 'DELETE', consolePaths.faults);
  });

  it('stops the workload control plane with it; started again, brings it back caught up on pods gone and new', async () => {
    const ctx = {
      cluster: NAME,
      kubeconfig: clusters.kubeconfigPath(NAME),
      dir: dir(),
      pools: [],
      kubernetesVersion: 'v1.37.1',
    };
    const apiserverPid = Number(readFileSync(join(workloadDir(), 'pids', 'kube-apiserver.pid'), 'utf8'));
    await simulatedHypervisor.down(ctx);
    // kwokctl signals the components and returns; they take a moment to exit.
    await eventually(
      'the workload API server stopped with the hypervisor',
      async () => (alive(apiserverPid) ? undefined : true),
      15_000,
      200,
    );
    // While it is down: one VM pod goes, another comes.
    await mc.delete(Pods, 'worker-4', ID, { gracePeriodSeconds: 0 });
    await mc.create(Pods, vmPod('worker-5', 'worker', 'v1.37.1'));
    // What cluster down + up does to the add-on; the management cluster itself stays up, so
    // this suite is not exposed to its restart (a port taken meanwhile on a busy machine).
    const restarted = Date.now();
    await simulatedHypervisor.up(ctx);
    endpoint = (await simulatedHypervisor.endpoint?.(ctx)) ?? '';
    await eventually(
      'worker-5 Ready',
      async () => (readyOf(await node('worker-5')) === 'True' ? true : undefined),
      60_000,
      500,
    ).catch((err: Error) => {
      // A restart on a busy machine can fail for reasons of its own (a port taken meanwhile): say which.
      throw new Error(`${err.message}\n${logTails()}`);
    });
    process.stderr.write(
      `[hypervisor] the workload cluster back with a new Node, in ${(Date.now() - restarted) / 1000}s\n`,
    );
    await eventually(
      'worker-4 Ready Unknown',
      async () => (readyOf(await node('worker-4')) === 'Unknown' ? true : undefined),
      30_000,
      500,
    );
    // The running VMs' Nodes are the new kwok's (handed over), so they stay Ready.
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(readyOf(await node('master-0')), 'True');
    assert.equal(readyOf(await node('worker-2')), 'Unknown', 'a Node powered off before stays off');
  });

  it('stays within its memory budget: 80 MiB from a build, plus what type stripping costs from src/', () => {
    const pid = readFileSync(join(dir(), 'hypervisor.pid'), 'utf8').trim();
    const rssMiB = Number(execFileSync('ps', ['-o', 'rss=', '-p', pid]).toString().trim()) / 1024;
    const fromBuild = readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('/dist/');
    process.stderr.write(
      `[hypervisor] daemon RSS ${rssMiB.toFixed(0)} MiB (from ${fromBuild ? 'dist' : 'src'})\n`,
    );
    // kit/process.ts: a daemon run from src/ pays ~35 MiB for Node's type stripping.
    assert.ok(rssMiB <= (fromBuild ? 80 : 120), `daemon RSS ${rssMiB.toFixed(0)} MiB`);
  });

  it('removes the workload cluster when its namespace is deleted: control plane, state, Secret', async () => {
    assert.ok(existsSync(workloadDir()));
    await mc.delete(Namespaces, ID);
    await eventually(
      'the Secret gone',
      async () =>
        (await mc.get(Secrets, SECRET.name, SECRET.namespace).catch(() => undefined)) ? undefined : true,
      60_000,
      500,
    );
    assert.equal(existsSync(workloadDir()), false, 'the control plane folder is gone');
    const clustersLeft = await hypervisorRequest<unknown[]>(endpoint, 'GET', consolePaths.clusters);
    assert.deepEqual(clustersLeft, []);
  });
});

/** The last lines of the hypervisor's log and of the workload cluster's kwok, for a failure's message. */
function logTails(): string {
  const dir = infraDir(NAME, 'hypervisor');
  const tail = (path: string) =>
    existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n').slice(-6).join('\n') : '(none)';
  return [
    `hypervisor log:\n${tail(join(dir, 'hypervisor.log'))}`,
    `workload kwok log:\n${tail(join(dir, 'workloads', 'clusters', ID, 'logs', 'kwok-controller.log'))}`,
  ].join('\n');
}

/** Whether the process runs: not gone, and no zombie (a container's init may never reap kwokctl's orphans). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}
