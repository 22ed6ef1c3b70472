// The Helm chart, checked by the real Helm (v4, built from its Go module by
// hack/build-helm.sh and cached): lint; template with the defaults and with
// every documented value changed; wrong values refused by values.schema.json;
// the same objects as `make deploy` (kustomize), names and labels aside; and
// install, upgrade and uninstall in the run's cluster, leaving only the CRDs.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import {
  CustomResourceDefinitions,
  Deployments,
  ValidatingWebhookConfigurations,
} from '../../src/runtime/resources.ts';
import { CLOUD_PROVIDERS } from '../../src/upgrade/providers/from-flags.ts';
import { eventually, testKubeConfig, testKubeconfigPath } from '../harness/cluster.ts';
import { ClusterRoles } from '../harness/rbac.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = 'charts/nodewarden';

type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  rules?: unknown[];
  webhooks?: { name: string; rules: unknown; clientConfig: { service?: { path?: string } } }[];
};

let helmPath: string | undefined;
async function helm(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  helmPath ??= (await run('hack/build-helm.sh', [], { cwd: ROOT, maxBuffer: 1 << 24 })).stdout
    .trim()
    .split('\n')
    .at(-1)!;
  return run(helmPath, args, {
    cwd: ROOT,
    maxBuffer: 1 << 26,
    env: { ...process.env, KUBECONFIG: testKubeconfigPath() },
  });
}

async function refusal(...args: string[]): Promise<string> {
  try {
    await helm(...args);
  } catch (err) {
    return String((err as { stderr?: string }).stderr);
  }
  throw new Error(`helm ${args.join(' ')} succeeded`);
}

const docs = (text: string): Obj[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);

const one = (objs: Obj[], kind: string, pred: (o: Obj) => boolean = () => true) => {
  const found = objs.filter((o) => o.kind === kind && pred(o));
  assert.equal(found.length, 1, `expected one ${kind}, found ${found.length}`);
  return found[0]!;
};

type Container = {
  args: string[];
  image: string;
  imagePullPolicy: string;
  env: { name: string; value?: string }[];
  resources: unknown;
  securityContext: unknown;
  livenessProbe: unknown;
  readinessProbe: unknown;
};
type PodSpec = {
  containers: Container[];
  serviceAccountName: string;
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  affinity?: unknown;
  priorityClassName?: string;
  terminationGracePeriodSeconds?: number;
  securityContext: unknown;
};
const podOf = (d: Obj) =>
  (
    d.spec as {
      template: {
        spec: PodSpec;
        metadata: { annotations?: Record<string, string>; labels: Record<string, string> };
      };
    }
  ).template;
const managerRole = (objs: Obj[]) =>
  one(objs, 'ClusterRole', (o) => o.metadata.name.endsWith('manager-role') || (o.rules?.length ?? 0) > 10);

