import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnyCustomResource, JSONSchemaProps } from '../../../src/api/index.ts';
import {
  AutoscalingStrategies,
  type AutoscalingStrategy,
  type NodeVersion,
  NodeVersions,
  type PendingNode,
  PendingNodes,
  type ScalingGroup,
  ScalingGroups,
} from '../../../src/api/upgrade.ts';
import { customResources } from '../../../src/capabilities.ts';
import { structuralProblems } from './structural.ts';

const definitions = [
  {
    def: NodeVersions as unknown as AnyCustomResource,
    name: 'nodeversions.upgrade.nodewarden.dev',
    kind: 'NodeVersion',
    shortNames: ['nv'],
    columns: ['Image', 'Version', 'UpToDate', 'Outdated', 'Age'],
  },
  {
    def: ScalingGroups as unknown as AnyCustomResource,
    name: 'scalinggroups.upgrade.nodewarden.dev',
    kind: 'ScalingGroup',
    shortNames: ['sg'],
    columns: ['Group', 'Role', 'Min', 'Max', 'Image', 'Age'],
  },
  {
    def: PendingNodes as unknown as AnyCustomResource,
    name: 'pendingnodes.upgrade.nodewarden.dev',
    kind: 'PendingNode',
    shortNames: ['pn'],
    columns: ['Node', 'Goal', 'State', 'Reached', 'Deadline', 'Age'],
  },
  {
    def: AutoscalingStrategies as unknown as AnyCustomResource,
    name: 'autoscalingstrategies.upgrade.nodewarden.dev',
    kind: 'AutoscalingStrategy',
    shortNames: ['as'],
    columns: ['Enabled', 'Deployment', 'Replicas', 'Age'],
  },
];

/** Resolves a printer column's jsonPath (`.a.b.c`) against the schema. */
function schemaAt(root: JSONSchemaProps, jsonPath: string): JSONSchemaProps | undefined {
  let node: JSONSchemaProps | undefined = root;
  for (const seg of jsonPath.split('.').slice(1)) node = node?.properties?.[seg];
  return node;
}

function specOf(def: AnyCustomResource): JSONSchemaProps {
  return def.crd().spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
}

describe('upgrade.nodewarden.dev CRDs', () => {
  for (const d of definitions) {
    describe(d.kind, () => {
      const crd = d.def.crd();
      const version = crd.spec.versions[0]!;
      const root = version.schema.openAPIV3Schema;

      it('is cluster-scoped in upgrade.nodewarden.dev/v1alpha1 with its short names', () => {
        assert.equal(crd.metadata.name, d.name);
        assert.equal(crd.spec.group, 'upgrade.nodewarden.dev');
        assert.equal(crd.spec.scope, 'Cluster');
        assert.equal(crd.spec.names.kind, d.kind);
        assert.equal(crd.spec.names.listKind, `${d.kind}List`);
        assert.deepEqual(crd.spec.names.shortNames, d.shortNames);
        assert.equal(version.name, 'v1alpha1');
        assert.equal(d.def.apiVersion, 'upgrade.nodewarden.dev/v1alpha1');
        assert.equal(d.def.type.namespaced, false);
      });

      it('has a structural schema and a status subresource', () => {
        assert.deepEqual(structuralProblems(root, '<root>'), []);
        assert.deepEqual(version.subresources, { status: {} });
        assert.equal(root.properties?.status?.type, 'object');
      });

      it('has its printer columns, each pointing at a field of the schema', () => {
        const columns = version.additionalPrinterColumns;
        assert.deepEqual(
          columns.map((c) => c.name),
          d.columns,
        );
        for (const c of columns) {
          if (c.jsonPath.startsWith('.metadata.')) continue;
          assert.ok(schemaAt(root, c.jsonPath), `${c.name}: ${c.jsonPath} is not in the schema`);
        }
      });
    });
  }

  it('are shipped with the suite', () => {
    const names = customResources.map((r) => r.name);
    for (const d of definitions) assert.ok(names.includes(d.name), d.name);
  });
});

