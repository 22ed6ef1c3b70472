// A KVMCluster stored before the API refused pod ranges under /16, as one kept
// across an upgrade of nodewarden: the CRD is put back as an older one was
// (no podCIDR rule), the cluster stored with a /24 its workers have no /25 of,
// and the rule restored. The operator says so in the Updated condition and an
// Event and makes no node; once the range is mended it makes them all.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type KVMCluster, KVMClusters } from '../../src/api/kvm.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import {
  CustomResourceDefinitions,
  Deployments,
  Events,
  type K8sObject,
} from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';

const KC = KVMClusters.type;
const client = KubeClient.fromKubeConfig(testKubeConfig());
const ID = `kvmold${Date.now().toString(36)}`;
const CRD = `${KC.plural}.${KC.group}`;
const POD_CIDR_RULES =
  '/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/network/properties/podCIDR/x-kubernetes-validations';

type Crd = K8sObject & { spec: { versions: Array<{ schema: { openAPIV3Schema: unknown } }> } };
type Condition = {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
};

describe('a KVMCluster stored with a pod range the API now refuses', () => {
  const ns = useNamespace('kvmold');
  let op: OperatorProcess | undefined;

  const cluster = () => client.get<KVMCluster & K8sObject>(KC, ID, ns());
  const updated = async () =>
    (await cluster()).status?.conditions?.find((c) => c.type === 'Updated') as Condition | undefined;
  const vmDeployments = async () => (await client.list(Deployments, { namespace: ID })).items.length;

  before(async () => {
    const crd = await client.get<Crd>(CustomResourceDefinitions, CRD);
    const rules = POD_CIDR_RULES.split('/')
      .slice(1)
      .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], crd);
    assert.match(
      JSON.stringify(rules),
      /prefixLength\(\) <= 16/,
      'the CRD has the podCIDR rule this test takes out',
    );
    await client.patch(CustomResourceDefinitions, CRD, undefined, [{ op: 'remove', path: POD_CIDR_RULES }], {
      type: 'json',
    });
    try {
      const obj = KVMClusters.make(
        { name: ID, namespace: ns() },
        {
          masters: [{ id: 'm1', cpus: 1, memory: '1G' }],
          workers: [
            { id: 'w1', cpus: 1, memory: '1G' },
            { id: 'w2', cpus: 1, memory: '1G' },
          ],
          release: { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' },
          network: { vni: 5000 + (Date.now() % 1000), podCIDR: '10.2.3.0/24' },
          api: { domain: `api.${ID}.example.com` },
        },
      );
      // The API server takes a CRD change a moment after it is written.
      await eventually('stored without the rule', () =>
        client.create(KC, obj as never).catch(() => undefined),
      );
    } finally {
      await client.patch(
        CustomResourceDefinitions,
        CRD,
        undefined,
        [{ op: 'add', path: POD_CIDR_RULES, value: rules }],
        { type: 'json' },
      );
    }
    const restored = await client.get<Crd>(CustomResourceDefinitions, CRD);
    assert.match(JSON.stringify(restored.spec.versions[0]?.schema.openAPIV3Schema), /prefixLength\(\) <= 16/);
    op = startOperator(['--controllers', 'kvmcluster,kvm-vm-drain', '--webhook-bind-address', '0']);
  });

  after(async () => {
    await client.delete(KC, ID, ns()).catch(() => {});
    // Its namespace goes first, by the namespace controller: a minute or more on busy cores.
    await eventually(
      'the KVMCluster gone',
      async () =>
        cluster().then(
          () => undefined,
          (err: unknown) => (isNotFound(err) ? true : Promise.reject(err)),
        ),
      180_000,
      1000,
    );
    await op?.stop();
    client.close();
  });

  it('says which nodes the range has no /25 for, in Updated and an Event, and makes no node', async () => {
    const c = await eventually('Updated=False (InvalidSpec)', async () => {
      const u = await updated();
      return u?.reason === 'InvalidSpec' ? u : undefined;
    });
    assert.equal(c.status, 'False');
    assert.match(c.message, /10\.2\.3\.0\/24 has no \/25 for node w1, w2/);
    assert.equal(c.observedGeneration, (await cluster()).metadata?.generation);
    const events = await eventually('an InvalidSpec Event', async () => {
      const list = await client.list<K8sObject & { reason?: string; regarding?: { name?: string } }>(Events, {
        namespace: ns(),
      });
      const found = list.items.filter((e) => e.reason === 'InvalidSpec' && e.regarding?.name === ID);
      return found.length ? found : undefined;
    });
    // One Event, not a series: said when the problem is new, not on every pass.
    assert.equal(events.length, 1);
    assert.equal((events[0] as { series?: unknown }).series, undefined, JSON.stringify(events[0]));
    assert.equal(await vmDeployments(), 0, 'no VM made from a spec it cannot render');
  });

  it('makes every node once the range is mended', async () => {
    await client.patch(KC, ID, ns(), { spec: { network: { podCIDR: '10.2.0.0/16' } } }, { type: 'merge' });
    await eventually('three VM Deployments', async () => ((await vmDeployments()) === 3 ? true : undefined));
    const u = await updated();
    assert.notEqual(u?.reason, 'InvalidSpec', JSON.stringify(u));
  });
});
