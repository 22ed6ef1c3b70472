// A ScalingGroup's own rollout budgets (spec.rollout) on the real API server:
// what its schema accepts and refuses, and a rollout that keeps one group to its
// own surge while another uses the NodeVersion's larger overall budget.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NodeVersions, ScalingGroups } from '../../src/api/upgrade.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isInvalid } from '../../src/runtime/errors.ts';
import { Events, type K8sObject } from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';
import {
  createNodeVersion,
  type GroupDef,
  getNodeVersion,
  groupNodes,
  imageOf,
  isReady,
  removeFleet,
  rolloutDone,
  TestCloud,
} from '../harness/rollout.ts';

const SG = ScalingGroups.type;
const NEW_IMAGE = 'nwos-2.0.0';
const run = Date.now().toString(36).slice(-5);

const scalingGroup = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
  kind: 'ScalingGroup',
  metadata: { name },
  spec: { groupId: name, role: 'Worker', ...spec },
});

/** The API server's message when it refuses `p` as invalid. */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(isInvalid(err), `refused as invalid, not: ${String(err)}`);
    return (err as Error).message;
  }
  throw new Error('the server accepted it');
}

describe("a ScalingGroup's rollout budgets in its schema", () => {
  const client = KubeClient.fromKubeConfig(testKubeConfig(), { qps: 0 });
  const made: string[] = [];
  const create = (name: string, spec: Record<string, unknown>) => {
    made.push(name);
    return client.create(SG, scalingGroup(name, spec));
  };
  after(async () => {
    for (const name of made) await client.delete(SG, name, undefined, { ignoreNotFound: true });
    client.close();
  });

  it('accepts all three, and none (only the NodeVersion budgets apply)', async () => {
    const rollout = { maxSurge: 1, maxUnavailable: 2, maxSize: 12 };
    const got = await create(`sg-ok-${run}`, { min: 1, max: 10, rollout });
    assert.deepEqual((got as { spec: { rollout?: unknown } }).spec.rollout, rollout);
    const plain = await create(`sg-plain-${run}`, { min: 1, max: 10 });
    assert.equal((plain as { spec: { rollout?: unknown } }).spec.rollout, undefined);
  });

  it('refuses a budget below 1 and a fractional one', async () => {
    assert.match(
      await refusal(create(`sg-zero-${run}`, { rollout: { maxSurge: 0 } })),
      /spec\.rollout\.maxSurge: Invalid value: 0: .*greater than or equal to 1/,
    );
    assert.match(
      await refusal(create(`sg-unav-${run}`, { rollout: { maxUnavailable: 0 } })),
      /spec\.rollout\.maxUnavailable: Invalid value: 0/,
    );
    assert.match(
      await refusal(create(`sg-frac-${run}`, { rollout: { maxSize: 2.5 } })),
      /spec\.rollout\.maxSize: Invalid value: .*must be of type integer/,
    );
  });

  it('refuses a maxSize that leaves a group at its min no room for a new node, with its message', async () => {
    assert.match(
      await refusal(create(`sg-tight-${run}`, { min: 3, rollout: { maxSize: 3 } })),
      /spec\.rollout\.maxSize must exceed spec\.min/,
    );
    await create(`sg-roomy-${run}`, { min: 3, rollout: { maxSize: 4 } });
  });
});

describe("a NodeVersion's budgets in its schema: counts or percentages, as a Deployment's", () => {
  const client = KubeClient.fromKubeConfig(testKubeConfig(), { qps: 0 });
  const made: string[] = [];
  const create = (name: string, strategy: Record<string, unknown>) => {
    made.push(name);
    return client.create<{ spec: { strategy?: Record<string, unknown> } }>(
      NodeVersions.type,
      NodeVersions.make({ name }, { image: 'img', strategy } as never),
    );
  };
  after(async () => {
    for (const name of made)
      await client.delete(NodeVersions.type, name, undefined, { ignoreNotFound: true });
    client.close();
  });

  it('stores a count as an integer and a percentage as a string', async () => {
    const counted = await create(`nv-int-${run}`, { maxSurge: 3, maxUnavailable: 2 });
    assert.deepEqual([counted.spec.strategy?.maxSurge, counted.spec.strategy?.maxUnavailable], [3, 2]);
    const percent = await create(`nv-pct-${run}`, { maxSurge: '25%', maxUnavailable: '10%' });
    assert.deepEqual(
      [percent.spec.strategy?.maxSurge, percent.spec.strategy?.maxUnavailable],
      ['25%', '10%'],
    );
  });

  it('accepts maxUnavailable 0 with a surge: a surge-only rollout', async () => {
    const got = await create(`nv-surge-only-${run}`, { maxSurge: 2, maxUnavailable: 0 });
    assert.equal(got.spec.strategy?.maxUnavailable, 0);
  });

  it('refuses a string that is not a percentage, and a percentage out of range', async () => {
    assert.match(
      await refusal(create(`nv-bad-${run}`, { maxSurge: 'ten' })),
      /spec\.strategy\.maxSurge: Invalid value: "ten": spec\.strategy\.maxSurge in body should match/,
    );
    assert.match(
      await refusal(create(`nv-over-${run}`, { maxUnavailable: '120%' })),
      /spec\.strategy\.maxUnavailable: Invalid value: "120%"/,
    );
  });

  it('refuses both 0, saying why', async () => {
    assert.match(
      await refusal(create(`nv-zero-${run}`, { maxSurge: 0, maxUnavailable: 0 })),
      /maxSurge and maxUnavailable cannot both be 0: no node could ever be replaced/,
    );
  });
});

