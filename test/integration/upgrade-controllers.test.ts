// The ScalingGroup, PendingNode, AutoscalingStrategy and discovery controllers
// in-process against the real API server, with the simulated cloud on
// loopback behind its HTTP provider. Ports the anchor's envtest specs
// (upgrades.md §5) and adds the cases where we do better.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { AutoscalingStrategies, NodeVersions, PendingNodes, ScalingGroups } from '../../src/api/upgrade.ts';
import { customResources } from '../../src/capabilities.ts';
import { CloudServer, NodeSync } from '../../src/cluster/infra/cloud/http-api.ts';
import { CloudState } from '../../src/cluster/infra/cloud/state.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isAlreadyExists, isNotFound } from '../../src/runtime/errors.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { restClientRequests } from '../../src/runtime/metrics.ts';
import {
  CustomResourceDefinitions,
  Deployments,
  Events,
  type K8sObject,
  Nodes,
  type ResourceType,
} from '../../src/runtime/resources.ts';
import { setupAutoscalingStrategies } from '../../src/upgrade/controllers/autoscaling.ts';
import { DISCOVERED_LABEL, setupScalingGroupDiscovery } from '../../src/upgrade/controllers/discovery.ts';
import { setupPendingNodes } from '../../src/upgrade/controllers/pendingnode.ts';
import { setupScalingGroups } from '../../src/upgrade/controllers/scalinggroup.ts';
import type { ScalingGroupInfo } from '../../src/upgrade/providers/interface.ts';
import { SimulatedCloudProvider } from '../../src/upgrade/providers/simulated/provider.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';

const NV = NodeVersions.type;
const SG = ScalingGroups.type;
const PN = PendingNodes.type;
const AS = AutoscalingStrategies.type;
// biome-ignore lint/suspicious/noExplicitAny: tests reach into arbitrary fields of API objects
type Obj = K8sObject & Record<string, any>;

const U = Date.now().toString(36);
/** Groups of this cluster are discovered; the other tests' groups live in another one. */
const CLUSTER_ID = `disc-${U}`;
const OTHER_CLUSTER = `elsewhere-${U}`;
const log = createLogger({ level: process.env.NODEWARDEN_TEST_LOG_LEVEL || 'silent' });

/**
 * The simulated cloud cannot remove a group yet; hiding it from the listing is
 * what discovery sees. Counting image reads shows when a group was reconciled.
 */
class HidingCloud extends SimulatedCloudProvider {
  readonly hidden = new Set<string>();
  readonly imageReads = new Map<string, number>();

  override async listScalingGroups(clusterId: string): Promise<ScalingGroupInfo[]> {
    return (await super.listScalingGroups(clusterId)).filter((g) => !this.hidden.has(g.groupId));
  }

  override async scalingGroupImage(groupId: string): Promise<string> {
    this.imageReads.set(groupId, (this.imageReads.get(groupId) ?? 0) + 1);
    return super.scalingGroupImage(groupId);
  }
}

/** Writes (PUT) this process has sent to the API server; the test's own client only GETs and PATCHes. */
async function puts(): Promise<number> {
  const { values } = await restClientRequests.get();
  return values.filter((v) => v.labels.method === 'PUT').reduce((n, v) => n + v.value, 0);
}

const client = KubeClient.fromKubeConfig(testKubeConfig());
const state = new CloudState({ bootDelayMs: 1000, cluster: OTHER_CLUSTER });
const server = new CloudServer({ state, nodeSync: new NodeSync(client) });
let cloud: HidingCloud;
let mgr: Manager;
const stop = new AbortController();
let running: Promise<void> | undefined;
/** Everything this file created, deleted at the end. */
const made: { type: ResourceType; name: string; namespace?: string }[] = [];

