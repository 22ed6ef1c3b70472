// The generated CRD, applied to a real API server: it must be accepted as
// structural, and the server must then enforce exactly what the TypeBox
// schema says (required, types, enums, defaults, CEL, immutability). Also
// applies config/default (kustomize) for real, so RBAC, the Deployment and
// Pod Security admission are checked by the server, not by eye.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { goodWidget, type Widget, Widgets } from '../fixtures/widget.ts';
import { eventually, testKubeConfig, testKubeconfigPath, useNamespace } from '../harness/cluster.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const kc = testKubeConfig();
const objects = kc.makeApiClient(CustomObjectsApi);
const CRDS = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' };
const WIDGETS = { group: Widgets.type.group, version: Widgets.type.version, plural: Widgets.type.plural };

type Condition = { type: string; status: string; message?: string };
type StoredCrd = ReturnType<typeof Widgets.crd> & { status?: { conditions?: Condition[] } };

/** The API server's own words for a rejected request. */
async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    const body = (err as { body?: unknown }).body;
    const status =
      typeof body === 'string' ? (JSON.parse(body) as { message?: string }) : (body as { message?: string });
    return status?.message ?? String(err);
  }
  throw new Error('the server accepted it');
}

async function kubectl(...args: string[]): Promise<string> {
  const { kubectl } = await controlPlaneBinaries({ quiet: true });
  const { stdout } = await run(kubectl, ['--kubeconfig', testKubeconfigPath(), ...args], { cwd: ROOT });
  return stdout;
}

describe('the Widget CRD on a real API server', () => {
  const ns = useNamespace('crd');
  const create = (body: unknown) =>
    objects.createNamespacedCustomObject({ ...WIDGETS, namespace: ns(), body });
  const withSpec = (name: string, spec: Record<string, unknown>) => {
    const w = goodWidget(name);
    return { ...w, spec: { ...w.spec, ...spec } };
  };

  before(async () => {
    // A cluster kept from an earlier run may still have it.
    await objects.deleteClusterCustomObject({ ...CRDS, name: Widgets.name }).catch(() => {});
    await eventually('the CRD to be created', () =>
      objects.createClusterCustomObject({ ...CRDS, body: Widgets.crd() }),
    );
    await eventually('the CRD to be Established', async () => {
      const crd = (await objects.getClusterCustomObject({ ...CRDS, name: Widgets.name })) as StoredCrd;
      const established = crd.status?.conditions?.find((c) => c.type === 'Established');
      return established?.status === 'True' ? crd : undefined;
    });
  });

  after(async () => {
    await objects.deleteClusterCustomObject({ ...CRDS, name: Widgets.name }).catch(() => {});
  });

  it('is accepted as structural, keeping every CEL rule', async () => {
    const crd = (await objects.getClusterCustomObject({ ...CRDS, name: Widgets.name })) as StoredCrd;
    const problem = crd.status?.conditions?.find((c) => c.type === 'NonStructuralSchema');
    assert.equal(problem, undefined, problem?.message);
    const schema = crd.spec.versions[0]?.schema.openAPIV3Schema;
    assert.deepEqual(schema, Widgets.crd().spec.versions[0]?.schema.openAPIV3Schema);
  });

  it('accepts a good Widget and applies the schema defaults, the same ones validate() applies', async () => {
    const sent = withSpec('good', { ports: [{ name: 'http', port: 80 }] });
    // The first create may race the new resource's REST endpoint coming up.
    const stored = (await eventually('the first Widget', () => create(sent))) as Widget;
    assert.equal(stored.spec.color, 'blue');
    assert.equal(stored.spec.replicas, 1);
    assert.equal(stored.spec.ports?.[0]?.protocol, 'TCP');
    const local = Widgets.validate(sent);
    assert.ok(local.ok);
    assert.deepEqual(stored.spec, local.value.spec);
  });

  it('rejects a Widget missing a required field', async () => {
    const w = goodWidget('no-size') as unknown as { spec: Record<string, unknown> };
    delete w.spec.size;
    assert.match(await rejection(create(w)), /spec\.size: Required value/);
    assert.equal(Widgets.validate(w).ok, false);
  });

  it('rejects a field of the wrong type', async () => {
    const w = withSpec('wrong-type', { size: 'big' });
    assert.match(
      await rejection(create(w)),
      /spec\.size: Invalid value: "string": .*must be of type integer/,
    );
    assert.equal(Widgets.validate(w).ok, false);
  });

  it('rejects an enum value out of range, listing the allowed ones', async () => {
    const w = withSpec('bad-color', { color: 'pink' });
    assert.match(
      await rejection(create(w)),
      /spec\.color: Unsupported value: "pink": supported values: "red", "green", "blue"/,
    );
    assert.equal(Widgets.validate(w).ok, false);
  });

  it('rejects a value out of bounds', async () => {
    const msg = await rejection(create(withSpec('too-big', { size: 101 })));
    assert.match(
      msg,
      /spec\.size: Invalid value: 101: spec\.size in body should be less than or equal to 100/,
    );
  });

  it('rejects a Widget breaking the root CEL rule, with its message', async () => {
    const msg = await rejection(create(withSpec('min-max', { min: 9, max: 2 })));
    assert.match(msg, /spec\.min must not exceed spec\.max/);
  });

  it('refuses to change the immutable field, with its message, but allows other changes', async () => {
    const stored = (await create(withSpec('fixed', {}))) as Widget;
    const changed = { ...stored, spec: { ...stored.spec, class: 'silver' } };
    const replace = (body: Widget) =>
      objects.replaceNamespacedCustomObject({ ...WIDGETS, namespace: ns(), name: 'fixed', body });
    assert.match(
      await rejection(replace(changed)),
      /spec\.class: Invalid value: "silver": class is immutable/,
    );
    const resized = (await replace({ ...stored, spec: { ...stored.spec, size: 20 } })) as Widget;
    assert.equal(resized.spec.size, 20);
  });

  it('serves status as a subresource, validated by its schema', async () => {
    const stored = (await create(withSpec('with-status', {}))) as Widget;
    const replaceStatus = (base: Widget, status: unknown) =>
      objects.replaceNamespacedCustomObjectStatus({
        ...WIDGETS,
        namespace: ns(),
        name: 'with-status',
        body: { ...base, status },
      }) as Promise<Widget>;
    const updated = await replaceStatus(stored, { phase: 'Ready', observedGeneration: 1 });
    assert.equal(updated.status?.phase, 'Ready');
    assert.match(
      await rejection(replaceStatus(updated, { phase: 'Done' })),
      /status\.phase: Unsupported value: "Done"/,
    );
  });

  it('answers to its short name with the declared printer columns', async () => {
    const table = await kubectl('get', 'wdg', '-n', ns(), 'good');
    const header = table.split('\n')[0]?.split(/\s+/).filter(Boolean);
    assert.deepEqual(header, ['NAME', 'CLASS', 'SIZE', 'PHASE', 'AGE']);
    assert.match(table, /\ngood\s+gold\s+10\s+/);
    const wide = await kubectl('get', 'wdg', '-n', ns(), 'good', '-o', 'wide');
    assert.match(wide.split('\n')[0] ?? '', /COLOR/);
  });
});

