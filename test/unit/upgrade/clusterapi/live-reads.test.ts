// The clusterapi provider's reads per rollout round. The 100-node bench at surge 10 cost 180 API
// requests per replaced node: each round's list of a group read every Machine's infrastructure
// machine with a GET of its own (and a Machine without a providerID yet, again, to find it). A
// group's infrastructure machines are one LIST, narrowed by the deployment-name label Cluster API
// copies onto them, whatever their number.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeClient } from '../../../../src/runtime/client.ts';
import { ApiError } from '../../../../src/runtime/errors.ts';
import type { ResourceType } from '../../../../src/runtime/resources.ts';
import { ClusterApiProvider } from '../../../../src/upgrade/providers/clusterapi/provider.ts';

const NS = 'ns';
const DEPLOYMENT = 'cluster.x-k8s.io/deployment-name';

/** A MachineDeployment "md" of `n` Machines, the last `unprovisioned` with a providerID only on their infrastructure machine. */
function cluster(n: number, unprovisioned = 0, replicas = n) {
  const labels = { [DEPLOYMENT]: 'md' };
  const machines = Array.from({ length: n }, (_, i) => ({
    metadata: { name: `m-${i}`, namespace: NS, labels, creationTimestamp: '2026-11-26T10:00:00Z' },
    spec: {
      ...(i < n - unprovisioned ? { providerID: `nw://m-${i}` } : {}),
      infrastructureRef: {
        apiGroup: 'infrastructure.nodewarden.dev',
        kind: 'NodewardenMachine',
        name: `i-${i}`,
      },
    },
    status: { phase: i < n - unprovisioned ? 'Running' : 'Provisioning', nodeRef: { name: `node-${i}` } },
  }));
  const infra = machines.map((_, i) => ({
    metadata: { name: `i-${i}`, namespace: NS, labels },
    spec: { providerID: `nw://m-${i}`, image: i % 2 ? 'nwos-2' : 'nwos-1' },
  }));
  const md = { metadata: { name: 'md', namespace: NS }, spec: { replicas, clusterName: 'c' } };
  const crd = { metadata: { labels: { 'cluster.x-k8s.io/v1beta2': 'v1alpha1' } } };
  const requests: string[] = [];
  const client = {
    get: async (t: ResourceType, name: string) => {
      requests.push(`get ${t.plural}`);
      const found =
        t.plural === 'machinedeployments'
          ? md
          : t.plural === 'customresourcedefinitions'
            ? crd
            : t.plural === 'nodewardenmachines'
              ? infra.find((x) => x.metadata.name === name)
              : undefined;
      if (!found) throw new ApiError(404, `${t.plural} "${name}" not found`, { reason: 'NotFound' });
      return structuredClone(found);
    },
    list: async (t: ResourceType, opts: { labelSelector?: string } = {}) => {
      requests.push(`list ${t.plural}${opts.labelSelector ? ` ${opts.labelSelector}` : ''}`);
      const items = t.plural === 'machines' ? machines : t.plural === 'nodewardenmachines' ? infra : [];
      return { items: structuredClone(items), metadata: {} };
    },
  } as unknown as KubeClient;
  return { provider: new ClusterApiProvider({ client, namespace: NS }), requests };
}

describe("a round's list of a group's instances", () => {
  it("reads the group's infrastructure machines in one LIST, however many Machines it has", async () => {
    const c = cluster(20);
    const { instances } = await c.provider.listGroup(`${NS}/md`);
    assert.equal(instances.length, 20);
    assert.deepEqual(
      c.requests.filter((r) => r.includes('nodewardenmachines')),
      [`list nodewardenmachines ${DEPLOYMENT}=md`],
    );
  });

  it("says each Machine's image, as its infrastructure machine holds it", async () => {
    const c = cluster(4);
    const images = (await c.provider.listGroup(`${NS}/md`)).instances.map((i) => `${i.nodeName} ${i.image}`);
    assert.deepEqual(images, ['node-0 nwos-1', 'node-1 nwos-2', 'node-2 nwos-1', 'node-3 nwos-2']);
  });

  it('finds the providerIDs of Machines not provisioned yet from the same LIST', async () => {
    const c = cluster(6, 3);
    const ids = (await c.provider.listGroup(`${NS}/md`)).instances.map((i) => i.providerID);
    assert.deepEqual(ids, ['nw://m-0', 'nw://m-1', 'nw://m-2', 'nw://m-3', 'nw://m-4', 'nw://m-5']);
    assert.equal(c.requests.filter((r) => r.startsWith('get nodewardenmachines')).length, 0);
    // Listed, so not a launch as well: one read says each Machine once.
    assert.deepEqual((await c.provider.listGroup(`${NS}/md`)).requestedLaunches, []);
  });

  it('costs the MachineDeployment, the Machines and their infrastructure machines: three requests, launches included', async () => {
    const c = cluster(30, 5);
    await c.provider.listGroup(`${NS}/md`); // the first finds the kind's version from its CRD
    c.requests.length = 0;
    await c.provider.listGroup(`${NS}/md`);
    assert.deepEqual(c.requests, [
      'get machinedeployments',
      `list machines ${DEPLOYMENT}=md`,
      `list nodewardenmachines ${DEPLOYMENT}=md`,
    ]);
  });
});

describe("a Machine's state, by providerID", () => {
  it('needs no infrastructure machine when the Machine has the providerID itself', async () => {
    const c = cluster(10, 4);
    assert.equal(await c.provider.nodeState('nw://m-1'), 'Ready');
    assert.deepEqual(c.requests, ['list machines']);
  });

  it('finds one only its infrastructure machine knows with one LIST of the kind, not a GET each', async () => {
    const c = cluster(10, 4);
    assert.equal(await c.provider.nodeState('nw://m-8'), 'Creating');
    assert.equal(c.requests.filter((r) => r.startsWith('get nodewardenmachines')).length, 0);
    assert.equal(c.requests.filter((r) => r.startsWith('list nodewardenmachines')).length, 1);
  });

  it('is Terminated for a providerID no Machine has', async () => {
    const c = cluster(3, 1);
    assert.equal(await c.provider.nodeState('nw://other'), 'Terminated');
  });

  // An operator killed inside createNode, after the replicas went up and before the Machine
  // was listed, asked again on restart: 7 Machines of 4 at surge 2 through Cluster API.
  it('counts the launches the MachineDeployment asks for and no listed Machine answers yet', async () => {
    for (const [machines, replicas, want] of [
      [4, 6, 2],
      [4, 4, 0],
      [4, 3, 0],
    ] as const) {
      const c = cluster(machines, 0, replicas);
      assert.equal(
        (await c.provider.listGroup(`${NS}/md`)).requestedLaunches.length,
        want,
        `${machines} Machines, replicas ${replicas}`,
      );
    }
  });
});