async function create(type: ResourceType, obj: Obj): Promise<Obj> {
  const got = await client.create<Obj>(type, obj);
  made.push({ type, name: obj.metadata!.name!, namespace: obj.metadata?.namespace });
  return got;
}
const get = (type: ResourceType, name: string, namespace?: string) => client.get<Obj>(type, name, namespace);
const merge = (type: ResourceType, name: string, body: unknown, namespace?: string) =>
  client.patch(type, name, namespace, body, { type: 'merge' });
const gone = (type: ResourceType, name: string) => async () => {
  try {
    await get(type, name);
    return undefined;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
};
const condition = (o: Obj, type: string) =>
  (
    o.status?.conditions as { type: string; status: string; reason: string; message: string }[] | undefined
  )?.find((c) => c.type === type);

/** Events about a cluster-scoped object land in "default". */
async function eventsAbout(name: string, reason: string): Promise<Obj[]> {
  const all = (await client.list<Obj>(Events, { namespace: 'default' })).items;
  return all.filter((e) => e.regarding?.name === name && e.reason === reason);
}

/** The upgrade CRDs, in case this cluster was made before they shipped. */
async function ensureCustomResources(): Promise<void> {
  try {
    await client.get(CustomResourceDefinitions, NodeVersions.name);
    return;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  for (const cr of customResources) {
    const crd = cr.crd();
    try {
      await client.create(CustomResourceDefinitions, crd as never);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    await eventually(`${crd.metadata.name} established`, async () => {
      const got = await client.get<Obj>(CustomResourceDefinitions, crd.metadata.name);
      return got.status?.conditions?.some(
        (c: { type: string; status: string }) => c.type === 'Established' && c.status === 'True',
      )
        ? true
        : undefined;
    });
  }
}

const image = 'nw-image-v1';
before(
  async () => {
    await ensureCustomResources();
    await server.start();
    cloud = new HidingCloud({ endpoint: server.url });
    // A group that exists before the operator starts: the first discovery round needs no trigger.
    state.addGroup({
      id: `d0-${U}`,
      role: 'Worker',
      launchImage: image,
      kubernetesVersion: 'v1.37.1',
      cluster: CLUSTER_ID,
    });
    mgr = new Manager({ kubeConfig: testKubeConfig(), log });
    setupScalingGroups(mgr, { cloud });
    setupPendingNodes(mgr, { cloud });
    setupAutoscalingStrategies(mgr);
    // An hour: every round in these tests is triggered by a Node coming or going, not the timer.
    setupScalingGroupDiscovery(mgr, { cloud, clusterId: CLUSTER_ID, intervalMs: 3_600_000 });
    running = mgr.start(stop.signal);
    await eventually('manager running', async () => (mgr.isLeader() ? true : undefined), 60_000);
  },
  { timeout: 120_000 },
);

after(
  async () => {
    // The controllers first, so nothing is recreated behind the cleanup.
    stop.abort();
    await running;
    for (const m of made.reverse()) {
      await client.delete(m.type, m.name, m.namespace, { ignoreNotFound: true }).catch(() => {});
    }
    for (const sg of (await client.list<Obj>(SG, { labelSelector: `${DISCOVERED_LABEL}=true` })).items) {
      if (String(sg.spec?.groupId).endsWith(U))
        await client.delete(SG, sg.metadata!.name!, undefined, { ignoreNotFound: true });
    }
    // Terminating the instances takes their Nodes away (NodeSync).
    for (const i of state.listInstances()) state.deleteInstance(i.providerID, Date.now());
    await server.close();
    client.close();
  },
  { timeout: 120_000 },
);

describe('a ScalingGroup', () => {
  const groupId = `sg-${U}`;
  const nv = `nv-sg-${U}`;

  before(async () => {
    state.addGroup({ id: groupId, role: 'Worker', launchImage: image, kubernetesVersion: '1.36.4' });
    await create(NV, {
      apiVersion: NodeVersions.apiVersion,
      kind: 'NodeVersion',
      metadata: { name: nv },
      spec: { image: 'nw-image-v2', kubernetesVersion: 'v1.37.1' },
    });
    await create(SG, {
      apiVersion: ScalingGroups.apiVersion,
      kind: 'ScalingGroup',
      metadata: { name: groupId },
      spec: { groupId, nodeVersion: nv, role: 'Worker' },
    });
  });

  it("switches the cloud group to its NodeVersion's image and reports it in status", async () => {
    const sg = await eventually(
      'image in status',
      async () => {
        const o = await get(SG, groupId);
        return o.status?.imageReference === 'nw-image-v2' && condition(o, 'ImageUpToDate')?.status === 'True'
          ? o
          : undefined;
      },
      60_000,
    );
    const cond = condition(sg, 'ImageUpToDate');
    assert.equal(cond?.reason, 'ImageUpToDate');
    assert.equal((cond as { observedGeneration?: number }).observedGeneration, sg.metadata?.generation);
    const group = state.getGroup(groupId);
    assert.equal(group?.launchImage, 'nw-image-v2');
    assert.equal(group?.kubernetesVersion, 'v1.37.1', 'the Kubernetes version travels with the image');
    await eventually('ImageSwitched event', async () =>
      (await eventsAbout(groupId, 'ImageSwitched')).length > 0 ? true : undefined,
    );
  });

  it('follows a change of the NodeVersion', async () => {
    await merge(NV, nv, { spec: { image: 'NW-IMAGE-V3' } });
    await eventually(
      'new image in the cloud and in status',
      async () => {
        const o = await get(SG, groupId);
        return state.getGroup(groupId)?.launchImage === 'NW-IMAGE-V3' &&
          o.status?.imageReference === 'NW-IMAGE-V3'
          ? true
          : undefined;
      },
      60_000,
    );
  });

  it('compares images case-insensitively and leaves an equal one alone', async () => {
    await merge(NV, nv, { spec: { image: 'nw-image-v3' } });
    // The condition message names the NodeVersion's image, so it shows the new spec was seen.
    await eventually(
      'new spec seen',
      async () =>
        ((await get(SG, groupId)).status?.conditions ?? []).some(
          (c: { message: string; status: string }) =>
            c.status === 'True' && c.message.includes('nw-image-v3'),
        )
          ? true
          : undefined,
      60_000,
    );
    assert.equal(state.getGroup(groupId)?.launchImage, 'NW-IMAGE-V3', 'not switched again');
  });

  it('retries through cloud throttling and errors until the image is switched', async () => {
    state.setFaults({ throttleNextCalls: 2, failNextCalls: 1 });
    await merge(NV, nv, { spec: { image: 'nw-image-v4' } });
    await eventually(
      'switched despite the faults',
      async () => ((await get(SG, groupId)).status?.imageReference === 'nw-image-v4' ? true : undefined),
      60_000,
    );
    assert.equal(state.getGroup(groupId)?.launchImage, 'nw-image-v4');
    assert.equal(
      state.getFaults().throttleNextCalls + state.getFaults().failNextCalls,
      0,
      'the faults were met',
    );
    await eventually('CloudError events', async () =>
      (await eventsAbout(groupId, 'CloudError')).some((e) => e.type === 'Warning') ? true : undefined,
    );
  });

  it('writes nothing when a NodeVersion change leaves the image as it is', async () => {
    const reads = cloud.imageReads.get(groupId) ?? 0;
    const writes = await puts();
    // The NodeVersion's generation moves, so the group is reconciled again.
    await merge(NV, nv, { spec: { imageVersion: `v4-${U}` } });
    await eventually('reconciled again', async () =>
      (cloud.imageReads.get(groupId) ?? 0) > reads ? true : undefined,
    );
    await sleep(500);
    assert.equal(await puts(), writes, 'no status write');
    assert.equal(state.getGroup(groupId)?.launchImage, 'nw-image-v4');
  });

  it('explains a missing NodeVersion and acts once it is created', async () => {
    const other = `sg-wait-${U}`;
    const missing = `nv-later-${U}`;
    state.addGroup({ id: other, role: 'Worker', launchImage: image, kubernetesVersion: 'v1.37.1' });
    await create(SG, {
      apiVersion: ScalingGroups.apiVersion,
      kind: 'ScalingGroup',
      metadata: { name: other },
      spec: { groupId: other, nodeVersion: missing },
    });
    const sg = await eventually(
      'NodeVersionNotFound',
      async () => {
        const o = await get(SG, other);
        return condition(o, 'ImageUpToDate')?.reason === 'NodeVersionNotFound' ? o : undefined;
      },
      60_000,
    );
    assert.equal(condition(sg, 'ImageUpToDate')?.status, 'Unknown');
    assert.equal(sg.status?.imageReference, image, 'status still says what the group launches');
    assert.equal(state.getGroup(other)?.launchImage, image);

    await create(NV, {
      apiVersion: NodeVersions.apiVersion,
      kind: 'NodeVersion',
      metadata: { name: missing },
      spec: { image: 'nw-image-v9' },
    });
    await eventually(
      'switched once the NodeVersion exists',
      async () => ((await get(SG, other)).status?.imageReference === 'nw-image-v9' ? true : undefined),
      60_000,
    );
    assert.equal(state.getGroup(other)?.launchImage, 'nw-image-v9');
  });

  it('reports a group the cloud does not know, with a Warning event', async () => {
    const name = `sg-unknown-${U}`;
    await create(SG, {
      apiVersion: ScalingGroups.apiVersion,
      kind: 'ScalingGroup',
      metadata: { name },
      spec: { groupId: `no-such-group-${U}`, nodeVersion: nv },
    });
    const sg = await eventually(
      'CloudError condition',
      async () => {
        const o = await get(SG, name);
        return condition(o, 'ImageUpToDate')?.reason === 'CloudError' ? o : undefined;
      },
      60_000,
    );
    assert.equal(condition(sg, 'ImageUpToDate')?.status, 'False');
    assert.match(condition(sg, 'ImageUpToDate')?.message ?? '', /no group/);
    await eventually('CloudError event', async () =>
      (await eventsAbout(name, 'CloudError')).some((e) => e.type === 'Warning') ? true : undefined,
    );
  });
});

describe('an AutoscalingStrategy', () => {
  const ns = useNamespace('autoscaler');
  const name = `as-${U}`;
  const worker = `as-worker-${U}`;
  const cp = `as-cp-${U}`;
  const deployment = 'cluster-autoscaler';
  const nodesArg = `--nodes=1:10:worker-group-${U}`;
  const dep = () => get(Deployments, deployment, ns());
  const command = (d: Obj): string[] => d.spec?.template?.spec?.containers?.[0]?.command ?? [];

  before(async () => {
    await create(Deployments, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: deployment, namespace: ns() },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: deployment } },
        template: {
          metadata: { labels: { app: deployment } },
          spec: {
            containers: [
              {
                name: 'autoscaler',
                image: 'registry.k8s.io/autoscaling/cluster-autoscaler:v1.37.0',
                command: ['./cluster-autoscaler'],
              },
            ],
          },
        },
      },
    });
    await create(SG, {
      apiVersion: ScalingGroups.apiVersion,
      kind: 'ScalingGroup',
      metadata: { name: worker },
      spec: { groupId: `worker-group-${U}`, role: 'Worker', autoscaling: true, min: 1, max: 10 },
    });
    await create(SG, {
      apiVersion: ScalingGroups.apiVersion,
      kind: 'ScalingGroup',
      metadata: { name: cp },
      spec: { groupId: `cp-group-${U}`, role: 'ControlPlane', autoscaling: true, min: 1, max: 3 },
    });
    await create(AS, {
      apiVersion: AutoscalingStrategies.apiVersion,
      kind: 'AutoscalingStrategy',
      metadata: { name },
      spec: {
        enabled: false,
        deploymentName: deployment,
        deploymentNamespace: ns(),
        autoscalerExtraArgs: { 'cloud-provider': 'kwok', 'scale-down-delay-after-add': '1m' },
      },
    });
  });

  it('keeps the autoscaler at 0 replicas while disabled, with its arguments written', async () => {
    const d = await eventually('command written', async () => {
      const o = await dep();
      return command(o).includes(nodesArg) ? o : undefined;
    });
    assert.equal(d.spec?.replicas, 0);
    const as = await eventually('status', async () => {
      const o = await get(AS, name);
      return o.status?.replicas === 0 ? o : undefined;
    });
    assert.equal(as.status?.enabled, false);
  });

  it('runs 1 replica once enabled, and reports it', async () => {
    await merge(AS, name, { spec: { enabled: true } });
    await eventually('1 replica', async () => ((await dep()).spec?.replicas === 1 ? true : undefined));
    const as = await eventually('status enabled', async () => {
      const o = await get(AS, name);
      return o.status?.enabled === true ? o : undefined;
    });
    assert.equal(as.status?.replicas, 1);
  });

  it('gives the autoscaler the extra flags and each worker group, never a control-plane group', async () => {
    const cmd = command(await dep());
    assert.equal(cmd[0], './cluster-autoscaler');
    assert.ok(cmd.includes('--cloud-provider=kwok'), cmd.join(' '));
    assert.ok(cmd.includes('--scale-down-delay-after-add=1m'), cmd.join(' '));
    assert.ok(cmd.includes(nodesArg), cmd.join(' '));
    assert.ok(!cmd.some((a) => a.includes(`cp-group-${U}`)), 'control-plane group left out');
  });

  it('follows a group changing its bounds', async () => {
    await merge(SG, worker, { spec: { min: 2, max: 5 } });
    await eventually('new bounds', async () =>
      command(await dep()).includes(`--nodes=2:5:worker-group-${U}`) ? true : undefined,
    );
    assert.ok(!command(await dep()).includes(nodesArg), 'the old bounds are gone');
  });

  it('drops a group that turns autoscaling off', async () => {
    await merge(SG, worker, { spec: { autoscaling: false } });
    await eventually('group gone from the command', async () =>
      command(await dep()).some((a) => a.includes(`worker-group-${U}`)) ? undefined : true,
    );
  });

  it('undoes someone else scaling the Deployment', async () => {
    await merge(Deployments, deployment, { spec: { replicas: 3 } }, ns());
    await eventually('back to 1', async () => ((await dep()).spec?.replicas === 1 ? true : undefined));
  });

  it('scales the autoscaler to 0 when disabled, and leaves spec.enabled as the user set it', async () => {
    await merge(AS, name, { spec: { enabled: false } });
    await eventually('0 replicas', async () => ((await dep()).spec?.replicas === 0 ? true : undefined));
    const as = await eventually('status disabled', async () => {
      const o = await get(AS, name);
      return o.status?.enabled === false ? o : undefined;
    });
    assert.equal(as.status?.replicas, 0);
    await sleep(500);
    assert.equal((await get(AS, name)).spec?.enabled, false, 'not forced back on (the anchor would)');
  });

  it('records a Warning when its Deployment does not exist', async () => {
    const missing = `as-missing-${U}`;
    await create(AS, {
      apiVersion: AutoscalingStrategies.apiVersion,
      kind: 'AutoscalingStrategy',
      metadata: { name: missing },
      spec: { enabled: true, deploymentName: 'no-such-autoscaler', deploymentNamespace: ns() },
    });
    await eventually('DeploymentNotFound event', async () =>
      (await eventsAbout(missing, 'DeploymentNotFound')).some((e) => e.type === 'Warning') ? true : undefined,
    );
    const as = await eventually('status', async () => {
      const o = await get(AS, missing);
      return o.status?.enabled === false ? o : undefined;
    });
    assert.equal(as.status?.replicas, 0);
  });
});

