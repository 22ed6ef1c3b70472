// TenantCluster's schema and CEL rules as the real API server applies them:
// what is wrong is refused with a message naming it; a good spec is taken
// with its defaults filled in.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type TenantCluster, type TenantClusterSpecType, TenantClusters } from '../../src/api/tenant.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';

const TC = TenantClusters.type;
const client = KubeClient.fromKubeConfig(testKubeConfig());

const good = (): TenantClusterSpecType => ({
  nodes: {
    ControlPlane: { topologyKey: 'topology.nodewarden.dev/rack', count: { active: 3 } },
    Worker: { count: { active: 2, standby: 1 } },
  },
  services: {
    controlPlaneLoadBalancer: { nodePort: 30000, nodeInterfaceId: 'oam-ipv4' },
    workerLoadBalancer: { nodePortRange: { start: 30002, end: 30011 }, nodeInterfaceId: 'oam-ipv4' },
    jumpHost: { nodePort: 30022, nodeSSHPrivateKeys: 'keys', nodeInterfaceId: 'oam-ipv4' },
  },
});

describe('TenantCluster validation by the API server', () => {
  const ns = useNamespace('tenant-api');
  after(() => client.close());
  let n = 0;
  const create = (spec: unknown, name = `tc-${n++}`) =>
    client.create<TenantCluster>(TC, {
      apiVersion: TenantClusters.apiVersion,
      kind: 'TenantCluster',
      metadata: { name, namespace: ns() },
      spec,
    } as never);

  it('takes a good spec and fills in the defaults', async () => {
    const tc = await create(good());
    assert.equal(tc.spec.nodes.ControlPlane?.count.standby, 0);
    assert.equal(tc.spec.nodes.ControlPlane?.topologyScope, 'Role');
    // Gone before the next suite: a later operator would otherwise schedule it onto that suite's hosts.
    await client.delete(TC, tc.metadata.name!, ns());
    await eventually(`${tc.metadata.name} deleted`, async () =>
      client.get(TC, tc.metadata.name!, ns()).then(
        () => undefined,
        (err: unknown) => (isNotFound(err) ? true : undefined),
      ),
    );
  });

  const bad: [string, (s: TenantClusterSpecType) => unknown, RegExp][] = [
    [
      'a role other than ControlPlane or Worker',
      (s) => ({ ...s, nodes: { ControlPlane: s.nodes.ControlPlane, Storage: { count: { active: 1 } } } }),
      /nodes keys must be ControlPlane or Worker/,
    ],
    [
      'no roles at all',
      (s) => ({ ...s, nodes: {} }),
      /spec\.nodes.*should have at least 1 properties|minProperties|at least 1/i,
    ],
    [
      'a negative count',
      (s) => ({ ...s, nodes: { Worker: { count: { active: -1 } } } }),
      /spec\.nodes\.Worker\.count\.active.*greater than or equal to 0/,
    ],
    [
      'a negative standby',
      (s) => ({ ...s, nodes: { Worker: { count: { active: 1, standby: -2 } } } }),
      /standby.*greater than or equal to 0/,
    ],
    [
      'an unknown topologyScope',
      (s) => ({ ...s, nodes: { Worker: { topologyKey: 'k', topologyScope: 'Rack', count: { active: 1 } } } }),
      /Unsupported value: "Rack"/,
    ],
    [
      'topologyScope Cluster without a topologyKey',
      (s) => ({ ...s, nodes: { Worker: { topologyScope: 'Cluster', count: { active: 1 } } } }),
      /topologyScope Cluster needs a topologyKey/,
    ],
    [
      'a nodePort outside 30000-32767',
      (s) => ({
        ...s,
        services: {
          ...s.services,
          controlPlaneLoadBalancer: { nodePort: 6443, nodeInterfaceId: 'oam-ipv4' },
        },
      }),
      /nodePort.*greater than or equal to 30000/,
    ],
    [
      'a port range running backwards',
      (s) => ({
        ...s,
        services: {
          ...s.services,
          workerLoadBalancer: { nodePortRange: { start: 30011, end: 30002 }, nodeInterfaceId: 'oam-ipv4' },
        },
      }),
      /nodePortRange\.start must not be above nodePortRange\.end/,
    ],
    [
      'a control-plane port inside the worker range',
      (s) => ({
        ...s,
        services: {
          ...s.services,
          controlPlaneLoadBalancer: { nodePort: 30005, nodeInterfaceId: 'oam-ipv4' },
        },
      }),
      /controlPlaneLoadBalancer\.nodePort lies inside workerLoadBalancer\.nodePortRange/,
    ],
    [
      'the jump host on the control-plane port',
      (s) => ({
        ...s,
        services: {
          ...s.services,
          jumpHost: { nodePort: 30000, nodeSSHPrivateKeys: 'k', nodeInterfaceId: 'oam-ipv4' },
        },
      }),
      /jumpHost\.nodePort equals controlPlaneLoadBalancer\.nodePort/,
    ],
    [
      'a jump host without its keys Secret',
      (s) => ({ ...s, services: { jumpHost: { nodePort: 30022, nodeInterfaceId: 'oam-ipv4' } } }),
      /nodeSSHPrivateKeys: Required value/,
    ],
    [
      'a load balancer without an interface id',
      (s) => ({ ...s, services: { controlPlaneLoadBalancer: { nodePort: 30000 } } }),
      /nodeInterfaceId: Required value/,
    ],
    [
      'a selector expression In without values',
      (s) => ({
        ...s,
        nodes: {
          Worker: {
            labelSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] },
            count: { active: 1 },
          },
        },
      }),
      /In and NotIn need values/,
    ],
  ];
  for (const [what, change, message] of bad) {
    it(`refuses ${what}`, async () => {
      await assert.rejects(create(change(good())), (err: Error) => {
        assert.match(err.message, message);
        return true;
      });
    });
  }

  it('refuses a name too long to be a label value', async () => {
    await assert.rejects(create(good(), `x${'a'.repeat(70)}`), /name must be at most 63 characters/);
  });

  it('the in-process validator agrees on shape errors', () => {
    const v = TenantClusters.validate({
      apiVersion: TenantClusters.apiVersion,
      kind: 'TenantCluster',
      metadata: {},
      spec: { nodes: { Worker: { count: { active: -1 } } } },
    });
    assert.equal(v.ok, false);
  });
});