describe('config/default applied with kubectl -k', () => {
  const apps = kc.makeApiClient(AppsV1Api);
  after(async () => {
    // Not `delete -k`: that would also take the suite's CRDs away from later test files.
    await kubectl('delete', 'namespace', 'nodewarden-system', '--wait=false', '--ignore-not-found').catch(
      () => '',
    );
    const labelled = ['-l', 'app.kubernetes.io/name=nodewarden', '--ignore-not-found'];
    // The webhook configuration first: with failurePolicy Fail and no server behind it, it would
    // refuse every NodeMaintenance the later test files create.
    await kubectl(
      'delete',
      'validatingwebhookconfiguration,clusterrole,clusterrolebinding',
      ...labelled,
    ).catch(() => '');
  });

  it('creates the namespace, RBAC and a Deployment whose two replicas pass Pod Security "restricted"', async () => {
    const out = await kubectl('apply', '-k', 'config/default');
    for (const what of [
      'namespace/nodewarden-system',
      'serviceaccount/nodewarden-controller-manager',
      'role.rbac.authorization.k8s.io/nodewarden-leader-election-role',
      'clusterrole.rbac.authorization.k8s.io/nodewarden-manager-role',
      'clusterrolebinding.rbac.authorization.k8s.io/nodewarden-manager-rolebinding',
      'service/nodewarden-metrics-service',
      'deployment.apps/nodewarden-controller-manager',
      'service/nodewarden-webhook',
      'validatingwebhookconfiguration.admissionregistration.k8s.io/nodewarden-validating-webhook-configuration',
    ]) {
      assert.match(out, new RegExp(`${what.replaceAll('.', '\\.')} `));
    }
    // Pods that broke the namespace's "restricted" policy would never be created.
    const deploy = await eventually('2 available replicas', async () => {
      const d = await apps.readNamespacedDeployment({
        namespace: 'nodewarden-system',
        name: 'nodewarden-controller-manager',
      });
      return d.status?.availableReplicas === 2 ? d : undefined;
    });
    assert.equal(deploy.spec?.replicas, 2);
  });

  it("lets the manager's service account do what the runtime needs, and nothing cluster-wide beyond", async () => {
    const sa = 'system:serviceaccount:nodewarden-system:nodewarden-controller-manager';
    const can = async (...args: string[]) =>
      (
        await kubectl('auth', 'can-i', '--as', sa, ...args).catch((e: { stdout?: string }) => e.stdout ?? '')
      ).trim();
    assert.equal(await can('create', 'events.events.k8s.io', '-n', 'default'), 'yes');
    assert.equal(await can('update', 'leases.coordination.k8s.io', '-n', 'nodewarden-system'), 'yes');
    assert.equal(await can('create', 'pods', '--subresource=eviction', '-n', 'default'), 'yes');
    assert.equal(await can('patch', 'nodes'), 'yes');
    // Rolling upgrades delete the Node of a replaced instance; creating Nodes stays the kubelet's.
    assert.equal(await can('delete', 'nodes'), 'yes');
    assert.equal(await can('create', 'nodes'), 'no');
    assert.equal(await can('update', 'deployments.apps', '-n', 'default'), 'yes');
    // A KVMCluster's VMs are Deployments the operator makes (server-side applied: create and patch);
    // pods it never makes itself.
    assert.equal(await can('create', 'deployments.apps', '-n', 'default'), 'yes');
    assert.equal(await can('create', 'pods', '-n', 'default'), 'no');
    assert.equal(
      await can('get', 'secrets/nodewarden-webhook-server-cert', '-n', 'nodewarden-system'),
      'yes',
    );
    // Secrets: the bare-metal capabilities read BMC credentials and network data, and write VM
    // hosts' Secrets, in whatever namespace the hosts live (metal3's operator holds the same);
    // they never update one whole, and the manager reads no ServiceAccount tokens' API.
    assert.equal(await can('list', 'secrets', '-A'), 'yes');
    assert.equal(await can('update', 'secrets', '-n', 'default'), 'no');
    assert.equal(await can('create', 'serviceaccounts', '--subresource=token', '-n', 'default'), 'no');
    assert.equal(await can('create', 'clusterrolebindings'), 'no');
    assert.equal(await can('update', 'validatingwebhookconfigurations/someone-elses'), 'no');
  });
});
