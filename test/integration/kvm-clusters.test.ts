// KVMCluster against real control planes: the run's cluster (management)
// with its simulated hypervisor, and the workload cluster's own control plane
// that the first master VM brings up. One cluster walks through its life: 1
// master + 3 workers Ready through its own kubeconfig; workers scaled 3 → 5 →
// 2 with drains while a PDB inside the workload cluster is sampled throughout;
// a release upgrade of every node in order, masters first, one at a time,
// with the operator killed mid-upgrade; a VM that dies replaced only after
// notReadyFor; deletion leaving nothing in either cluster.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KVM_ANNOTATIONS, type KVMCluster, type KVMClusterSpecType, KVMClusters } from '../../src/api/kvm.ts';
import { KUBECONFIG_KEY } from '../../src/api/vm-image.ts';
import { hypervisorRequest } from '../../src/cluster/infra/hypervisor/api.ts';
import {
  consolePaths,
  HYPERVISOR_SIMULATOR,
  type WorkloadControlPlane,
} from '../../src/cluster/infra/hypervisor/protocol.ts';
import { findEndpoint } from '../../src/cluster/infra/kit/discovery.ts';
import { kvmCommand } from '../../src/kvm/cli.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { KubeConfig } from '../../src/runtime/kubeconfig.ts';
import {
  ConfigMaps,
  Deployments,
  Events,
  type K8sObject,
  Namespaces,
  Nodes,
  PodDisruptionBudgets,
  Pods,
  Secrets,
  Services,
} from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig, testKubeconfigPath, useNamespace } from '../harness/cluster.ts';
import { runCommand } from '../harness/command-io.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';

const KC = KVMClusters.type;
const mc = KubeClient.fromKubeConfig(testKubeConfig());
const ID = `kvm${Date.now().toString(36)}`;
const RELEASE = { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' };

type NodeObj = K8sObject & {
  spec?: { unschedulable?: boolean };
  status?: { conditions?: Array<{ type: string; status: string }>; nodeInfo?: { kubeletVersion?: string } };
};
type PodObj = K8sObject & { spec?: { nodeName?: string }; status?: { phase?: string } };
type PdbObj = K8sObject & {
  status?: { currentHealthy?: number; desiredHealthy?: number; observedGeneration?: number };
};

const workers = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `w${i + 1}`, cpus: 1, memory: '1G', dockerVolumeSizeGB: 10 }));

function spec(nWorkers: number, release = RELEASE): KVMClusterSpecType {
  return {
    masters: [{ id: 'm1', cpus: 1, memory: '1G' }],
    workers: workers(nWorkers),
    release,
    network: { vni: 4000 + (Date.now() % 1000) },
    api: { domain: `api.${ID}.example.com` },
    unhealthyNodes: { terminate: true, notReadyFor: '20s', maxFraction: '10%', pauseBetween: '1s' },
    drain: { timeout: '90s' },
  };
}

// The maintenance controller runs beside them as in a user's operator: its informer of every pod
// holds the VM pods too, and the drain once read a deleting VM pod from it while it was a moment
// behind the VM pods' own, took it for one not being deleted, and never drained (issue 26's stuck
// scale-down; with the KVM controllers alone that read could not go wrong).
const OPERATOR_ARGS = [
  '--controllers',
  'kvmcluster,kvm-vm-drain,nodemaintenance',
  '--webhook-bind-address',
  '0',
];

const ready = (n: NodeObj) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