describe('NodeVersion', () => {
  const good = (): NodeVersion =>
    NodeVersions.make({ name: 'cluster' }, { image: 'img-v2', imageVersion: 'v2.0.0' });

  it('accepts a minimal object and fills in the rollout strategy defaults', () => {
    const result = NodeVersions.validate(good());
    assert.ok(result.ok, result.ok ? '' : result.errors.join('; '));
    assert.deepEqual(result.value.spec.strategy, {
      maxSurge: 1,
      maxUnavailable: 1,
      controlPlaneFirst: true,
      drainTimeout: '30m',
      nodeReadyTimeout: '15m',
      paused: false,
    });
  });

  it('accepts a full object with status', () => {
    const nv: NodeVersion = {
      ...good(),
      spec: {
        image: 'img-v2',
        kubernetesVersion: 'v1.37.1',
        strategy: { maxSurge: 3, maxUnavailable: 2, drainTimeout: '1h30m', paused: true },
      },
      status: {
        upToDate: ['n1'],
        outdated: ['n2', 'n3'],
        donors: ['n2'],
        heirs: ['n4'],
        counts: { total: 4, upToDate: 1, outdated: 2, donors: 1, heirs: 1 },
        conditions: [
          {
            type: 'Outdated',
            status: 'True',
            reason: 'NodeVersionsOutOfDate',
            message: '2 nodes outdated',
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
        observedGeneration: 2,
        startTime: '2026-01-01T00:00:00Z',
      },
    };
    const result = NodeVersions.validate(nv);
    assert.ok(result.ok, result.ok ? '' : result.errors.join('; '));
    assert.equal(result.value.spec.strategy?.maxSurge, 3);
    assert.equal(result.value.spec.strategy?.nodeReadyTimeout, '15m');
  });

  it('rejects a missing image', () => {
    const nv = good() as unknown as { spec: Record<string, unknown> };
    delete nv.spec.image;
    const result = NodeVersions.validate(nv);
    assert.deepEqual(!result.ok && result.errors, ['spec.image: Required value']);
  });

  it('rejects a surge of 0, and accepts maxUnavailable 0 (a surge-only rollout)', () => {
    const surge = NodeVersions.validate({ ...good(), spec: { image: 'i', strategy: { maxSurge: 0 } } });
    assert.deepEqual(!surge.ok && surge.errors, ['spec.strategy.maxSurge: must be >= 1']);
    const unavailable = { ...good(), spec: { image: 'i', strategy: { maxUnavailable: 0 } } };
    assert.equal(NodeVersions.validate(unavailable).ok, true);
  });

  it('takes a budget as a count or a percentage, as a Deployment does', () => {
    for (const strategy of [
      { maxSurge: '25%', maxUnavailable: '10%' },
      { maxSurge: '150%', maxUnavailable: '100%' },
      { maxSurge: 3, maxUnavailable: '0%' },
    ]) {
      const result = NodeVersions.validate({ ...good(), spec: { image: 'i', strategy } });
      assert.equal(result.ok, true, JSON.stringify(strategy));
    }
    for (const [strategy, field] of [
      [{ maxSurge: 'ten' }, 'maxSurge'],
      [{ maxSurge: '0%' }, 'maxSurge'],
      [{ maxUnavailable: '101%' }, 'maxUnavailable'],
      [{ maxUnavailable: '5' }, 'maxUnavailable'],
    ] as const) {
      const result = NodeVersions.validate({ ...good(), spec: { image: 'i', strategy } });
      assert.match(
        !result.ok ? result.errors.join() : '',
        new RegExp(`spec\\.strategy\\.${field}: must match pattern`),
      );
    }
  });

  it('rejects a malformed Kubernetes version or timeout', () => {
    for (const spec of [
      { image: 'i', kubernetesVersion: '1.37.1' },
      { image: 'i', kubernetesVersion: 'v1.37' },
      { image: 'i', strategy: { drainTimeout: '30 minutes' } },
      { image: 'i', strategy: { nodeReadyTimeout: '-1m' } },
    ]) {
      const result = NodeVersions.validate({ ...good(), spec });
      assert.equal(result.ok, false, JSON.stringify(spec));
      assert.ok(!result.ok && result.errors.every((e) => e.includes('must match pattern')));
    }
  });

  it('keys conditions by type and reuses the shared Condition schema', () => {
    const conditions = statusOf(NodeVersions).conditions;
    assert.equal(conditions?.['x-kubernetes-list-type'], 'map');
    assert.deepEqual(conditions?.['x-kubernetes-list-map-keys'], ['type']);
    assert.deepEqual(conditions?.items?.required, [
      'lastTransitionTime',
      'message',
      'reason',
      'status',
      'type',
    ]);
    assert.deepEqual(conditions?.items?.properties?.status?.enum, ['True', 'False', 'Unknown']);
  });

  it('defaults the strategy in the CRD as well', () => {
    const strategy = specOf(NodeVersions as unknown as AnyCustomResource).properties?.strategy;
    assert.deepEqual(strategy?.default, {});
    assert.equal(strategy?.properties?.maxSurge?.default, 1);
    assert.equal(strategy?.properties?.maxSurge?.minimum, 1);
    assert.equal(strategy?.properties?.maxSurge?.['x-kubernetes-int-or-string'], true);
    assert.deepEqual(strategy?.properties?.maxUnavailable?.anyOf, [{ type: 'integer' }, { type: 'string' }]);
    assert.equal(strategy?.properties?.maxUnavailable?.minimum, 0);
    assert.match(String(strategy?.['x-kubernetes-validations']?.[0]?.message), /cannot both be 0/);
    assert.equal(strategy?.properties?.drainTimeout?.default, '30m');
  });
});

function statusOf(def: { crd(): ReturnType<typeof NodeVersions.crd> }): Record<string, JSONSchemaProps> {
  return def.crd().spec.versions[0]!.schema.openAPIV3Schema.properties!.status!.properties!;
}

describe('ScalingGroup', () => {
  const good = (): ScalingGroup =>
    ScalingGroups.make(
      { name: 'workers' },
      { groupId: 'sim/workers', nodeVersion: 'cluster', role: 'Worker', min: 1, max: 5 },
    );

  it('accepts a good object and defaults autoscaling to off', () => {
    const result = ScalingGroups.validate(good());
    assert.ok(result.ok, result.ok ? '' : result.errors.join('; '));
    assert.equal(result.value.spec.autoscaling, false);
  });

  it('rejects an unknown role and a missing groupId', () => {
    const bad = ScalingGroups.validate({ ...good(), spec: { ...good().spec, role: 'Etcd' } });
    assert.deepEqual(!bad.ok && bad.errors, [
      'spec.role: Unsupported value: must be one of "ControlPlane", "Worker"',
    ]);
    const sg = good() as unknown as { spec: Record<string, unknown> };
    delete sg.spec.groupId;
    const missing = ScalingGroups.validate(sg);
    assert.deepEqual(!missing.ok && missing.errors, ['spec.groupId: Required value']);
  });

  it('rejects negative bounds', () => {
    const result = ScalingGroups.validate({ ...good(), spec: { ...good().spec, min: -1 } });
    assert.deepEqual(!result.ok && result.errors, ['spec.min: must be >= 0']);
  });

  it('makes groupId immutable and requires min <= max through CEL', () => {
    const spec = specOf(ScalingGroups as unknown as AnyCustomResource);
    assert.deepEqual(spec.required, ['groupId']);
    assert.deepEqual(
      spec.properties?.groupId?.['x-kubernetes-validations']?.map((r) => r.rule),
      ['self == oldSelf'],
    );
    const root = ScalingGroups.crd().spec.versions[0]!.schema.openAPIV3Schema;
    const rules = root['x-kubernetes-validations'] ?? [];
    assert.equal(rules.length, 1);
    assert.match(rules[0]!.rule, /self\.spec\.min <= self\.spec\.max/);
    assert.deepEqual(spec.properties?.role?.enum, ['ControlPlane', 'Worker']);
  });
});

describe('PendingNode', () => {
  const good = (): PendingNode =>
    PendingNodes.make(
      { name: 'n5' },
      {
        providerID: 'sim://workers/n5',
        groupID: 'sim/workers',
        nodeName: 'n5',
        goal: 'Join',
        deadline: '2026-01-01T00:10:00Z',
      },
    );

  it('accepts a good object with status', () => {
    const result = PendingNodes.validate({ ...good(), status: { cspState: 'Creating', reachedGoal: false } });
    assert.ok(result.ok, result.ok ? '' : result.errors.join('; '));
  });

  it('rejects an unknown goal, an unknown cloud state and a bad deadline', () => {
    const goal = PendingNodes.validate({ ...good(), spec: { ...good().spec, goal: 'Stay' } });
    assert.deepEqual(!goal.ok && goal.errors, [
      'spec.goal: Unsupported value: must be one of "Join", "Leave"',
    ]);
    const state = PendingNodes.validate({ ...good(), status: { cspState: 'Booting' } });
    assert.equal(state.ok, false);
    assert.match(!state.ok ? state.errors.join() : '', /status\.cspState: Unsupported value/);
    const deadline = PendingNodes.validate({ ...good(), spec: { ...good().spec, deadline: 'tomorrow' } });
    assert.equal(deadline.ok, false);
  });

  it('requires providerID, groupID and nodeName', () => {
    const pn = good() as unknown as { spec: Record<string, unknown> };
    delete pn.spec.providerID;
    delete pn.spec.groupID;
    delete pn.spec.nodeName;
    const result = PendingNodes.validate(pn);
    assert.deepEqual(!result.ok && result.errors.sort(), [
      'spec.groupID: Required value',
      'spec.nodeName: Required value',
      'spec.providerID: Required value',
    ]);
    assert.deepEqual(statusOf(PendingNodes).cspState?.enum, [
      'Unknown',
      'Creating',
      'Ready',
      'Stopped',
      'Terminating',
      'Terminated',
      'Failed',
    ]);
  });
});

describe('AutoscalingStrategy', () => {
  const good = (): AutoscalingStrategy =>
    AutoscalingStrategies.make(
      { name: 'autoscaler' },
      {
        enabled: true,
        deploymentName: 'cluster-autoscaler',
        deploymentNamespace: 'kube-system',
        autoscalerExtraArgs: { 'scale-down-delay-after-add': '5m' },
      },
    );

  it('accepts a good object with status', () => {
    const result = AutoscalingStrategies.validate({ ...good(), status: { enabled: true, replicas: 1 } });
    assert.ok(result.ok, result.ok ? '' : result.errors.join('; '));
  });

  it('requires the Deployment namespace and takes extra args as a string map', () => {
    const as = good() as unknown as { spec: Record<string, unknown> };
    delete as.spec.deploymentNamespace;
    const result = AutoscalingStrategies.validate(as);
    assert.deepEqual(!result.ok && result.errors, ['spec.deploymentNamespace: Required value']);
    const args = AutoscalingStrategies.validate({
      ...good(),
      spec: { ...good().spec, autoscalerExtraArgs: { 'max-nodes-total': 10 } },
    });
    assert.equal(args.ok, false);
    // A string map, bounded (test/integration/upgrade-crd.test.ts tries the bounds on the API server).
    const schema = specOf(AutoscalingStrategies as unknown as AnyCustomResource).properties
      ?.autoscalerExtraArgs as Record<string, unknown>;
    assert.equal(schema.type, 'object');
    assert.deepEqual(schema.additionalProperties, { type: 'string', maxLength: 1024 });
    assert.equal(schema.maxProperties, 64);
  });
});
