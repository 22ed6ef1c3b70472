// Rolling upgrades through Cluster API, against the real Cluster API core
// manager (built from the Go module proxy, run out of cluster on loopback) on
// the harness cluster, self-hosted: its Cluster's kubeconfig points back at the
// same API server, so Machines' Nodes are this cluster's nodes. The
// infrastructure is ours and simulated (NodewardenMachines boot as kwok Nodes).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Node } from '@kubernetes/client-node';
import {
  CapiAnnotations,
  CapiLabels,
  type Machine,
  type MachineDeployment,
  MachineDeployments,
  type MachineSet,
  MachineSets,
  Machines,
} from '../../src/api/clusterapi.ts';
import { NodeVersions, ScalingGroups } from '../../src/api/upgrade.ts';
import {
  NEVER_BOOT_ANNOTATION,
  type NodewardenMachine,
  NodewardenMachines,
  NodewardenMachineTemplates,
} from '../../src/cluster/infra/clusterapi/api.ts';
import {
  type ClusterApiEnvironment,
  startClusterApi,
} from '../../src/cluster/infra/clusterapi/environment.ts';
import {
  createSelfHostedCluster,
  machineTemplate,
  type SelfHostedCluster,
  workerDeployment,
} from '../../src/cluster/infra/clusterapi/self-hosted.ts';
import { pinnedVersions } from '../../src/cluster/toolchain.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isReady } from '../../src/runtime/conditions.ts';
import { createLogger } from '../../src/runtime/log.ts';
import {
  Deployments,
  Events,
  type K8sObject,
  Nodes,
  PodDisruptionBudgets,
  Pods,
} from '../../src/runtime/resources.ts';
import { Upgrade } from '../../src/upgrade/names.ts';
import { eventually, testKubeConfig, testKubeconfigPath, useNamespace } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';
import { createNodeVersion, getNodeVersion, rolloutDone } from '../harness/rollout.ts';

const IMAGE_LABEL = 'nodewarden.dev/image';
const POOL_LABEL = 'nodewarden.dev/pool';
const CONTROLLERS = 'nodemaintenance,nodeversion,scalinggroup,pendingnode';

interface PodLike extends K8sObject {
  status?: { phase?: string };
  metadata: NonNullable<K8sObject['metadata']>;
}
const running = (p: PodLike) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp;

