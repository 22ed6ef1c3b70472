// The upgrade controllers need no more than their generated rules: run them,
// with maintenance (their drains) and discovery, as a service account holding
// exactly the ClusterRole `make manifests` produces, roll a small fleet, and
// see no 403.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { NodeVersions, ScalingGroups } from '../../src/api/upgrade.ts';
import { controllers } from '../../src/capabilities.ts';
import { managerRules } from '../../src/manifests/rbac.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { Upgrade } from '../../src/upgrade/names.ts';
import { SimulatedCloudProvider } from '../../src/upgrade/providers/simulated/provider.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  forbiddenCount,
  selfGrant,
  serviceAccountWithClusterRole,
} from '../harness/rbac.ts';
import { getNodeVersion, groupNodes, imageOf, rolloutDone, TestCloud } from '../harness/rollout.ts';

describe('upgrade controllers, least privilege', { timeout: 180_000 }, () => {
  const ns = useNamespace('uprbac');
  const admin = KubeClient.fromKubeConfig(testKubeConfig());
  const run = Date.now().toString(36).slice(-5);
  const name = `nwtest-uprbac-${run}`;
  const group = `rbac-${run}`;
  let cloud: TestCloud | undefined;
  after(async () => {
    await admin.delete(NodeVersions.type, Upgrade.defaultNodeVersion, undefined, { ignoreNotFound: true });
    await cloud?.deleteGroupInstances(group).catch(() => {});
    await admin.delete(ClusterRoleBindings, name, undefined, { ignoreNotFound: true });
    await admin.delete(ClusterRoles, name, undefined, { ignoreNotFound: true });
    admin.close();
  });

  it('discovers a group and rolls it as the service account with no 403', async () => {
    cloud = await TestCloud.connect(admin);
    await cloud.call('POST', '/settings', { bootDelayMs: 500 });
    await cloud.createGroups(`rbac-cluster-${run}`, [{ id: group, role: 'Worker', size: 2 }]);
    await eventually('2 nodes', async () =>
      (await groupNodes(admin, group)).length === 2 ? true : undefined,
    );

    const { user, groups } = await serviceAccountWithClusterRole(
      admin,
      ns(),
      'nodewarden',
      name,
      managerRules(controllers.map((c) => ({ controller: c.name, rules: c.rbac }))),
    );

    const mgr = new Manager({
      kubeConfig: testKubeConfig(),
      client: {
        impersonate: { user, groups },
      },
      log: createLogger({ level: 'silent' }),
    });
    const options = {
      leaseNamespace: ns(),
      clusterId: `rbac-cluster-${run}`,
      cloud: new SimulatedCloudProvider({ endpoint: cloud.endpoint }),
    };
    for (const c of controllers) await c.setup(mgr, options);
    const before = await forbiddenCount();
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      await eventually('the discovered ScalingGroup', async () =>
        (await admin.list(ScalingGroups.type)).items.some(
          (g) => (g as { spec?: { groupId?: string } }).spec?.groupId === group,
        )
          ? true
          : undefined,
      );
      await admin.create(NodeVersions.type, {
        apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
        kind: 'NodeVersion',
        metadata: { name: Upgrade.defaultNodeVersion },
        spec: { image: 'nwos-2.0.0', strategy: { maxSurge: 2, maxUnavailable: 2 } },
      });
      await eventually(
        'the rollout done',
        async () => (rolloutDone(await getNodeVersion(admin, Upgrade.defaultNodeVersion)) ? true : undefined),
        90_000,
      );
      const nodes = await groupNodes(admin, group);
      assert.deepEqual(nodes.map(imageOf), ['nwos-2.0.0', 'nwos-2.0.0']);
      // Deleted while the operator runs: its finalizer (the autoscaler's restore) comes off, as the service account.
      await admin.delete(NodeVersions.type, Upgrade.defaultNodeVersion);
      await eventually('the NodeVersion gone', async () =>
        (await admin.list(NodeVersions.type)).items.some(
          (v) => v.metadata?.name === Upgrade.defaultNodeVersion,
        )
          ? undefined
          : true,
      );
    } finally {
      stop.abort();
      await running;
    }
    assert.equal((await forbiddenCount()) - before, 0, 'no request was forbidden');
    const asOperator = KubeClient.fromKubeConfig(testKubeConfig(), { impersonate: { user } });
    // Beyond its rules it is refused: it cannot grant itself more.
    await assert.rejects(
      asOperator.create(ClusterRoleBindings, selfGrant(`nope-${run}`)),
      (err: { statusCode?: number }) => err.statusCode === 403,
    );
    asOperator.close();
  });
});