describe('a rollout under per-group budgets', { timeout: 300_000 }, () => {
  const ns = useNamespace('budgets');
  const client = KubeClient.fromKubeConfig(testKubeConfig(), { qps: 0 });
  let cloud: TestCloud;
  let operator: OperatorProcess | undefined;

  before(async () => {
    cloud = await TestCloud.connect(client);
    await cloud.call('POST', '/settings', { bootDelayMs: 1000 });
    operator = startOperator([
      '--cloud-provider',
      'simulated',
      '--controllers',
      'nodemaintenance,nodeversion,scalinggroup,pendingnode',
      '--webhook-bind-address',
      '0',
      '--maintenance-lease-namespace',
      ns(),
    ]);
  });
  after(async () => {
    await operator?.stop();
    await cloud?.call('POST', '/settings', { bootDelayMs: 5000 }).catch(() => {});
    client.close();
  });

  it('clamps a surge beyond what its groups hold and says so in a Warning Event', async () => {
    const nv = `clamp-${run}`;
    const [a, b] = [`${nv}-a`, `${nv}-b`];
    try {
      await client.create(SG, scalingGroup(a, { nodeVersion: nv, min: 1, max: 10 }));
      await client.create(SG, scalingGroup(b, { nodeVersion: nv, min: 1, max: 10, rollout: { maxSize: 4 } }));
      // Paused: the operator observes and plans, and starts nothing.
      await createNodeVersion(client, nv, NEW_IMAGE, { maxSurge: 100000, paused: true });
      const event = await eventually(
        'a SurgeClamped Event',
        async () =>
          (
            await client.list<
              K8sObject & { reason?: string; note?: string; type?: string; regarding?: { name?: string } }
            >(Events, { namespace: 'default' })
          ).items.find((e) => e.regarding?.name === nv && e.reason === 'SurgeClamped'),
        30_000,
      );
      assert.equal(event.type, 'Warning');
      assert.match(
        event.note ?? '',
        /^maxSurge 100000 is more than the scaling groups can hold \(14: .*\); surging at most 14 nodes at once$/,
      );
      for (const bound of [`${a} max 10`, `${b} maxSize 4`]) assert.ok(event.note?.includes(bound), bound);
    } finally {
      await client.delete(NodeVersions.type, nv, undefined, { ignoreNotFound: true });
      for (const g of [a, b]) await client.delete(SG, g, undefined, { ignoreNotFound: true });
    }
  });

  it('keeps a group with maxSurge 1 to one new node at a time under an overall surge of 3', async () => {
    const nv = `budget-${run}`;
    const groups: GroupDef[] = [
      { id: `${nv}-a`, role: 'Worker', size: 3 },
      { id: `${nv}-b`, role: 'Worker', size: 3 },
    ];
    const [a, b] = groups.map((g) => g.id) as [string, string];
    try {
      await cloud.createGroups(`it-${nv}`, groups);
      await eventually(
        '6 Ready nodes',
        async () => {
          const nodes = [...(await groupNodes(client, a)), ...(await groupNodes(client, b))];
          return nodes.filter(isReady).length === 6 ? true : undefined;
        },
        60_000,
      );

      // Instances alive per group, sampled while it rolls: size + the surge in flight.
      const most = new Map([
        [a, 0],
        [b, 0],
      ]);
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          for (const g of [a, b]) {
            const live = (await cloud.instances(g)).filter((i) => i.state !== 'Terminated').length;
            most.set(g, Math.max(most.get(g)!, live));
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      })();

      const common = { nodeVersion: nv, min: 1, max: 100 };
      await client.create(SG, scalingGroup(a, { ...common, rollout: { maxSurge: 1 } }));
      await client.create(SG, scalingGroup(b, common));
      await createNodeVersion(client, nv, NEW_IMAGE, { maxSurge: 3, maxUnavailable: 3 });
      await eventually(
        `NodeVersion ${nv} to finish`,
        async () => (rolloutDone(await getNodeVersion(client, nv)) ? true : undefined),
        180_000,
        250,
      );
      sampling = false;
      await sampler;

      for (const g of groups) {
        const nodes = await groupNodes(client, g.id);
        assert.equal(nodes.length, g.size, `${g.id} keeps its size`);
        assert.ok(
          nodes.every((n) => imageOf(n) === NEW_IMAGE && isReady(n)),
          `all of ${g.id} Ready on ${NEW_IMAGE}`,
        );
        assert.equal(
          (await cloud.instances(g.id)).length,
          2 * g.size,
          `${g.id}: one new instance per old one`,
        );
      }
      assert.ok(most.get(a)! <= 4, `group a: never more than one new node at once (saw ${most.get(a)! - 3})`);
      assert.ok(
        most.get(b)! >= 5,
        `group b: more than one at once, under the overall 3 (saw ${most.get(b)! - 3})`,
      );
      assert.ok(most.get(b)! <= 6, `group b: within the overall surge (saw ${most.get(b)! - 3})`);
    } finally {
      await removeFleet(client, cloud, nv, groups);
    }
  });
});