describe('a PendingNode', () => {
  const groupId = `pn-${U}`;
  const pending = (name: string, spec: Record<string, unknown>) =>
    create(PN, { apiVersion: PendingNodes.apiVersion, kind: 'PendingNode', metadata: { name }, spec });

  before(() => {
    state.addGroup({ id: groupId, role: 'Worker', launchImage: image, kubernetesVersion: 'v1.37.1' });
  });

  it('of a node that joins reaches its goal and stays for the NodeVersion controller', async () => {
    const node = await cloud.createNode(groupId);
    const name = `join-${U}`;
    await pending(name, {
      providerID: node.providerID,
      groupID: groupId,
      nodeName: node.nodeName,
      goal: 'Join',
      deadline: new Date(Date.now() + 10 * 60_000).toISOString(),
    });
    const pn = await eventually(
      'reachedGoal',
      async () => {
        const o = await get(PN, name);
        return o.status?.reachedGoal === true ? o : undefined;
      },
      60_000,
    );
    assert.equal(pn.status?.cspState, 'Ready');
    assert.equal((await get(Nodes, node.nodeName)).spec?.providerID, node.providerID);
    await sleep(1000);
    assert.equal((await get(PN, name)).spec?.goal, 'Join', 'kept, still a Join');
  });

  it('of a node that misses its join deadline turns into a Leave, and goes once the instance is Terminated', async () => {
    state.setFaults({ neverJoinNext: { [groupId]: 1 } });
    const node = await cloud.createNode(groupId);
    const name = `late-${U}`;
    // Watch from before the object exists, to see the Leave however briefly it lasts.
    const seen: { type: string; goal?: string; deadline?: string }[] = [];
    const watching = new AbortController();
    const watch = (async () => {
      for await (const ev of client.watch<Obj>(PN, {
        fieldSelector: `metadata.name=${name}`,
        signal: watching.signal,
      })) {
        seen.push({ type: ev.type, goal: ev.object.spec?.goal, deadline: ev.object.spec?.deadline });
      }
    })().catch(() => {});
    await sleep(200);
    await pending(name, {
      providerID: node.providerID,
      groupID: groupId,
      nodeName: node.nodeName,
      goal: 'Join',
      deadline: new Date(Date.now() + 3000).toISOString(),
    });
    assert.equal(await cloud.nodeState(node.providerID), 'Creating');
    await eventually('pending node deleted', gone(PN, name), 60_000);
    watching.abort();
    await watch;

    assert.equal(state.getInstance(node.providerID)?.state, 'Terminated', 'the instance was deleted');
    const leave = seen.find((e) => e.goal === 'Leave');
    assert.ok(leave, `a Leave was seen: ${JSON.stringify(seen)}`);
    assert.equal(leave.deadline, undefined, 'the Leave has no deadline');
    assert.equal(seen.at(-1)?.type, 'DELETED');
    await eventually('JoinAbandoned event', async () =>
      (await eventsAbout(name, 'JoinAbandoned')).some((e) => e.type === 'Warning') ? true : undefined,
    );
  });

  it('of a node leaving goes once the instance is Terminated', async () => {
    const node = await cloud.createNode(groupId);
    const name = `leave-${U}`;
    await pending(name, {
      providerID: node.providerID,
      groupID: groupId,
      nodeName: node.nodeName,
      goal: 'Leave',
    });
    const pn = await eventually('state followed', async () => {
      const o = await get(PN, name);
      return o.status?.cspState ? o : undefined;
    });
    assert.notEqual(pn.status?.cspState, 'Terminated');
    await cloud.deleteNode(node.providerID);
    // Creating or Ready: rechecked every 5 or 30 s, whichever applies.
    await eventually('pending node deleted', gone(PN, name), 60_000);
  });
});

