// The fault soak's share on real nodes: a short, seeded worst day on two real
// nodes (kubelet, containerd, runc) beside a kwok node. Two operator replicas
// with leader election drain the real nodes through NodeMaintenances made and
// deleted over the run, while a PDB-protected Deployment of real pods runs on
// them, and the nodes' own faults come on a seeded schedule: containerd or
// kubelet killed and started again as `cluster up` starts a node's missing
// processes, an operator replica killed. Sampled from outside the operator
// throughout with the soak's checkers. NODEWARDEN_REAL_SOAK_SEED replays a seed.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { NodeMaintenances } from '../../src/api/maintenance.ts';
import { stateDir } from '../../src/cluster/local-cluster.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { KubeConfig as LiteKubeConfig } from '../../src/runtime/kubeconfig.ts';
import {
  type K8sObject,
  Namespaces,
  Nodes,
  PodDisruptionBudgets,
  Pods,
} from '../../src/runtime/resources.ts';
import { clusterCloud } from '../harness/cloud.ts';
import { installCustomResources } from '../harness/global-setup.ts';
import {
  clusterCommand,
  kubectlApply,
  leftovers,
  realNodesSkipReason,
  testappDeployment,
} from '../harness/real-nodes.ts';
import { until } from '../soak/faults.ts';
import { healthyPods, OUR_TAINTS, type Violation, writesWithoutLease } from '../soak/invariants.ts';
import { LOAD_LABEL, MaintenanceChurn } from '../soak/load.ts';
import {
  describeRealFault,
  MaintenanceClock,
  planRealFaults,
  REAL_FAULT_KINDS,
  RealNodeFaults,
  RealNodesChecker,
} from '../soak/real.ts';
import { Replicas } from '../soak/replicas.ts';
import { Sampler } from '../soak/sampler.ts';
import { runFaultTrack, type TrackRecord } from '../soak/stepping.ts';

const skip = realNodesSkipReason();
if (skip) console.log(`# the real-node soak: skipped: ${skip}`);

const SEED = Number(process.env.NODEWARDEN_REAL_SOAK_SEED) || 20261126;
const NAME = 'nwrsoak';
const NS = 'soak';
const REAL_NODES = ['real-000', 'real-001'];
const APP = 'web';
const REPLICAS = 4;
const MIN_AVAILABLE = 3;
const DURATION_MS = 100_000;
/**
 * WHY 150 s: a drain here evicts the app's pods on the node one at a time as the PDB allows
 * (each replacement a real container started in a second or two) and CoreDNS's; a replica
 * killed mid-drain costs a failover (a lease of 15 s, a standby's first look waits one more),
 * and a restarted kubelet reports its pods Ready again only after their probes. The slowest
 * seen is printed beside it; 150 s is several times any of that on busy cores.
 */
const MAINTENANCE_BOUND_MS = 150_000;
/**
 * WHY 120 s after the faults stop: a container killed or a kubelet restarted last comes back
 * in seconds (the image is on the node, the probe answers at once); a pod evicted by the last
 * drain is replaced by the scheduler and started on the other node. The figure is printed.
 */
const PODS_READY_BOUND_MS = 120_000;
/** WHY 120 s: the churn's last maintenances, deleted when the faults stop, each uncordon at once; a failover on top. */
const SETTLE_BOUND_MS = 120_000;

const dir = () => join(stateDir(), 'clusters', NAME);
const kubeconfigPath = () => join(dir(), 'kubeconfig.yaml');

