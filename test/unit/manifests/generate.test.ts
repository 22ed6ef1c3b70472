import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { BareMetalHosts } from '../../../src/api/baremetal.ts';
import {
  checkManifests,
  generateManifests,
  HEADER,
  writeManifests,
} from '../../../src/manifests/generate.ts';
import { Widgets } from '../../fixtures/widget.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const sources = {
  customResources: [Widgets],
  controllers: [
    { controller: 'widgets', rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }] },
  ],
};
const CRD_FILE = 'test.nodewarden.dev_widgets.yaml';

describe('generateManifests', () => {
  const files = generateManifests(sources);

  it('writes each CRD to config/crd/bases and the chart, and lists it for kustomize', () => {
    const base = files.get(`config/crd/bases/${CRD_FILE}`);
    assert.ok(base);
    assert.equal(files.get(`charts/nodewarden/crds/${CRD_FILE}`), base);
    assert.deepEqual(parse(base), Widgets.crd());
    assert.deepEqual(parse(files.get('config/crd/kustomization.yaml')!).resources, [`bases/${CRD_FILE}`]);
  });

  it("keeps another project's CRD (metal3's BareMetalHost) apart from our own, in the chart too", () => {
    const both = generateManifests({ ...sources, customResources: [Widgets, BareMetalHosts] });
    const file = 'metal3.io_baremetalhosts.yaml';
    assert.ok(both.get(`config/crd/ecosystem/${file}`));
    assert.equal(both.get(`config/crd/bases/${file}`), undefined);
    // In the chart, a template that renders only where the cluster has no such CRD.
    assert.equal(both.get(`charts/nodewarden/crds/${file}`), undefined);
    const template = both.get('charts/nodewarden/templates/ecosystem-crds.yaml')!;
    assert.match(
      template,
      /lookup "apiextensions.k8s.io\/v1" "CustomResourceDefinition" "" "baremetalhosts.metal3.io"/,
    );
    assert.match(template, /helm.sh\/resource-policy: keep/);
    assert.deepEqual(parse(both.get('config/crd/kustomization.yaml')!).resources, [`bases/${CRD_FILE}`]);
    assert.deepEqual(parse(both.get('config/crd/ecosystem/kustomization.yaml')!).resources, [file]);
  });

  it("lists each CRD's sample in config/samples' kustomization, in the order the capabilities declare them", () => {
    const both = generateManifests({ ...sources, customResources: [Widgets, BareMetalHosts] });
    assert.deepEqual(parse(both.get('config/samples/kustomization.yaml')!).resources, [
      'test_v1alpha1_widget.yaml',
      'metal3_v1alpha1_baremetalhost.yaml',
    ]);
  });

  it("labels every CRD as nodewarden's, so install can tell it from another project's", () => {
    assert.equal(
      parse(files.get(`config/crd/bases/${CRD_FILE}`)!).metadata.labels['app.kubernetes.io/part-of'],
      'nodewarden',
    );
  });

  it('writes a valid, empty kustomization when there are no CRDs', () => {
    const empty = generateManifests({ customResources: [], controllers: [] });
    assert.deepEqual(parse(empty.get('config/crd/kustomization.yaml')!), {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [],
    });
    assert.ok(![...empty.keys()].some((k) => k.includes('/bases/')));
  });

  it("writes the manager ClusterRole from the runtime's and the controllers' rules, and the chart's copy", () => {
    const role = parse(files.get('config/rbac/role.yaml')!);
    assert.equal(role.kind, 'ClusterRole');
    assert.equal(role.metadata.name, 'manager-role');
    assert.ok(role.rules.some((r: { resources: string[] }) => r.resources.includes('pods')));
    assert.deepEqual(parse(files.get('charts/nodewarden/files/manager-rules.yaml')!), role.rules);
    const le = parse(files.get('config/rbac/leader_election_role.yaml')!);
    assert.equal(le.kind, 'Role');
    assert.deepEqual(parse(files.get('charts/nodewarden/files/leader-election-rules.yaml')!), le.rules);
  });

  it('marks every file as generated and keeps CEL rules on one line', () => {
    for (const [path, text] of files) assert.ok(text.startsWith(HEADER), path);
    assert.match(files.get(`config/crd/bases/${CRD_FILE}`)!, /rule: self.spec.min <= self.spec.max\n/);
  });

  it('is byte-for-byte the same on every run', () => {
    assert.deepEqual([...generateManifests(sources)], [...files]);
  });
});

