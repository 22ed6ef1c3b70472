// The simulated Cluster API infrastructure's machine steps (real Cluster API
// controllers drive it in test/integration/upgrade-clusterapi.test.ts), and its
// CRDs carrying the contract label Cluster API finds providers by.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CONTRACT_LABEL,
  NEVER_BOOT_ANNOTATION,
  NodewardenClusters,
  type NodewardenMachine,
  NodewardenMachines,
  NodewardenMachineTemplates,
} from '../../../../src/cluster/infra/clusterapi/api.ts';
import { machineNodeName, planMachine } from '../../../../src/cluster/infra/clusterapi/machine-controller.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const m = (
  o: { providerID?: string; delay?: number; provisioned?: boolean; neverBoot?: boolean } = {},
): NodewardenMachine => ({
  apiVersion: 'infrastructure.nodewarden.dev/v1alpha1',
  kind: 'NodewardenMachine',
  metadata: {
    name: 'md-abc-x1',
    namespace: 'ns',
    creationTimestamp: new Date(T0).toISOString(),
    ownerReferences: [
      { apiVersion: 'cluster.x-k8s.io/v1beta2', kind: 'Machine', name: 'md-abc-x1y', uid: 'u' },
    ],
    ...(o.neverBoot ? { annotations: { [NEVER_BOOT_ANNOTATION]: 'true' } } : {}),
  },
  spec: {
    image: 'img',
    ...(o.providerID ? { providerID: o.providerID } : {}),
    ...(o.delay !== undefined ? { bootDelaySeconds: o.delay } : {}),
  },
  ...(o.provisioned ? { status: { initialization: { provisioned: true } } } : {}),
});

describe('a simulated machine, step by step', () => {
  const cases: [string, NodewardenMachine, number, ReturnType<typeof planMachine>][] = [
    [
      'gets its providerID first',
      m(),
      T0,
      { kind: 'setProviderID', providerID: 'nodewarden://ns/md-abc-x1' },
    ],
    [
      'waits out its boot delay',
      m({ providerID: 'p', delay: 5 }),
      T0 + 2000,
      { kind: 'waitForBoot', inMs: 3000 },
    ],
    ['boots once the delay is over', m({ providerID: 'p', delay: 5 }), T0 + 5000, { kind: 'boot' }],
    ['boots after 2 s by default', m({ providerID: 'p' }), T0 + 2000, { kind: 'boot' }],
    [
      'never boots when annotated so',
      m({ providerID: 'p', neverBoot: true }),
      T0 + 60_000,
      { kind: 'neverBoot' },
    ],
    ['is done once provisioned', m({ providerID: 'p', provisioned: true }), T0 + 60_000, { kind: 'booted' }],
  ];
  for (const [name, machine, now, want] of cases)
    it(name, () => assert.deepEqual(planMachine(machine, now), want));
  it("registers its Node under its Cluster API Machine's name", () =>
    assert.equal(machineNodeName(m()), 'md-abc-x1y'));
});

describe('the simulated infrastructure CRDs', () => {
  for (const def of [NodewardenClusters, NodewardenMachines, NodewardenMachineTemplates]) {
    it(`${def.type.kind} says it implements Cluster API's v1beta2 contract as v1alpha1`, () => {
      assert.equal(def.crd().metadata.labels[CONTRACT_LABEL], 'v1alpha1');
      assert.equal(def.crd().metadata.labels['app.kubernetes.io/part-of'], 'nodewarden');
    });
  }
});