interface NodeLike extends K8sObject {
  metadata: { name?: string };
  spec?: { unschedulable?: boolean; taints?: { key: string }[] };
}
interface NmLike extends K8sObject {
  metadata: { name?: string; creationTimestamp?: string };
  spec: { nodeName: string };
  status?: { phase?: string };
}
interface PodLike extends K8sObject {
  metadata: { name?: string; deletionTimestamp?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

const sec = (ms: number | undefined) => (ms === undefined ? 'n/a' : `${(ms / 1000).toFixed(1)} s`);

describe(`the fault soak on real nodes (seed ${SEED})`, { skip, timeout: 900_000 }, () => {
  let client: KubeClient;
  let replicas: Replicas | undefined;
  /** Stops the sampler and the churn: a red run's after-hook must not leave them polling a deleted cluster. */
  let stopLoad = () => {};
  const logDir = mkdtempSync(join(tmpdir(), 'nodewarden-soak-real-'));

  before(
    async () => {
      await clusterCommand('up', '--name', NAME, '--nodes', '1', '--real-nodes', '2', '--timeout', '3m');
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath());
      await installCustomResources(kc);
      const lite = new LiteKubeConfig();
      lite.loadFromFile(kubeconfigPath());
      client = KubeClient.fromKubeConfig(lite, { qps: 0 });
      await client.create(Namespaces, { metadata: { name: NS } });
      replicas = await Replicas.start(lite, 2, NS, logDir);
    },
    { timeout: 300_000 },
  );

  after(async () => {
    stopLoad();
    await replicas?.stopAll().catch(() => {});
    client?.close();
    if (existsSync(dir())) await clusterCommand('delete', '--name', NAME).catch(() => {});
  });

  // WHY 420 s: the run's 100 s, the bounds after it (pods 120 s, settling 120 s) and the app's
  // start; a slow run is judged by those bounds with their figures, not cut short here.
  it(`seed ${SEED}: PDB kept through our evictions, maintenances converge, pods Ready again, nothing left cordoned`, {
    timeout: 420_000,
  }, async () => {
    const log = (m: string) => console.log(`# [soak-real ${SEED}] ${m}`);
    const r = replicas!;
    assert.ok(await until(async () => (await r.holder(client)) !== undefined, 60_000), 'a replica leads');
    await kubectlApply(kubeconfigPath(), {
      ...testappDeployment({ name: APP, namespace: NS, replicas: REPLICAS, spread: 'ScheduleAnyway' }),
    });
    await client.create(PodDisruptionBudgets, {
      metadata: { name: APP, namespace: NS },
      spec: { minAvailable: MIN_AVAILABLE, selector: { matchLabels: { app: APP } } },
    });
    const appStarted = Date.now();
    assert.ok(await until(async () => (await appPods(client)).ready === REPLICAS, 180_000), 'the app Ready');
    log(`app: ${REPLICAS} pods Ready on real nodes in ${sec(Date.now() - appStarted)}; logs in ${logDir}`);

    const faults = new RealNodeFaults(NAME, dir(), r);
    const checker = new RealNodesChecker((node, at) => faults.restarting(node, at));
    const clock = new MaintenanceClock(MAINTENANCE_BOUND_MS);
    // The PDB's fewest healthy pods at any sample, as the checker counts them (Ready, not deleting).
    let fewestHealthy = Number.POSITIVE_INFINITY;
    checker.extraChecks.push((s) => {
      for (const p of s.pdbs) fewestHealthy = Math.min(fewestHealthy, healthyPods(s.pods, p));
      return [];
    });
    let said = 0;
    const say = (m: string) => {
      // The first few as they come; all of them counted in the report.
      if (said++ < 5) log(`VIOLATION ${m}`);
    };
    const sampler = new Sampler(client, await clusterCloud(client), NS, r, checker, say);
    sampler.extras.push(async () => {
      for (const v of await observeMaintenances(client, clock)) say(`${v.invariant}: ${v.message}`);
      return {};
    });
    const churn = new MaintenanceChurn(client, {
      namespace: NS,
      seed: SEED,
      deployments: 0,
      replicas: 0,
      unmanagedPods: 0,
      maintenances: 12,
      // One at a time: with both real nodes cordoned, the app's evicted pods would have nowhere to go.
      concurrentMaintenances: 1,
      groups: 0,
      groupSize: 0,
      maxSurge: 0,
      nodeReadyTimeout: '30s',
      maintenancePool: 'real',
    });
    stopLoad = () => {
      sampler.stop();
      churn.stop();
    };
    const started = Date.now();
    const sampling = sampler.run(250);
    // Deleted whatever its phase only past the bound: a stuck one is the clock's to report first.
    const churning = churn.run(2_000, MAINTENANCE_BOUND_MS + 30_000);
    const records: TrackRecord[] = [];
    const schedule = planRealFaults({ seed: SEED, durationMs: DURATION_MS, nodes: REAL_NODES, replicas: 2 });
    await runFaultTrack({
      schedule,
      started,
      stopped: () => false,
      describe: describeRealFault,
      apply: (f, note) => faults.apply(f, note),
      clear: () => faults.clear(),
      log,
      records,
      logFirst: true,
    });
    const rest = started + DURATION_MS - Date.now();
    if (rest > 0) await new Promise((res) => setTimeout(res, rest));

    churn.stop();
    await churning;
    const faultsEnded = Date.now();
    await until(async () => {
      await churn.drainAll();
      return true;
    }, 30_000);
    const podsReady = await until(
      async () => (await appPods(client)).ready === REPLICAS,
      PODS_READY_BOUND_MS,
    );
    const podsReadyMs = podsReady ? Date.now() - faultsEnded : undefined;
    const settled = await until(
      async () => (await unsettled(client)) === '' && clock.pending().length === 0,
      SETTLE_BOUND_MS,
    );
    const settledMs = settled ? Date.now() - faultsEnded : undefined;
    // Sampled a few seconds more: a settled cluster must stay settled.
    await new Promise((res) => setTimeout(res, 3_000));
    sampler.stop();
    await sampling;

    const twoActors = writesWithoutLease(r.writes(), sampler.holders, r.leasePath);
    const all: Violation[] = [...checker.violations, ...clock.violations, ...twoActors];
    const elapsed = (Date.now() - started) / 1000;
    const slowest = Math.max(0, ...clock.convergedMs);
    // What the API server answered the replicas' evictions: granted (201) or refused by the PDB (429).
    const evictions = r
      .writes()
      .filter((w) => w.method === 'POST' && w.path.split('?')[0]!.endsWith('/eviction'));
    const granted = evictions.filter((w) => w.status === 201).length;
    const refused = evictions.filter((w) => w.status === 429).length;
    console.log(
      [
        `# soak on real nodes seed=${SEED} duration=${sec(DURATION_MS)} (${REAL_NODES.length} real nodes, ${REPLICAS} app pods, PDB minAvailable ${MIN_AVAILABLE})`,
        `# faults injected: ${records.length}`,
        ...records.map(
          (f) => `#   @${sec(f.at).padStart(8)}  ${f.what}${f.error ? ` FAILED: ${f.error}` : ''}`,
        ),
        `# invariant samples: ${checker.samples} (${(checker.samples / elapsed).toFixed(1)}/s), missed: ${sampler.missed}`,
        `# writes checked against the lease holder: ${r.writes().length}; operator restarts ${r.restarts} (${r.selfExits} self-exits)`,
        `# maintenances: ${churn.created} created, ${clock.convergedMs.length} converged, slowest ${sec(slowest)} (bound ${sec(MAINTENANCE_BOUND_MS)})`,
        `# evictions: ${granted} granted, ${refused} refused by the PDB; fewest healthy pods sampled ${fewestHealthy} (minAvailable ${MIN_AVAILABLE})`,
        `# PDB samples below minimum from restarts or lost heartbeats (involuntary, not counted): ${checker.involuntary.length}`,
        ...checker.involuntary.slice(0, 3).map((v) => `#   ${new Date(v.at).toISOString()} ${v.message}`),
        `# app pods Ready again ${sec(podsReadyMs)} after the faults (bound ${sec(PODS_READY_BOUND_MS)}); settled ${sec(settledMs)} (bound ${sec(SETTLE_BOUND_MS)})`,
        `# violations: ${all.length}`,
        ...all.slice(0, 10).map((v) => `#   ${new Date(v.at).toISOString()} ${v.invariant}: ${v.message}`),
      ].join('\n'),
    );

    assert.deepEqual(
      records.filter((f) => f.error).map((f) => `${f.what}: ${f.error}`),
      [],
    );
    const injected = new Set(schedule.slice(0, records.length).map((f) => f.kind));
    assert.deepEqual([...injected].sort(), [...REAL_FAULT_KINDS].sort(), 'every kind of fault injected');
    assert.ok(
      checker.samples > 0 && checker.samples / elapsed >= 1,
      `sampled ${checker.samples / elapsed}/s`,
    );
    assert.ok(clock.convergedMs.length >= 2, `${clock.convergedMs.length} maintenances converged`);
    assert.deepEqual(
      all.map((v) => `${v.invariant}: ${v.message}`),
      [],
    );
    assert.ok(
      podsReady,
      `the app's pods not all Running and Ready ${sec(PODS_READY_BOUND_MS)} after the faults`,
    );
    assert.ok(settled, `not settled: ${await unsettled(client)}; pending ${clock.pending().join(', ')}`);
  });

  it('leaves no process, mount, namespace or cgroup after delete', async () => {
    await replicas?.stopAll();
    replicas = undefined;
    await clusterCommand('delete', '--name', NAME);
    assert.deepEqual(await leftovers(NAME, dir()), []);
  });
});

/** The app's pods: how many are Running and Ready and not being deleted. */
async function appPods(client: KubeClient): Promise<{ ready: number; all: number }> {
  const pods = (await client.list<PodLike>(Pods, { namespace: NS, labelSelector: `app=${APP}` })).items;
  const ready = pods.filter(
    (p) =>
      !p.metadata.deletionTimestamp &&
      p.status?.phase === 'Running' &&
      p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  return { ready: ready.length, all: pods.length };
}

/** The churn's maintenances, then the nodes (one that ends in between has let its node go): the clock's sample. */
async function observeMaintenances(client: KubeClient, clock: MaintenanceClock): Promise<Violation[]> {
  const at = Date.now();
  const nms = (await client.list<NmLike>(NodeMaintenances.type, { labelSelector: `${LOAD_LABEL}=true` }))
    .items;
  const nodes = (await client.list<NodeLike>(Nodes)).items;
  return clock.observe(
    at,
    nms.map((m) => ({
      name: m.metadata.name!,
      node: m.spec.nodeName,
      createdAt: Date.parse(m.metadata.creationTimestamp ?? '') || at,
      ...(m.status?.phase ? { phase: m.status.phase } : {}),
    })),
    new Set(nodes.filter(held).map((n) => n.metadata.name!)),
  );
}

const held = (n: NodeLike) =>
  n.spec?.unschedulable === true || (n.spec?.taints ?? []).some((t) => OUR_TAINTS.includes(t.key));

/** What still differs from the settled state: maintenances of the churn left, nodes cordoned or tainted by us. */
async function unsettled(client: KubeClient): Promise<string> {
  const out: string[] = [];
  const left = (await client.list(NodeMaintenances.type, { labelSelector: `${LOAD_LABEL}=true` })).items;
  if (left.length) out.push(`${left.length} maintenances left`);
  const cordoned = (await client.list<NodeLike>(Nodes)).items.filter(held).map((n) => n.metadata.name);
  if (cordoned.length) out.push(`nodes still cordoned/tainted: ${cordoned.join(', ')}`);
  return out.join('; ');
}