describe('writeManifests and checkManifests', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nodewarden-manifests-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const files = generateManifests(sources);

  it('writes everything into an empty tree, after which nothing is stale', () => {
    const r = writeManifests(dir, files);
    assert.equal(r.written.length, files.size);
    assert.deepEqual(checkManifests(dir, files), []);
    assert.equal(writeManifests(dir, files).written.length, 0);
  });

  it('reports an edited file and a missing one, and rewrites them', () => {
    writeFileSync(join(dir, 'config/rbac/role.yaml'), '# hand edit\n');
    rmSync(join(dir, 'config/crd/kustomization.yaml'));
    assert.deepEqual(checkManifests(dir, files), ['config/crd/kustomization.yaml', 'config/rbac/role.yaml']);
    assert.deepEqual(writeManifests(dir, files).written.sort(), [
      'config/crd/kustomization.yaml',
      'config/rbac/role.yaml',
    ]);
    assert.deepEqual(checkManifests(dir, files), []);
  });

  it('reports a CRD file that is no longer defined, and removes it', () => {
    writeFileSync(
      join(dir, 'config/crd/bases/old.example.dev_things.yaml'),
      'kind: CustomResourceDefinition\n',
    );
    assert.deepEqual(checkManifests(dir, files), ['config/crd/bases/old.example.dev_things.yaml']);
    assert.deepEqual(writeManifests(dir, files).removed, ['config/crd/bases/old.example.dev_things.yaml']);
    assert.deepEqual(readdirSync(join(dir, 'config/crd/bases')), [CRD_FILE]);
  });

  it('reports everything as missing in a tree that has none of it', () => {
    const bare = join(dir, 'bare');
    mkdirSync(bare);
    assert.equal(checkManifests(bare, files).length, files.size);
  });
});

describe('the checked-in manifests', () => {
  it('match the definitions (run `make manifests` if this fails)', () => {
    assert.deepEqual(checkManifests(ROOT), []);
  });

  it("are what the chart's templates read with .Files.Get", () => {
    const generated = generateManifests();
    const templates = join(ROOT, 'charts/nodewarden/templates');
    const wanted = readdirSync(templates).flatMap((f) =>
      [...readFileSync(join(templates, f), 'utf8').matchAll(/\.Files\.Get "([^"]+)"/g)].map((m) => m[1]),
    );
    assert.ok(wanted.length >= 2, 'the chart reads the generated rules');
    for (const f of wanted) assert.ok(generated.has(`charts/nodewarden/${f}`), `${f} is generated`);
  });

  it('run the manager hardened: two replicas, non-root, read-only root, limits and probes', () => {
    const docs = parseAllDocuments(readFileSync(join(ROOT, 'config/manager/manager.yaml'), 'utf8')).map((d) =>
      d.toJS(),
    );
    const deploy = docs.find((d) => d.kind === 'Deployment');
    assert.equal(deploy.spec.replicas, 2);
    const pod = deploy.spec.template.spec;
    const c = pod.containers[0];
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
    assert.ok(c.args.includes('--leader-elect'));
    assert.ok(c.resources.requests.cpu && c.resources.limits.memory);
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.ok(c.volumeMounts.some((m: { mountPath: string }) => m.mountPath === '/tmp'));
  });
});

describe('generateManifests: webhooks', () => {
  const hooks = ['widgets', 'gadgets'].map((kind) => ({
    name: `v${kind}.test.nodewarden.dev`,
    path: `/validate-${kind}`,
    rules: [
      {
        apiGroups: ['test.nodewarden.dev'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE' as const, 'UPDATE' as const],
        resources: [kind],
      },
    ],
  }));
  const files = generateManifests({ ...sources, webhooks: hooks });

  it("writes every capability's webhook into kustomize's configuration and the chart's", () => {
    const kustomize = parse(files.get('config/webhook/manifests.yaml')!);
    assert.equal(kustomize.metadata.name, 'validating-webhook-configuration');
    assert.deepEqual(
      kustomize.webhooks.map((w: { clientConfig: { service: { name: string; path: string } } }) => [
        w.clientConfig.service.name,
        w.clientConfig.service.path,
      ]),
      [
        ['webhook', '/validate-widgets'],
        ['webhook', '/validate-gadgets'],
      ],
    );
    const chart = parse(files.get('charts/nodewarden/files/webhooks.yaml')!);
    assert.deepEqual(
      chart.webhooks.map((w: { name: string }) => w.name),
      hooks.map((h) => h.name),
    );
  });
});