describe('KVMCluster: a workload cluster in VMs, against real control planes', () => {
  const ns = useNamespace('kvm');
  let op: OperatorProcess;
  let wc: KubeClient | undefined;
  let hypervisor: string;

  const cluster = () => mc.get<KVMCluster & K8sObject>(KC, ID, ns());
  const patchSpec = (s: Partial<KVMClusterSpecType>) =>
    mc.patch(KC, ID, ns(), { spec: s }, { type: 'merge' });
  const vmPods = async () =>
    (await mc.list<PodObj>(Pods, { namespace: ID, labelSelector: `hypervisor.nodewarden.dev/cluster=${ID}` }))
      .items;
  const workload = async (): Promise<KubeClient> => {
    if (wc) return wc;
    const secret = await eventually(
      'the workload kubeconfig Secret',
      () =>
        mc.get<{ data?: Record<string, string> }>(Secrets, `${ID}-kubeconfig`, ns()).catch(() => undefined),
      120_000,
      500,
    );
    const kc = new KubeConfig();
    kc.loadFromString(Buffer.from(secret.data?.[KUBECONFIG_KEY] ?? '', 'base64').toString('utf8'));
    wc = KubeClient.fromKubeConfig(kc, { userAgent: 'kvm-test' });
    return wc;
  };
  const wNodes = async () => (await (await workload()).list<NodeObj>(Nodes)).items;
  /** Every desired node a Ready workload node named as a live VM pod, on `version`. */
  const converged = async (n: number, version = RELEASE.kubernetesVersion) => {
    const kc = await cluster();
    const pods = (await vmPods()).filter((p) => !p.metadata?.deletionTimestamp);
    const nodes = await wNodes().catch(() => []);
    const names = new Set(pods.map((p) => p.metadata?.name));
    const good = nodes.filter(
      (x) => names.has(x.metadata?.name) && ready(x) && x.status?.nodeInfo?.kubeletVersion === version,
    );
    const updated = kc.status?.conditions?.find((c) => c.type === 'Updated')?.status === 'True';
    return pods.length === n && good.length === n && updated ? { kc, pods, nodes } : undefined;
  };

  before(async () => {
    const published = await findEndpoint(mc, HYPERVISOR_SIMULATOR);
    assert.ok(published, 'the test cluster names no simulated hypervisor');
    hypervisor = published.endpoint;
    await hypervisorRequest(hypervisor, 'PUT', consolePaths.settings, { bootDelayMs: 500 });
    op = startOperator(OPERATOR_ARGS);
  });

  after(async () => {
    await op?.stop();
    await hypervisorRequest(hypervisor, 'DELETE', consolePaths.faults).catch(() => {});
    wc?.close();
  });

  it('creates 1 master + 3 workers, each a Ready node of the workload cluster reached through its own kubeconfig', async () => {
    await mc.create(KC, KVMClusters.make({ name: ID, namespace: ns() }, spec(3)) as never);
    const { kc, pods, nodes } = await eventually('4 Ready workload nodes', () => converged(4), 180_000, 1000);
    assert.equal(kc.status?.conditions?.find((c) => c.type === 'Created')?.status, 'True');
    assert.deepEqual(kc.status?.nodeIndexes, { m1: 1, w1: 2, w2: 3, w3: 4 });
    assert.equal(kc.status?.observedGeneration, kc.metadata.generation);
    assert.deepEqual(
      nodes.map((n) => n.metadata?.name).sort(),
      pods.map((p) => p.metadata?.name).sort(),
      'each VM pod is the workload node of the same name',
    );
    const deps = (await mc.list(Deployments, { namespace: ID })).items.map((d) => d.metadata?.name).sort();
    assert.deepEqual(deps, ['master-m1', 'worker-w1', 'worker-w2', 'worker-w3']);
    const cm = await mc.get<{ data?: Record<string, string> }>(ConfigMaps, 'master-m1', ID);
    assert.ok(cm.data?.user_data, 'the master has its Ignition config');
    const master = await mc.get<{ spec?: { selector?: Record<string, string> } }>(Services, 'master', ID);
    assert.deepEqual(master.spec?.selector, {
      'hypervisor.nodewarden.dev/cluster': ID,
      'hypervisor.nodewarden.dev/role': 'master',
    });
    const hosts = new Set(pods.map((p) => p.spec?.nodeName));
    assert.equal(hosts.size, 4, 'one VM of a cluster per management node');
  });

  it('nodewarden kvm list and status show the cluster, its nodes and their versions', async () => {
    const run = async (...args: string[]) => {
      const r = await runCommand(kvmCommand, [...args, '--kubeconfig', testKubeconfigPath()]);
      return { code: r.code, text: r.out + r.err };
    };
    const list = await run('list');
    assert.equal(list.code, 0, list.text);
    assert.match(list.text, new RegExp(`${ns()}\\s+${ID}\\s+20\\.1\\.0\\s+True\\s+False\\s+4/4`));
    const status = await run('status', ID);
    assert.equal(status.code, 0, status.text);
    for (const id of ['m1', 'w1', 'w2', 'w3'])
      assert.match(
        status.text,
        new RegExp(`\\b${id}\\s+(master|worker)-${id}-\\S+\\s+yes\\s+v1\\.37\\.1\\s+20\\.1\\.0`),
      );
    assert.match(status.text, /Releases:\n {2}20\.1\.0 reached/);
    const missing = await run('status', 'no-such-cluster');
    assert.notEqual(missing.code, 0);
  });

  it('scales workers 3 → 5 → 2, draining removed nodes while the workload PDB holds', async () => {
    const w = await workload();
    await w.create(Deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'app', namespace: 'default' },
      spec: {
        replicas: 4,
        selector: { matchLabels: { app: 'app' } },
        template: {
          metadata: { labels: { app: 'app' } },
          spec: {
            containers: [{ name: 'app', image: 'example.invalid/app:1' }],
            tolerations: [{ key: 'kwok.x-k8s.io/node', operator: 'Exists', effect: 'NoSchedule' }],
          },
        },
      },
    } as K8sObject);
    await w.create(PodDisruptionBudgets, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'app', namespace: 'default' },
      spec: { minAvailable: 3, selector: { matchLabels: { app: 'app' } } },
    } as K8sObject);
    await eventually(
      'the PDB allows one disruption',
      async () => {
        const pdb = await w.get<PdbObj>(PodDisruptionBudgets, 'app', 'default');
        return (pdb.status?.currentHealthy ?? 0) >= 4 ? true : undefined;
      },
      60_000,
    );

    await patchSpec({ workers: workers(5) });
    await eventually('6 Ready workload nodes', () => converged(6), 120_000, 1000);

    // Sample the PDB at ~5/s from outside the operator while 3 workers go.
    let samples = 0;
    let violations = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const pdb = await w.get<PdbObj>(PodDisruptionBudgets, 'app', 'default').catch(() => undefined);
        if (pdb?.status?.desiredHealthy !== undefined) {
          samples++;
          if ((pdb.status.currentHealthy ?? 0) < pdb.status.desiredHealthy) violations++;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    let nodes: NodeObj[];
    try {
      await patchSpec({ workers: workers(2) });
      ({ nodes } = await eventually(
        '3 Ready workload nodes, the removed ones gone',
        async () => {
          const c = await converged(3);
          return c && c.nodes.length === 3 ? c : undefined;
        },
        180_000,
        1000,
      ));
    } finally {
      sampling = false;
      await sampler;
    }
    assert.ok(samples >= 3, `the PDB was sampled throughout (${samples})`);
    assert.equal(violations, 0, 'no sample had fewer healthy pods than the PDB allows');
    const appPods = (await w.list<PodObj>(Pods, { namespace: 'default', labelSelector: 'app=app' })).items;
    const left = new Set(nodes.map((n) => n.metadata?.name));
    assert.ok(
      appPods.every((p) => left.has(p.spec?.nodeName)),
      'every app pod runs on a node that stayed',
    );
    const kc = await cluster();
    assert.deepEqual(kc.status?.nodeIndexes, { m1: 1, w1: 2, w2: 3 });
    const drained = await eventually('a NodeDrained event per removed worker', async () => {
      const events = (
        await mc.list<{ reason?: string; note?: string; regarding?: { name?: string } }>(Events, {
          namespace: ns(),
        })
      ).items;
      const d = events.filter((e) => e.reason === 'NodeDrained' && e.regarding?.name === ID);
      return d.length >= 3 ? d : undefined;
    });
    for (const id of ['w3', 'w4', 'w5']) {
      assert.ok(
        drained.some((e) => e.note?.startsWith(`worker-${id}-`)),
        `worker ${id} was drained before its VM went`,
      );
    }
  });

  it('upgrades every node in order, masters first, one at a time, through an operator kill', async () => {
    const next = { version: '20.2.0', kubernetesVersion: 'v1.37.2', osVersion: '4230.2.1' };
    const order: string[] = [];
    let maxUnready = 0;
    let sampling = true;
    const sampler = (async () => {
      const seen = new Set<string>();
      while (sampling) {
        const pods = await vmPods().catch(() => []);
        for (const p of pods) {
          const name = p.metadata?.name ?? '';
          if (p.metadata?.annotations?.[KVM_ANNOTATIONS.release] === next.version && !seen.has(name)) {
            seen.add(name);
            order.push(p.metadata?.labels?.['kvm.nodewarden.dev/node-id'] ?? '?');
          }
        }
        const nodes = await wNodes().catch(() => undefined);
        if (nodes) {
          const live = new Set(
            pods.filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.metadata?.name),
          );
          const readyLive = nodes.filter((n) => live.has(n.metadata?.name) && ready(n)).length;
          maxUnready = Math.max(maxUnready, 3 - readyLive);
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    let kc: KVMCluster;
    try {
      await patchSpec({ release: next });
      await eventually(
        'the master is being replaced',
        async () => (order.length > 0 ? true : undefined),
        60_000,
      );
      await op.stop('SIGKILL');
      op = startOperator(OPERATOR_ARGS);
      ({ kc } = await eventually(
        'every node on v1.37.2',
        () => converged(3, next.kubernetesVersion),
        240_000,
        1000,
      ));
    } finally {
      sampling = false;
      await sampler;
    }
    assert.deepEqual(order, ['m1', 'w1', 'w2'], 'masters first, then workers in spec order');
    assert.ok(maxUnready <= 1, `at most one node down at a time (saw ${maxUnready})`);
    assert.deepEqual(
      kc.status?.versions?.map((v) => v.release),
      ['20.1.0', '20.2.0'],
    );
  });

  it('replaces a VM that died, only after notReadyFor', async () => {
    const victim = (await vmPods()).find((p) => p.metadata?.labels?.['kvm.nodewarden.dev/node-id'] === 'w2');
    assert.ok(victim?.metadata?.name);
    const name = victim.metadata.name;
    await hypervisorRequest(hypervisor, 'PUT', consolePaths.faults, { die: [name] });
    const notReadyAt = await eventually(
      'the dead VM NotReady',
      async () => {
        const n = (await wNodes()).find((x) => x.metadata?.name === name);
        return n && !ready(n) ? Date.now() : undefined;
      },
      30_000,
    );
    const goneAt = await eventually(
      'the dead VM replaced',
      async () => {
        const pods = await vmPods();
        return pods.some((p) => p.metadata?.name === name && !p.metadata?.deletionTimestamp)
          ? undefined
          : Date.now();
      },
      90_000,
      250,
    );
    assert.ok(
      goneAt - notReadyAt >= 15_000,
      `not replaced before notReadyFor (after ${goneAt - notReadyAt} ms)`,
    );
    await eventually('3 Ready nodes again', () => converged(3, 'v1.37.2'), 120_000, 1000);
    await eventually(
      'the dead node removed from the workload cluster',
      async () => ((await wNodes()).some((n) => n.metadata?.name === name) ? undefined : true),
      60_000,
    );
  });

  it('a drain a PDB blocks ends at drain.timeout, and the VM goes anyway', async () => {
    const w = await workload();
    await w.patch(
      PodDisruptionBudgets,
      'app',
      'default',
      { spec: { minAvailable: '100%' } },
      { type: 'merge' },
    );
    await patchSpec({ drain: { timeout: '6s' } });
    // The worker that carries the most app pods goes; the PDB lets none of them leave.
    const app = (await w.list<PodObj>(Pods, { namespace: 'default', labelSelector: 'app=app' })).items;
    const workersNow = (await vmPods()).filter(
      (p) => p.metadata?.labels?.['kvm.nodewarden.dev/role'] === 'worker',
    );
    const carried = (p: PodObj) => app.filter((a) => a.spec?.nodeName === p.metadata?.name).length;
    const victim = workersNow.sort((a, b) => carried(b) - carried(a))[0];
    const victimId = victim?.metadata?.labels?.['kvm.nodewarden.dev/node-id'];
    assert.ok(victim && carried(victim) > 0, 'the worker going carries app pods the PDB protects');
    const t0 = Date.now();
    await patchSpec({ workers: workers(2).filter((x) => x.id !== victimId) });
    const timedOut = await eventually(
      'a DrainTimedOut event',
      async () => {
        const events = (
          await mc.list<{ reason?: string; note?: string; regarding?: { name?: string } }>(Events, {
            namespace: ns(),
          })
        ).items;
        return events.find(
          (e) => e.reason === 'DrainTimedOut' && e.note?.startsWith(victim?.metadata?.name ?? '?'),
        );
      },
      60_000,
    );
    assert.ok(Date.now() - t0 >= 5000, 'not before the timeout');
    assert.match(timedOut.note ?? '', /pods still on it after \d+s; its VM goes anyway/);
    await eventually('2 Ready nodes', () => converged(2, 'v1.37.2'), 120_000, 1000);
  });

  it('deletion leaves nothing in either cluster', async () => {
    await mc.delete(KC, ID, ns());
    await eventually(
      'the KVMCluster gone',
      async () => {
        try {
          await cluster();
          return undefined;
        } catch (err) {
          return isNotFound(err) ? true : undefined;
        }
      },
      180_000,
      1000,
    );
    await assert.rejects(mc.get(Namespaces, ID), (e) => isNotFound(e));
    await assert.rejects(mc.get(Secrets, `${ID}-kubeconfig`, ns()), (e) => isNotFound(e));
    const planes = await hypervisorRequest<WorkloadControlPlane[]>(hypervisor, 'GET', consolePaths.clusters);
    assert.ok(!planes.some((p) => p.cluster === ID), 'the workload control plane is gone');
    assert.equal((await vmPods()).length, 0);
  });
});