describe('the Helm chart', () => {
  it('passes helm lint --strict', async () => {
    const { stdout } = await helm('lint', '--strict', CHART);
    assert.match(stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders every documented value it is given', async () => {
    const set = [
      'replicas=3',
      'image.repository=registry.example/nw',
      'image.tag=9.9.9',
      'image.pullPolicy=Always',
      'leaderElection.id=other-leader',
      'metrics.port=9090',
      'metrics.service.type=NodePort',
      'probes.port=9091',
      'webhook.port=9444',
      'logLevel=debug',
      'cloudProvider=simulated',
      'extraArgs[0]=--controllers=nodemaintenance',
      'resources.limits.memory=256Mi',
      'serviceAccount.name=nw-sa',
      'serviceAccount.annotations.team=platform',
      'podAnnotations.a=b',
      'podLabels.tier=ops',
      'nodeSelector.pool=infra',
      'tolerations[0].operator=Exists',
      'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=k',
      'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists',
      'priorityClassName=system-cluster-critical',
      'terminationGracePeriodSeconds=45',
    ].flatMap((s) => ['--set', s]);
    const objs = docs((await helm('template', 'nw', CHART, '-n', 'ops', ...set)).stdout);
    const d = one(objs, 'Deployment');
    const pod = podOf(d);
    const c = pod.spec.containers[0]!;
    assert.equal(d.spec?.replicas, 3);
    assert.equal(c.image, 'registry.example/nw:9.9.9');
    assert.equal(c.imagePullPolicy, 'Always');
    for (const arg of [
      '--leader-election-id=other-leader',
      '--metrics-bind-address=:9090',
      '--health-probe-bind-address=:9091',
      '--webhook-bind-address=:9444',
      '--cloud-provider=simulated',
      '--controllers=nodemaintenance',
    ]) {
      assert.ok(c.args.includes(arg), `missing ${arg} in ${c.args.join(' ')}`);
    }
    assert.equal(c.env.find((e) => e.name === 'NODEWARDEN_LOG_LEVEL')?.value, 'debug');
    assert.deepEqual((c.resources as { limits: { memory: string } }).limits.memory, '256Mi');
    assert.equal(pod.spec.serviceAccountName, 'nw-sa');
    assert.equal(one(objs, 'ServiceAccount').metadata.name, 'nw-sa');
    assert.equal(pod.metadata.annotations?.a, 'b');
    assert.equal(pod.metadata.labels.tier, 'ops');
    assert.deepEqual(pod.spec.nodeSelector, { pool: 'infra' });
    assert.deepEqual(pod.spec.tolerations, [{ operator: 'Exists' }]);
    assert.ok(pod.spec.affinity);
    assert.equal(pod.spec.priorityClassName, 'system-cluster-critical');
    assert.equal(pod.spec.terminationGracePeriodSeconds, 45);
    const metrics = one(objs, 'Service', (s) => s.metadata.name.includes('metrics'));
    assert.equal(metrics.spec?.type, 'NodePort');
  });

  it('leaves out what is switched off', async () => {
    const objs = docs(
      (
        await helm(
          'template',
          'nw',
          CHART,
          '--set',
          'replicas=1',
          '--set',
          'leaderElection.enabled=false',
          '--set',
          'webhook.enabled=false',
          '--set',
          'metrics.service.enabled=false',
          '--set',
          'rbac.create=false',
          '--set',
          'serviceAccount.create=false',
        )
      ).stdout,
    );
    // Offline (helm template) the chart cannot see a metal3 CRD, so it renders its own.
    assert.deepEqual(objs.map((o) => o.kind).sort(), ['CustomResourceDefinition', 'Deployment']);
    const args = podOf(one(objs, 'Deployment')).spec.containers[0]!.args;
    assert.ok(!args.includes('--leader-elect'));
    assert.ok(args.includes('--webhook-bind-address=0'));
    assert.ok(!args.some((a) => a.startsWith('--cloud-provider')), 'no cloud unless one is named');
  });

  it("offers exactly the operator's cloud providers as cloudProvider", () => {
    const schema = JSON.parse(readFileSync(join(ROOT, CHART, 'values.schema.json'), 'utf8'));
    assert.deepEqual(schema.properties.cloudProvider.enum, ['', ...CLOUD_PROVIDERS]);
  });

  const bad: [string, string[], RegExp][] = [
    ['a string for replicas', ['--set-string', 'replicas=two'], /at '\/replicas': got string, want integer/],
    [
      'an unknown log level',
      ['--set', 'logLevel=loud'],
      /at '\/logLevel': value must be one of 'trace', 'debug', 'info', 'warn', 'error'/,
    ],
    [
      'an unknown cloud provider',
      ['--set', 'cloudProvider=aws'],
      /at '\/cloudProvider': value must be one of '', 'none', 'simulated', 'clusterapi'/,
    ],
    ['a misspelt key', ['--set', 'replica=3'], /additional properties 'replica' not allowed/],
    ['a port out of range', ['--set', 'metrics.port=70000'], /at '\/metrics\/port'/],
  ];
  for (const [what, args, message] of bad) {
    it(`refuses ${what}, saying which value`, async () => {
      assert.match(await refusal('template', 'nw', CHART, ...args), message);
    });
  }

  it('makes the objects make deploy makes, names and labels aside', async () => {
    const { kubectl } = await controlPlaneBinaries({ quiet: true });
    const kustomized = docs(
      (await run(kubectl, ['kustomize', 'config/default'], { cwd: ROOT, maxBuffer: 1 << 26 })).stdout,
    );
    const ecosystem = docs(
      (await run(kubectl, ['kustomize', 'config/crd/ecosystem'], { cwd: ROOT, maxBuffer: 1 << 26 })).stdout,
    );
    const charted = docs(
      (await helm('template', 'nw', CHART, '-n', 'nodewarden-system', '--include-crds')).stdout,
    );
    const kinds = (objs: Obj[]) =>
      objs
        .map((o) => o.kind)
        .filter((k) => k !== 'Namespace')
        .sort();
    // make deploy applies metal3's CRD apart (only where the cluster has none); the chart carries it in crds/.
    assert.deepEqual(kinds(charted), kinds([...kustomized, ...ecosystem]));
    const crdNames = (objs: Obj[]) =>
      objs
        .filter((o) => o.kind === 'CustomResourceDefinition')
        .map((o) => o.metadata.name)
        .sort();
    assert.deepEqual(crdNames(charted), crdNames([...kustomized, ...ecosystem]));
    assert.deepEqual(managerRole(charted).rules, managerRole(kustomized).rules);
    const hooks = (objs: Obj[]) =>
      one(objs, 'ValidatingWebhookConfiguration').webhooks!.map((w) => ({
        name: w.name,
        rules: w.rules,
        path: w.clientConfig.service?.path,
      }));
    assert.deepEqual(hooks(charted), hooks(kustomized));
    // Flags that only carry a name (of the Lease, of the webhook Service) differ by design.
    const naming = /^--(leader-election-id|webhook-service-name)=/;
    const manager = (objs: Obj[]) => {
      const d = one(objs, 'Deployment');
      const c = podOf(d).spec.containers[0]!;
      return {
        replicas: d.spec?.replicas,
        args: c.args.filter((a) => !naming.test(a)),
        securityContext: c.securityContext,
        pod: podOf(d).spec.securityContext,
        probes: [c.livenessProbe, c.readinessProbe],
        resources: c.resources,
      };
    };
    assert.deepEqual(manager(charted), manager(kustomized));
  });
});

describe('helm install, upgrade and uninstall in a real cluster', () => {
  const client = KubeClient.fromKubeConfig(testKubeConfig());
  const ns = `helm-${Date.now().toString(36)}`;
  const release = `nw${Date.now().toString(36).slice(-5)}`;
  after(async () => {
    await helm('uninstall', release, '-n', ns).catch(() => {});
    client.close();
  });

  const manifest = async () => docs((await helm('get', 'manifest', release, '-n', ns)).stdout);

  it('installs, upgrades with changed values, and uninstalls leaving only the CRDs', async () => {
    // The run's cluster has the CRDs already (as after make install): Helm 4 applies crds/
    // server-side, and takes them over only when told to.
    const { stdout } = await helm(
      'install',
      release,
      CHART,
      '-n',
      ns,
      '--create-namespace',
      '--force-conflicts',
    );
    assert.match(stdout, /STATUS: deployed/);
    for (const file of readdirSync(join(ROOT, CHART, 'crds'))) {
      const [group, plural] = file.replace(/\.yaml$/, '').split('_') as [string, string];
      await client.get(CustomResourceDefinitions, `${plural}.${group}`);
    }
    const installed = await manifest();
    // The run's cluster already had a BareMetalHost CRD the chart did not make (as where metal3 runs): left alone.
    const bmh = await client.get<Obj & { metadata: { annotations?: Record<string, string> } }>(
      CustomResourceDefinitions,
      'baremetalhosts.metal3.io',
    );
    assert.equal(bmh.metadata.annotations?.['meta.helm.sh/release-name'], undefined);
    assert.ok(!installed.some((o) => o.kind === 'CustomResourceDefinition'));
    assert.deepEqual([...new Set(installed.map((o) => o.kind))].sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'Deployment',
      'Role',
      'RoleBinding',
      'Service',
      'ServiceAccount',
      'ValidatingWebhookConfiguration',
    ]);
    const d = await client.get<Obj>(Deployments, one(installed, 'Deployment').metadata.name, ns);
    const args = podOf(d).spec.containers[0]!.args;
    assert.ok(args.includes('--leader-elect'), 'the Deployment runs with leader election');
    assert.equal(d.spec?.replicas, 2);
    const vwc = await client.get<Obj>(
      ValidatingWebhookConfigurations,
      one(installed, 'ValidatingWebhookConfiguration').metadata.name,
    );
    const service = one(installed, 'Service', (s) => s.metadata.name.endsWith('-webhook'));
    assert.ok(
      vwc.webhooks?.every(
        (w) => (w.clientConfig.service as { name?: string } | undefined)?.name === service.metadata.name,
      ),
      "every webhook points at the chart's webhook Service",
    );
    const role = await client.get<Obj>(ClusterRoles, managerRole(installed).metadata.name);
    assert.ok((role.rules?.length ?? 0) > 0);

    await helm(
      'upgrade',
      release,
      CHART,
      '-n',
      ns,
      '--set',
      'replicas=3',
      '--set',
      'logLevel=debug',
      '--set',
      'webhook.enabled=false',
    );
    const upgraded = await client.get<Obj>(Deployments, d.metadata.name, ns);
    assert.equal(upgraded.spec?.replicas, 3);
    assert.equal(
      podOf(upgraded).spec.containers[0]!.env.find((e) => e.name === 'NODEWARDEN_LOG_LEVEL')?.value,
      'debug',
    );
    await assert.rejects(client.get(ValidatingWebhookConfigurations, vwc.metadata.name), (err: unknown) =>
      isNotFound(err),
    );

    await helm('uninstall', release, '-n', ns);
    const gone = async (o: Obj) => {
      const type = { Deployment: Deployments }[o.kind as 'Deployment'];
      if (!type) return true;
      try {
        await client.get(type, o.metadata.name, o.metadata.namespace ?? ns);
        return false;
      } catch (err) {
        return isNotFound(err);
      }
    };
    await eventually('the release is gone', async () =>
      (await gone(one(installed, 'Deployment'))) ? true : undefined,
    );
    await assert.rejects(client.get(ClusterRoles, role.metadata.name), (err: unknown) => isNotFound(err));
    // Helm's convention: CRDs stay, so uninstalling never deletes anyone's objects.
    await client.get(CustomResourceDefinitions, 'nodemaintenances.maintenance.nodewarden.dev');
  });
});