describe('Cluster API (real core controllers, simulated infrastructure)', { timeout: 900_000 }, () => {
  const ns = useNamespace('capi');
  const client = KubeClient.fromKubeConfig(testKubeConfig(), { qps: 0 });
  let env: ClusterApiEnvironment | undefined;
  let cluster: SelfHostedCluster;

  before(async () => {
    const kubernetesVersion = pinnedVersions().kube;
    env = await startClusterApi({
      client,
      kubeConfig: testKubeConfig(),
      kubeconfigPath: testKubeconfigPath(),
      workDir: mkdtempSync(join(tmpdir(), 'nodewarden-capi-')),
      kubernetesVersion,
      log: createLogger({ level: 'silent' }),
    });
    cluster = await createSelfHostedCluster(client, {
      namespace: ns(),
      name: 'selfhosted',
      kubeconfigPath: testKubeconfigPath(),
      kubernetesVersion,
      apiServer: testKubeConfig().getCurrentCluster()?.server ?? '',
    });
    // The adopted control-plane Node is the shared cluster's: files before this one (the simulated
    // cloud's) left their provider's answers on it, and an annotated node is never asked again.
    // As Cluster API's it starts without them, as on a cluster that never ran another provider.
    await client.patch(
      Nodes,
      cluster.controlPlaneNode,
      undefined,
      {
        metadata: {
          annotations: { [Upgrade.annotations.scalingGroup]: null, [Upgrade.annotations.image]: null },
        },
      },
      { type: 'merge' },
    );
  });

  after(async () => {
    await operator?.stop();
    await removeNodeVersions();
    if (env) await removeEverything();
    await env?.stop();
    // Nodes of our machines that outlived them (a failed run) must not reach the next suite.
    const prefix = `nodewarden://${ns()}/`;
    for (const n of (await client.list<V1Node>(Nodes)).items) {
      if (n.spec?.providerID?.startsWith(prefix))
        await client.delete(Nodes, n.metadata?.name ?? '', undefined, { ignoreNotFound: true });
    }
    client.close();
  });

  /**
   * This file's NodeVersions (cluster-scoped, so no namespace takes them away). One left
   * Outdated (the retarget case's, whose control-plane Node is never replaced) kept the next
   * suite's paused autoscaler paused: it is given back only once no other rollout runs.
   * No operator runs now to lift the finalizer, so it is lifted here.
   */
  async function removeNodeVersions(): Promise<void> {
    for (const nv of (await client.list<K8sObject>(NodeVersions.type)).items) {
      const name = nv.metadata?.name ?? '';
      if (!name.startsWith('capi') || !name.endsWith(`-${run}`)) continue;
      await client.patch(
        NodeVersions.type,
        name,
        undefined,
        { metadata: { finalizers: null } },
        { type: 'merge' },
      );
      await client.delete(NodeVersions.type, name, undefined, { ignoreNotFound: true });
    }
  }

  /** MachineDeployments and the Cluster, through Cluster API's own deletion (drains, infra machines, Nodes), while it runs. */
  async function removeEverything(): Promise<void> {
    // Workloads first: Cluster API drains each Machine's Node, and a PDB would hold that up.
    for (const pdb of (await client.list<K8sObject>(PodDisruptionBudgets, { namespace: ns() })).items)
      await client.delete(PodDisruptionBudgets, pdb.metadata?.name ?? '', ns(), { ignoreNotFound: true });
    for (const d of (await client.list<K8sObject>(Deployments, { namespace: ns() })).items)
      await client.delete(Deployments, d.metadata?.name ?? '', ns(), { ignoreNotFound: true });
    for (const md of (await client.list<MachineDeployment>(MachineDeployments, { namespace: ns() })).items)
      await client.delete(MachineDeployments, md.metadata.name ?? '', ns(), { ignoreNotFound: true });
    await eventually(
      'the worker Machines gone',
      async () => {
        const ms = (await client.list<Machine>(Machines, { namespace: ns() })).items;
        return ms.every((m) => m.metadata.labels?.[CapiLabels.controlPlane] !== undefined) ? true : undefined;
      },
      120_000,
    ).catch((err: unknown) => process.stderr.write(`[capi] ${String(err)}\n`));
  }

  async function machinesOf(md: string): Promise<Machine[]> {
    return (
      await client.list<Machine>(Machines, {
        namespace: ns(),
        labelSelector: `${CapiLabels.deploymentName}=${md}`,
      })
    ).items;
  }

  let operator: OperatorProcess | undefined;
  /** Every operator this file started, for a failure's logs. */
  const started: OperatorProcess[] = [];
  const run = Date.now().toString(36).slice(-5);

  const startTheOperator = (logLevel = 'info') => {
    operator = startOperator([
      '--log-level',
      logLevel,
      '--cloud-provider',
      'clusterapi',
      '--cluster-id',
      `${ns()}/${cluster.name}`,
      '--clusterapi-namespace',
      ns(),
      '--controllers',
      CONTROLLERS,
      '--webhook-bind-address',
      '0',
      '--maintenance-lease-namespace',
      ns(),
    ]);
    started.push(operator);
    return operator;
  };

  async function poolNodes(pool: string): Promise<V1Node[]> {
    return (await client.list<V1Node>(Nodes, { labelSelector: `${POOL_LABEL}=${pool}` })).items;
  }

  /** A MachineDeployment of `replicas` from a new template on `image`, once all its Nodes are Ready. */
  async function deployment(
    name: string,
    replicas: number,
    image: string,
    strategy?: 'OnDelete' | 'RollingUpdate',
    bootDelaySeconds = 1,
  ) {
    await client.create(
      NodewardenMachineTemplates.type,
      machineTemplate(ns(), `${name}-tpl`, { image, bootDelaySeconds, pool: name }),
    );
    const md = workerDeployment(cluster, {
      name,
      replicas,
      template: `${name}-tpl`,
      ...(strategy ? { strategy } : {}),
    });
    await client.create(MachineDeployments, md as MachineDeployment & K8sObject);
    await eventually(
      `${replicas} Ready Nodes of ${name}`,
      async () => ((await poolNodes(name)).filter(isReady).length === replicas ? true : undefined),
      120_000,
      500,
    );
  }

  /** The Cluster API manager's resident memory now and at its peak, from /proc. */
  function managerMemory(): string {
    const pid = env?.manager.process.pid;
    if (!pid || !existsSync(`/proc/${pid}/status`)) return 'manager memory unknown';
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return `Cluster API manager RSS ${(kb('VmRSS') / 1024).toFixed(0)} MiB (peak ${(kb('VmHWM') / 1024).toFixed(0)} MiB)`;
  }

  /** Where a group's Machines, MachineSets and replicas stand, and what the operator said of them: for a failure's message. */
  async function describeGroup(md: string): Promise<string> {
    const d = await client.get<MachineDeployment>(MachineDeployments, md, ns());
    const sets = (
      await client.list<MachineSet>(MachineSets, {
        namespace: ns(),
        labelSelector: `${CapiLabels.deploymentName}=${md}`,
      })
    ).items;
    const machines = (await machinesOf(md)).map(
      (m) =>
        `${m.metadata.name} ${m.status?.phase}${m.metadata.deletionTimestamp ? ' deleting' : ''} ` +
        `set=${m.metadata.labels?.[CapiLabels.setName]} infra=${m.spec.infrastructureRef.name} ` +
        `node=${m.status?.nodeRef?.name ?? '-'}`,
    );
    const said = (operator?.logs ?? [])
      .filter((l) => l.level === 'error' || /clusterapi/.test(String(l.msg)))
      .slice(-30)
      .map((l) => JSON.stringify(l));
    // All of it, for reading after.
    const logFile = join(tmpdir(), `nodewarden-capi-${md}-${run}.jsonl`);
    writeFileSync(logFile, started.flatMap((o) => o.logs.map((l) => JSON.stringify(l))).join('\n'));
    const nodeVersions = (await client.list<K8sObject & { status?: unknown }>(NodeVersions.type)).items;
    return [
      `operator logs in ${logFile}`,
      ...nodeVersions.map((v) => `NodeVersion ${v.metadata?.name}: ${JSON.stringify(v.status)}`),
      `MachineDeployment ${md}: replicas ${d.spec.replicas}, annotations ${JSON.stringify(d.metadata.annotations)}`,
      ...sets.map(
        (s) =>
          `  MachineSet ${s.metadata.name}: replicas ${s.spec.replicas} (${s.spec.template.spec.infrastructureRef.name})`,
      ),
      ...machines.map((m) => `  Machine ${m}`),
      ...said,
    ].join('\n');
  }

  /**
   * Samples a group while it rolls: the most Machines alive at once, the fewest Nodes
   * available (and a workload's pods running), the NodeVersion's lastErrors.
   */
  function watchGroup(md: string, nv: string, app?: string) {
    const seen = {
      maxMachines: 0,
      minAvailable: Number.POSITIVE_INFINITY,
      minApp: Number.POSITIVE_INFINITY,
      samples: 0,
    };
    const errors = new Set<string>();
    let on = true;
    const loop = (async () => {
      while (on) {
        const machines = (await machinesOf(md)).filter((m) => !m.metadata.deletionTimestamp);
        seen.maxMachines = Math.max(seen.maxMachines, machines.length);
        const nodes = await poolNodes(md);
        const available = nodes.filter((n) => isReady(n) && !n.spec?.unschedulable).length;
        seen.minAvailable = Math.min(seen.minAvailable, available);
        const got = await getNodeVersion(client, nv).catch(() => undefined);
        if (got?.status?.lastError) errors.add(got.status.lastError);
        if (app) seen.minApp = Math.min(seen.minApp, (await appPods(app)).length);
        seen.samples++;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    return {
      stop: async () => {
        on = false;
        await loop;
        return { ...seen, errors };
      },
    };
  }

  /** The Running pods of a workload (made by `workload`). */
  async function appPods(app: string): Promise<PodLike[]> {
    return (await client.list<PodLike>(Pods, { namespace: ns(), labelSelector: `app=${app}` })).items.filter(
      running,
    );
  }

  /** A Deployment of `replicas` on the group's nodes, guarded by a PDB of minAvailable `min`, once all run. */
  async function workload(app: string, md: string, replicas: number, min: number): Promise<void> {
    const labels = { app };
    await client.create(Deployments, {
      metadata: { name: app, namespace: ns() },
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            nodeSelector: { [POOL_LABEL]: md },
            containers: [{ name: app, image: `example/${app}:1` }],
          },
        },
      },
    });
    await client.create(PodDisruptionBudgets, {
      metadata: { name: app, namespace: ns() },
      spec: { minAvailable: min, selector: { matchLabels: labels } },
    });
    await eventually(`${replicas} ${app} pods Running`, async () =>
      (await appPods(app)).length === replicas ? true : undefined,
    );
  }

  /** The rollout finished, with the group's nodes all on `image` (a first round may see them before they are annotated). */
  async function finished(nv: string, md: string, size: number, image: string): Promise<void> {
    let doneSince: number | undefined;
    await eventually(
      `NodeVersion ${nv} to finish with ${size} nodes of ${md} on ${image}`,
      async () => {
        if (!rolloutDone(await getNodeVersion(client, nv))) return undefined;
        const nodes = await poolNodes(md);
        if (nodes.length === size && nodes.every((n) => n.metadata?.labels?.[IMAGE_LABEL] === image))
          return true;
        // Done by its own count, with other nodes than asked for: a minute to settle, then a failure.
        doneSince ??= Date.now();
        if (Date.now() - doneSince > 60_000)
          throw new Error(`the rollout calls itself done with ${nodes.length} nodes of ${md}, not ${size}`);
        return undefined;
      },
      300_000,
      500,
    ).catch(async (err: unknown) => {
      process.stderr.write(`[capi] ${await describeGroup(md)}\n`);
      throw err;
    });
  }

  /** Once Cluster API has let the rest go: the group's Machines, `size` of them, all Running with Nodes on `image`. */
  async function settled(md: string, size: number, image: string): Promise<Machine[]> {
    const machines = await eventually(
      `${size} Machines of ${md}`,
      async () => {
        const ms = await machinesOf(md);
        return ms.length === size && ms.every((m) => m.status?.phase === 'Running') ? ms : undefined;
      },
      60_000,
      500,
    ).catch(async (err: unknown) => {
      process.stderr.write(`[capi] ${await describeGroup(md)}\n`);
      throw err;
    });
    const nodes = await poolNodes(md);
    assert.equal(nodes.length, size, `${size} Nodes of ${md}`);
    assert.ok(
      nodes.every((n) => isReady(n) && !n.spec?.unschedulable && n.metadata?.labels?.[IMAGE_LABEL] === image),
      `every Node of ${md} Ready, uncordoned, on ${image}`,
    );
    const d = await client.get<MachineDeployment>(MachineDeployments, md, ns());
    if (d.spec.replicas !== size) process.stderr.write(`[capi] ${await describeGroup(md)}\n`);
    assert.equal(d.spec.replicas, size, 'the MachineDeployment keeps its size');
    assert.equal(d.metadata.annotations?.['cluster.x-k8s.io/paused'], undefined, 'not left paused');
    return machines;
  }

  async function scalingGroup(nodeVersion: string, md: string): Promise<void> {
    await client.create(ScalingGroups.type, {
      apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
      kind: 'ScalingGroup',
      metadata: { name: `${nodeVersion}-${md}` },
      spec: { groupId: `${ns()}/${md}`, nodeVersion, role: 'Worker', min: 1, max: 100 },
    });
  }

  it("a MachineDeployment of 3 makes Machines whose NodewardenMachines become Nodes with nodeRefs, the template's image on each", async () => {
    await client.create(
      NodewardenMachineTemplates.type,
      machineTemplate(ns(), 'workers-a', { image: 'nwos-1.0.0', bootDelaySeconds: 1 }),
    );
    await client.create(
      MachineDeployments,
      workerDeployment(cluster, { name: 'first', replicas: 3, template: 'workers-a' }) as MachineDeployment &
        K8sObject,
    );
    const machines = await eventually(
      '3 Running Machines with nodeRefs',
      async () => {
        const ms = await machinesOf('first');
        return ms.length === 3 && ms.every((m) => m.status?.phase === 'Running' && m.status.nodeRef?.name)
          ? ms
          : undefined;
      },
      120_000,
      500,
    );
    for (const m of machines) {
      const node = await client.get<V1Node>(Nodes, m.status?.nodeRef?.name ?? '');
      assert.equal(
        node.spec?.providerID,
        m.spec.providerID,
        `Machine ${m.metadata.name} and its Node agree on the providerID`,
      );
      assert.equal(node.metadata?.labels?.[IMAGE_LABEL], 'nwos-1.0.0');
    }
    const sets = (
      await client.list<MachineSet>(MachineSets, {
        namespace: ns(),
        labelSelector: `${CapiLabels.deploymentName}=first`,
      })
    ).items;
    assert.equal(sets.length, 1, 'one MachineSet');
    assert.equal(sets[0]?.status?.replicas, 3);
    const md = await eventually(
      'the MachineDeployment to count 3 available',
      async () => {
        const got = await client.get<MachineDeployment>(MachineDeployments, 'first', ns());
        return got.status?.availableReplicas === 3 ? got : undefined;
      },
      60_000,
      500,
    );
    assert.equal(md.status?.replicas, 3);
  });

  it('rolls a MachineDeployment of 6 to a new image at surge 2 / unavailable 1: every Node replaced, budgets and the PDB held, Cluster API agreeing', async () => {
    const md = 'roll';
    const nv = `capi-${run}`;
    await deployment(md, 6, 'nwos-1.0.0');
    const before = new Set((await poolNodes(md)).map((n) => n.metadata?.name));
    // A Deployment of 4 on these nodes with a PDB of minAvailable 3.
    const app = { app: 'web' };
    await client.create(Deployments, {
      metadata: { name: 'web', namespace: ns() },
      spec: {
        replicas: 4,
        selector: { matchLabels: app },
        template: {
          metadata: { labels: app },
          spec: { nodeSelector: { [POOL_LABEL]: md }, containers: [{ name: 'web', image: 'example/web:1' }] },
        },
      },
    });
    await client.create(PodDisruptionBudgets, {
      metadata: { name: 'web', namespace: ns() },
      spec: { minAvailable: 3, selector: { matchLabels: app } },
    });
    await eventually('4 web pods Running', async () => {
      const pods = (await client.list<PodLike>(Pods, { namespace: ns(), labelSelector: 'app=web' })).items;
      return pods.filter(running).length === 4 ? true : undefined;
    });

    // Sampled while it rolls: Machines alive (6 + the surge), Nodes available (6 - unavailable), web pods.
    let maxMachines = 0;
    let minAvailable = Number.POSITIVE_INFINITY;
    let minWeb = Number.POSITIVE_INFINITY;
    let samples = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const machines = (await machinesOf(md)).filter((m) => !m.metadata.deletionTimestamp);
        maxMachines = Math.max(maxMachines, machines.length);
        const nodes = await poolNodes(md);
        minAvailable = Math.min(
          minAvailable,
          nodes.filter((n) => isReady(n) && !n.spec?.unschedulable).length,
        );
        const pods = (await client.list<PodLike>(Pods, { namespace: ns(), labelSelector: 'app=web' })).items;
        minWeb = Math.min(minWeb, pods.filter(running).length);
        samples++;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();

    startTheOperator();
    await scalingGroup(nv, md);
    const t0 = Date.now();
    await createNodeVersion(client, nv, 'nwos-2.0.0', { maxSurge: 2, maxUnavailable: 1 });
    const done = await eventually(
      `NodeVersion ${nv} to finish`,
      async () => {
        const got = await getNodeVersion(client, nv);
        return rolloutDone(got) ? got : undefined;
      },
      300_000,
      500,
    ).finally(() => {
      sampling = false;
    });
    const secs = (Date.now() - t0) / 1000;
    await sampler;
    process.stderr.write(
      `[capi] 6 machines rolled in ${secs.toFixed(1)} s (${samples} samples); ${managerMemory()}\n`,
    );

    const nodes = await poolNodes(md);
    assert.equal(nodes.length, 6, 'the group keeps its size');
    assert.deepEqual(
      nodes.filter((n) => before.has(n.metadata?.name)).map((n) => n.metadata?.name),
      [],
      'every Node replaced',
    );
    assert.ok(
      nodes.every((n) => isReady(n) && !n.spec?.unschedulable),
      'all Ready, none left cordoned',
    );
    assert.ok(
      nodes.every((n) => n.metadata?.labels?.[IMAGE_LABEL] === 'nwos-2.0.0'),
      'all on nwos-2.0.0',
    );
    assert.equal(done.status?.replaced, 6);
    assert.ok(maxMachines <= 8, `never more than 6 + 2 Machines (saw ${maxMachines})`);
    assert.ok(minAvailable >= 5, `never more than 1 Node unavailable (saw ${minAvailable} of 6 available)`);
    assert.ok(minWeb >= 3, `the PDB held: never fewer than 3 web pods running (saw ${minWeb})`);

    // Cluster API's own view agrees.
    type MdStatus = MachineDeployment & { status?: { upToDateReplicas?: number } };
    const mdNow = await eventually(
      'the MachineDeployment to count 6 up to date and available',
      async () => {
        const got = await client.get<MdStatus>(MachineDeployments, md, ns());
        const s = got.status;
        return s?.availableReplicas === 6 && s.upToDateReplicas === 6 && s.replicas === 6 ? got : undefined;
      },
      60_000,
      500,
    );
    assert.equal(mdNow.spec.replicas, 6);
    const template = mdNow.spec.template.spec.infrastructureRef.name;
    assert.notEqual(template, `${md}-tpl`, 'a new template swapped in');
    const machines = await machinesOf(md);
    assert.equal(machines.length, 6);
    const names = new Set(nodes.map((n) => n.metadata?.name));
    for (const m of machines) {
      assert.equal(m.status?.phase, 'Running', `Machine ${m.metadata.name} Running`);
      assert.ok(
        names.has(m.status?.nodeRef?.name),
        `Machine ${m.metadata.name}'s nodeRef is one of the new Nodes`,
      );
    }
    const sets = (
      await client.list<MachineSet>(MachineSets, {
        namespace: ns(),
        labelSelector: `${CapiLabels.deploymentName}=${md}`,
      })
    ).items;
    const current = sets.filter((s) => s.spec.template.spec.infrastructureRef.name === template);
    assert.equal(current.length, 1, 'one MachineSet of the new template');
    assert.equal(current[0]?.spec.replicas, 6);
    for (const s of sets.filter((x) => x !== current[0]))
      assert.equal(s.spec.replicas ?? 0, 0, `old MachineSet ${s.metadata.name} at 0`);
    await operator?.stop();
    operator = undefined;
  });

  it('refuses a MachineDeployment with strategy RollingUpdate, saying what to set', async () => {
    const md = 'rolling';
    const nv = `capi-ru-${run}`;
    await deployment(md, 1, 'nwos-1.0.0', 'RollingUpdate');
    startTheOperator();
    await scalingGroup(nv, md);
    await createNodeVersion(client, nv, 'nwos-2.0.0', { maxSurge: 1, maxUnavailable: 0 });
    type SgStatus = { status?: { conditions?: { reason: string; message: string }[] } };
    const message = await eventually(
      'the ScalingGroup to say why',
      async () => {
        const sg = await client.get<SgStatus>(ScalingGroups.type, `${nv}-${md}`);
        return sg.status?.conditions?.find((c) => c.reason === 'CloudError')?.message;
      },
      60_000,
      500,
    );
    assert.match(message, /RollingUpdate.*spec\.rollout\.strategy\.type: OnDelete/);
    const got = await client.get<MachineDeployment>(MachineDeployments, md, ns());
    assert.equal(got.spec.template.spec.infrastructureRef.name, `${md}-tpl`, 'its template left alone');
    const old = (await poolNodes(md)).filter((n) => n.metadata?.labels?.[IMAGE_LABEL] === 'nwos-1.0.0');
    assert.equal(old.length, 1, 'its machine left alone');
    await operator?.stop();
    operator = undefined;
  });

  it('replaces a machine that never boots exactly once, after nodeReadyTimeout', async () => {
    const md = 'hang';
    const nv = `capi-hang-${run}`;
    await deployment(md, 3, 'nwos-1.0.0', 'OnDelete', 3);
    const before = new Set((await machinesOf(md)).map((m) => m.metadata.name));
    // The first machine made for the new image hangs: annotated within its 3 s boot delay.
    let hung: string | undefined;
    let hungAt = 0;
    let hungGoneAt: number | undefined;
    const seen = new Set<string>();
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const infra = (await client.list<NodewardenMachine>(NodewardenMachines.type, { namespace: ns() }))
          .items;
        for (const m of infra) {
          if (m.spec.pool !== md || m.spec.image !== 'nwos-2.0.0') continue;
          seen.add(m.metadata.name ?? '');
          if (m.metadata.name === hung && m.metadata.deletionTimestamp) hungGoneAt ??= Date.now();
          if (!hung && !m.status?.initialization?.provisioned) {
            hung = m.metadata.name;
            hungAt = Date.now();
            await client.patch(
              NodewardenMachines.type,
              hung ?? '',
              ns(),
              { metadata: { annotations: { [NEVER_BOOT_ANNOTATION]: 'true' } } },
              { type: 'merge' },
            );
          }
        }
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    startTheOperator();
    await scalingGroup(nv, md);
    await createNodeVersion(client, nv, 'nwos-2.0.0', {
      maxSurge: 1,
      maxUnavailable: 0,
      nodeReadyTimeout: '20s',
    });
    // Finished, and finished with these nodes (a first round may see them before they are annotated).
    await eventually(
      `NodeVersion ${nv} to finish`,
      async () => {
        if (!rolloutDone(await getNodeVersion(client, nv))) return undefined;
        const nodes = await poolNodes(md);
        return nodes.length === 3 && nodes.every((n) => n.metadata?.labels?.[IMAGE_LABEL] === 'nwos-2.0.0')
          ? true
          : undefined;
      },
      300_000,
      500,
    ).finally(() => {
      watching = false;
    });
    await watcher;
    assert.ok(hung, 'a new machine was made to hang');
    // The hung one may still be on its way out (Cluster API deletes its infrastructure first).
    const machines = await eventually(
      `3 Machines of ${md}`,
      async () => {
        const ms = await machinesOf(md);
        return ms.length === 3 ? ms : undefined;
      },
      60_000,
      500,
    ).catch(async (err: unknown) => {
      process.stderr.write(`[capi] ${await describeGroup(md)}\n`);
      throw err;
    });
    assert.ok(
      machines.every((m) => !before.has(m.metadata.name) && m.status?.phase === 'Running'),
      'all replaced and Running',
    );
    assert.ok(!machines.some((m) => m.spec.infrastructureRef.name === hung), 'the hung machine is gone');
    // Annotated within 3 s of its creation, given up 20 s after it: not before its timeout.
    const waited = ((hungGoneAt ?? Date.now()) - hungAt) / 1000;
    assert.ok(
      waited >= 16,
      `the hung machine given up after nodeReadyTimeout, not before (${waited.toFixed(1)} s)`,
    );
    assert.equal(
      seen.size,
      4,
      `one machine per node replaced, plus one for the hung one (saw ${[...seen].join(', ')})`,
    );
    const nodes = await poolNodes(md);
    assert.equal(nodes.length, 3);
    assert.ok(nodes.every((n) => isReady(n) && n.metadata?.labels?.[IMAGE_LABEL] === 'nwos-2.0.0'));
    await operator?.stop();
    operator = undefined;
  });

  // Failed 2 runs of 2 before the rollout's startTime was written ahead of its first round:
  // the operator killed inside its first round's createNode left no start, and the next took
  // the Machines already made as up to date (5 Nodes where 4 were asked for). Its operators
  // log at debug (every action), for a failure's log file.
  it('converges without surplus Machines when the operator is killed mid-rollout and restarted', async () => {
    const md = 'kill';
    const nv = `capi-kill-${run}`;
    await deployment(md, 4, 'nwos-1.0.0');
    const before = new Set((await machinesOf(md)).map((m) => m.metadata.name));
    await workload('kv', md, 2, 1);
    const watch = watchGroup(md, nv, 'kv');
    startTheOperator('debug');
    await scalingGroup(nv, md);
    await createNodeVersion(client, nv, 'nwos-2.0.0', { maxSurge: 2, maxUnavailable: 1 });
    // Killed (SIGKILL) at three points: new Machines asked for, the first node replaced, half of them.
    const points: [string, () => Promise<boolean>][] = [
      [
        'new Machines asked for',
        async () => (await machinesOf(md)).some((m) => !before.has(m.metadata.name)),
      ],
      ['1 node replaced', async () => ((await getNodeVersion(client, nv)).status?.replaced ?? 0) >= 1],
      ['2 nodes replaced', async () => ((await getNodeVersion(client, nv)).status?.replaced ?? 0) >= 2],
    ];
    const killedAt: string[] = [];
    for (const [what, reached] of points) {
      await eventually(what, async () => ((await reached()) ? true : undefined), 120_000, 200);
      if (rolloutDone(await getNodeVersion(client, nv))) break;
      await operator?.stop('SIGKILL');
      killedAt.push(what);
      await new Promise((r) => setTimeout(r, 1000));
      startTheOperator('debug');
    }
    await finished(nv, md, 4, 'nwos-2.0.0').catch(async (err: unknown) => {
      await watch.stop();
      throw err;
    });
    const seen = await watch.stop();
    process.stderr.write(`[capi] operator killed at: ${killedAt.join('; ')}\n`);
    assert.ok(killedAt.length >= 2, `killed mid-rollout at least twice (at: ${killedAt.join('; ')})`);
    const machines = await settled(md, 4, 'nwos-2.0.0');
    assert.ok(
      machines.every((m) => !before.has(m.metadata.name)),
      'every Machine replaced',
    );
    assert.ok(seen.maxMachines <= 6, `never more than 4 + 2 Machines (saw ${seen.maxMachines})`);
    assert.ok(seen.minAvailable >= 3, `never more than 1 Node unavailable (saw ${seen.minAvailable} of 4)`);
    assert.ok(seen.minApp >= 1, `the PDB held (saw ${seen.minApp} of 2 pods running)`);
    assert.equal((await appPods('kv')).length, 2, 'the workload whole again');
    await operator?.stop();
    operator = undefined;
  });

  // Was TODO (1 run in 4 lost a Machine, and the surge overshot to 6 and 7 Machines of 4 + 1):
  // the template was swapped while the current MachineSet still grew, and Cluster API cut that
  // set back and deleted one of its Machines at random; and the surge did not count the nodes
  // made for the earlier target. Both fixed (templateSwapHold; the planner's surge).
  it('converges on the newest image when the NodeVersion is retargeted mid-rollout; control-plane Machines never touched, the NodeVersion saying so', async () => {
    const md = 'retarget';
    const nv = `capi-re-${run}`;
    await deployment(md, 4, 'nwos-1.0.0');
    const cp = (await client.list<Machine>(Machines, { namespace: ns() })).items.filter(
      (m) => m.metadata.labels?.[CapiLabels.controlPlane] !== undefined,
    );
    assert.equal(cp.length, 1, 'the self-hosted Cluster has one control-plane Machine');
    const watch = watchGroup(md, nv);
    startTheOperator('debug');
    await scalingGroup(nv, md);
    await createNodeVersion(client, nv, 'nwos-2.0.0', { maxSurge: 1, maxUnavailable: 0 });
    await eventually(
      'a first node replaced on nwos-2.0.0',
      async () => ((await getNodeVersion(client, nv)).status?.replaced ?? 0) >= 1 || undefined,
      120_000,
      200,
    );
    await client.patch(
      NodeVersions.type,
      nv,
      undefined,
      { spec: { image: 'nwos-3.0.0' } },
      { type: 'merge' },
    );
    await finished(nv, md, 4, 'nwos-3.0.0').catch(async (err: unknown) => {
      await watch.stop();
      throw err;
    });
    const seen = await watch.stop();
    const machines = await settled(md, 4, 'nwos-3.0.0');
    const d = await client.get<MachineDeployment>(MachineDeployments, md, ns());
    const template = d.spec.template.spec.infrastructureRef.name;
    const tpl = await client.get<K8sObject & { spec: { template: { spec: { image?: string } } } }>(
      NodewardenMachineTemplates.type,
      template,
      ns(),
    );
    assert.equal(
      tpl.spec.template.spec.image,
      'nwos-3.0.0',
      "the MachineDeployment's template is the newest",
    );
    for (const m of machines) {
      const infra = await client.get<NodewardenMachine>(
        NodewardenMachines.type,
        m.spec.infrastructureRef.name,
        ns(),
      );
      assert.equal(infra.spec.image, 'nwos-3.0.0', `Machine ${m.metadata.name} runs nwos-3.0.0`);
    }
    const sets = (
      await client.list<MachineSet>(MachineSets, {
        namespace: ns(),
        labelSelector: `${CapiLabels.deploymentName}=${md}`,
      })
    ).items;
    // Old sets at 0 may be gone already: Cluster API removes them once the rollout is complete.
    for (const s of sets.filter((x) => x.spec.template.spec.infrastructureRef.name !== template))
      assert.equal(s.spec.replicas ?? 0, 0, `MachineSet ${s.metadata.name} of an old template at 0`);
    process.stderr.write(`[capi] retarget: at most ${seen.maxMachines} Machines at once (4 + surge 1)\n`);
    assert.ok(seen.minAvailable >= 4, `never a Node unavailable (saw ${seen.minAvailable} of 4)`);
    // A swap held while Cluster API settles the sets is a wait: no Warning, a Normal Event per target at most
    // (it was a retried CloudError: about 7 Warnings in 0.7 s).
    const sgEvents = (
      await client.list<
        K8sObject & { regarding?: { name?: string }; type?: string; reason?: string; note?: string }
      >(Events, { namespace: 'default' })
    ).items.filter((e) => e.regarding?.name === `${nv}-${md}`);
    const warnings = sgEvents.filter((e) => e.type === 'Warning').map((e) => `${e.reason}: ${e.note}`);
    assert.deepEqual(warnings, [], 'no Warning about the ScalingGroup');
    const deferred = sgEvents.filter((e) => e.reason === 'ImageSwitchDeferred').length;
    assert.ok(deferred <= 2, `at most one ImageSwitchDeferred Event per target (saw ${deferred})`);
    process.stderr.write(`[capi] retarget: ${deferred} ImageSwitchDeferred Event(s)\n`);

    // The control plane: its Machine untouched, its Node listed invalid with the reason said.
    const cpNow = await client.get<Machine>(Machines, cp[0]?.metadata.name ?? '', ns());
    assert.equal(cpNow.metadata.uid, cp[0]?.metadata.uid, 'the control-plane Machine is the same one');
    assert.equal(cpNow.metadata.deletionTimestamp, undefined);
    assert.equal(
      cpNow.metadata.annotations?.[CapiAnnotations.deleteMachine],
      undefined,
      'never marked for deletion',
    );
    type Invalid = { status?: { invalid?: string[] } };
    const got = (await getNodeVersion(client, nv)) as Invalid;
    assert.ok(
      got.status?.invalid?.includes(cluster.controlPlaneNode),
      `the control-plane Node ${cluster.controlPlaneNode} is listed invalid (${got.status?.invalid?.join(', ')})`,
    );
    const said = [...seen.errors].find((e) => e.includes(cluster.controlPlaneNode));
    assert.match(
      said ?? '',
      /a control-plane Machine: its control-plane provider replaces it, nodewarden never does/,
      'the NodeVersion said why',
    );
    await operator?.stop();
    operator = undefined;
    assert.ok(seen.maxMachines <= 5, `never more than 4 + 1 Machines (saw ${seen.maxMachines})`);
  });
});
