// The operator needs no more than its generated roles: run the manager as its
// service account (impersonated) with exactly the ClusterRole and the
// leader-election Role that `make manifests` produces, and see no 403.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { leaderElectionRules, managerRules, mergeRules } from '../../src/manifests/rbac.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { ConfigMaps, Events, type K8sObject, Secrets } from '../../src/runtime/resources.ts';
import { A, TICKER_LABEL, tickerController } from '../fixtures/ticker-operator.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  forbiddenCount,
  RoleBindings,
  Roles,
  serviceAccountWithClusterRole,
} from '../harness/rbac.ts';

describe('least privilege', () => {
  const ns = useNamespace('rbac');
  const admin = KubeClient.fromKubeConfig(testKubeConfig());
  const clusterName = `nwtest-rbac-${Date.now().toString(36)}`;
  after(async () => {
    await admin.delete(ClusterRoleBindings, clusterName, undefined, { ignoreNotFound: true });
    await admin.delete(ClusterRoles, clusterName, undefined, { ignoreNotFound: true });
    admin.close();
  });

  it('runs leader election, the cache, reconciles and events as its service account with no 403', async () => {
    const { user, groups, subjects } = await serviceAccountWithClusterRole(
      admin,
      ns(),
      'nodewarden',
      clusterName,
      managerRules([{ controller: tickerController.name, rules: tickerController.rbac }]),
    );
    await admin.create(Roles, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'leader-election', namespace: ns() },
      rules: mergeRules(leaderElectionRules),
    });
    await admin.create(RoleBindings, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'leader-election', namespace: ns() },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'leader-election' },
      subjects,
    });

    const mgr = new Manager({
      kubeConfig: testKubeConfig(),
      client: {
        impersonate: { user, groups },
      },
      leaderElection: { enabled: true, namespace: ns(), name: 'nodewarden-leader', retryPeriodMs: 500 },
      log: createLogger({ level: 'silent' }),
    });
    tickerController.setup(mgr, { maintenanceLeaseNamespace: 'default', clusterId: 'nwtest' });
    const events = mgr.eventRecorder('nodewarden.dev/ticker');
    const stop = new AbortController();
    const before = await forbiddenCount();
    const running = mgr.start(stop.signal);

    const cm = await admin.create(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'rbac', namespace: ns(), labels: { [TICKER_LABEL]: 'true' } },
      data: { count: '0', workMs: '10', periodMs: '100' },
    });
    events.normal(cm as K8sObject, 'Ticked', 'Tick', 'ticking as the service account');
    await eventually('ticks as the service account', async () => {
      const c = await admin.get<K8sObject & { data?: Record<string, string> }>(ConfigMaps, 'rbac', ns());
      return Number(c.data?.count) >= 3 && c.metadata?.annotations?.[A.last] === mgr.identity
        ? true
        : undefined;
    });
    await events.flush();
    const recorded = await admin.list(Events, { namespace: ns() });
    assert.ok(
      recorded.items.some((e) => (e as { reason?: string }).reason === 'Ticked'),
      'event written',
    );
    stop.abort();
    await running;
    assert.equal((await forbiddenCount()) - before, 0, 'no request was forbidden');

    // The control: the impersonation really applied, so the role is what allowed the above.
    const asOperator = KubeClient.fromKubeConfig(testKubeConfig(), { impersonate: { user } });
    await assert.rejects(
      asOperator.list(Secrets, { namespace: ns() }),
      (err: { statusCode?: number }) => err.statusCode === 403,
    );
    asOperator.close();
  });
});