describe('scaling group discovery', () => {
  const trigger = `disc-trigger-${U}`;
  const discovered = async (groupId: string) =>
    (await client.list<Obj>(SG, { labelSelector: `${DISCOVERED_LABEL}=true` })).items.find(
      (o) => o.spec?.groupId === groupId,
    );
  /** Node create and delete are what start a round between the periodic ones. */
  const addTriggerNode = () =>
    create(Nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: trigger, labels: { 'nodewarden.dev/test': 'discovery' } },
    });
  const removeTriggerNode = () => client.delete(Nodes, trigger, undefined, { ignoreNotFound: true });

  it('finds the groups that existed before it started', async () => {
    const sg = await eventually('d0 discovered', () => discovered(`d0-${U}`), 60_000);
    assert.equal(sg.metadata?.name, `d0-${U}`);
  });

  it('creates a ScalingGroup for each new group of the cluster, named after it', async () => {
    state.addGroup({
      id: `d1-${U}`,
      name: `Workers_East.${U.toUpperCase()}`,
      role: 'Worker',
      launchImage: image,
      kubernetesVersion: 'v1.37.1',
      cluster: CLUSTER_ID,
    });
    state.addGroup({
      id: `d2-${U}`,
      role: 'ControlPlane',
      launchImage: image,
      kubernetesVersion: 'v1.37.1',
      cluster: CLUSTER_ID,
    });
    await addTriggerNode();
    const w = await eventually('d1 discovered', () => discovered(`d1-${U}`), 60_000);
    assert.equal(w.metadata?.name, `workers-east-${U}`);
    assert.deepEqual(w.spec, {
      groupId: `d1-${U}`,
      nodeVersion: 'default',
      role: 'Worker',
      autoscaling: false,
      min: 1,
      max: 10,
      autoscalerGroupName: `Workers_East.${U.toUpperCase()}`,
    });
    const c = await eventually('d2 discovered', () => discovered(`d2-${U}`), 60_000);
    assert.equal(c.spec?.role, 'ControlPlane');
    assert.equal(await discovered(`sg-${U}`), undefined, "another cluster's group is not this cluster's");
  });

  it('deletes the ones whose group went, never one a user made', async () => {
    const handmade = `handmade-${U}`;
    await create(SG, {
      apiVersion: ScalingGroups.apiVersion,
      kind: 'ScalingGroup',
      metadata: { name: handmade },
      spec: { groupId: `vanished-${U}` },
    });
    const d2 = await discovered(`d2-${U}`);
    assert.ok(d2, 'd2 was discovered');
    cloud.hidden.add(`d2-${U}`);
    await removeTriggerNode();
    await eventually('d2 deleted', gone(SG, d2.metadata!.name!), 60_000);
    assert.ok(await get(SG, handmade), 'the hand-made ScalingGroup is still there');
    assert.ok(await discovered(`d1-${U}`), 'the groups still listed keep theirs');
  });

  it('adds no second ScalingGroup for a group a user already covers', async () => {
    const mine = `mine-${U}`;
    await create(SG, {
      apiVersion: ScalingGroups.apiVersion,
      kind: 'ScalingGroup',
      metadata: { name: mine },
      spec: { groupId: `d3-${U}` },
    });
    state.addGroup({
      id: `d3-${U}`,
      role: 'Worker',
      launchImage: image,
      kubernetesVersion: 'v1.37.1',
      cluster: CLUSTER_ID,
    });
    state.addGroup({
      id: `d4-${U}`,
      role: 'Worker',
      launchImage: image,
      kubernetesVersion: 'v1.37.1',
      cluster: CLUSTER_ID,
    });
    await addTriggerNode();
    // d4 comes from the same round that saw d3.
    await eventually('d4 discovered', () => discovered(`d4-${U}`), 60_000);
    assert.equal(await discovered(`d3-${U}`), undefined);
    const all = (await client.list<Obj>(SG)).items.filter((o) => o.spec?.groupId === `d3-${U}`);
    assert.deepEqual(
      all.map((o) => o.metadata?.name),
      [mine],
    );
    await removeTriggerNode();
  });
});
