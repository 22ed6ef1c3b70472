// config/samples/ on a real API server with the shipped CRDs installed and no
// operator running: every sample is created as written (so schema, defaults
// and CEL rules accept it and nothing is pruned), then deleted. Nothing acts
// on the objects meanwhile: no controller runs in this suite.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import type { AnyCustomResource } from '../../src/api/index.ts';
import { NodeMaintenances } from '../../src/api/maintenance.ts';
import { customResources } from '../../src/capabilities.ts';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { Nodes } from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig, testKubeconfigPath } from '../harness/cluster.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SAMPLES = new URL('../../config/samples/', import.meta.url);

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; uid?: string };
  spec: Record<string, unknown>;
}
type NodeObj = { metadata: { name: string; labels?: Record<string, string> } };

const sampleOf = (cr: AnyCustomResource): Obj =>
  parse(
    readFileSync(
      new URL(
        `${cr.type.group.split('.')[0]}_${cr.type.version}_${cr.type.kind.toLowerCase()}.yaml`,
        SAMPLES,
      ),
      'utf8',
    ),
  ) as Obj;

describe('config/samples on a real API server', () => {
  const client = KubeClient.fromKubeConfig(testKubeConfig());
  /** A worker of the test fleet that no NodeMaintenance holds. */
  let freeWorker = '';

  before(async () => {
    const held = new Set(
      (await client.list<{ spec: { nodeName: string } }>(NodeMaintenances.type)).items.map(
        (nm) => nm.spec.nodeName,
      ),
    );
    const workers = (await client.list<NodeObj>(Nodes)).items
      .filter((n) => !('node-role.kubernetes.io/control-plane' in (n.metadata.labels ?? {})))
      .map((n) => n.metadata.name)
      .filter((name) => !held.has(name))
      .sort();
    // The last worker: the other suites pick theirs from the front (worker-004 and below).
    freeWorker = workers.at(-1) ?? '';
    assert.ok(freeWorker, 'the test fleet has a worker no maintenance holds');
  });
  after(() => client.close());

  for (const cr of customResources) {
    it(`creates the ${cr.type.kind} sample as written, then deletes it`, async () => {
      const sample = sampleOf(cr);
      // The sample names a node of the README's fleet; this cluster's fleet is the
      // harness's, and other suites hold some of its nodes. The schema does not care,
      // but the maintenance webhook (when an operator runs) refuses a node that is
      // missing or already in maintenance, so point the sample at a free worker.
      if (cr.type.kind === NodeMaintenances.type.kind) sample.spec.nodeName = freeWorker;
      const { name } = sample.metadata;
      // Namespaced kinds go where kubectl would put them: the sample's namespace, else default.
      const ns = cr.type.namespaced ? (sample.metadata.namespace ?? 'default') : undefined;
      const existing = await client.get(cr.type, name, ns).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      assert.equal(existing, undefined, `${cr.type.kind}/${name} already exists: left by another suite?`);

      if (ns) sample.metadata.namespace = ns;
      const created = await client.create<Obj>(cr.type, sample as never);
      try {
        // Accepted as written: every field the sample sets is stored with its value
        // (the server may add defaults, but pruned nothing and changed nothing).
        assert.partialDeepStrictEqual(created.spec, sample.spec);
        const stored = await client.get<Obj>(cr.type, name, ns);
        assert.partialDeepStrictEqual(stored.spec, sample.spec);
      } finally {
        await client.delete(cr.type, name, ns, { preconditions: { uid: created.metadata.uid } });
      }
      await eventually(`${cr.type.kind}/${name} to be gone`, async () =>
        client.get(cr.type, name, ns).then(
          () => undefined,
          (err: unknown) => (isNotFound(err) ? true : undefined),
        ),
      );
    });
  }

  it('kubectl accepts the kustomization as a whole (server-side dry run)', async () => {
    const { kubectl } = await controlPlaneBinaries({ quiet: true });
    const { stdout } = await promisify(execFile)(
      kubectl,
      [
        '--kubeconfig',
        testKubeconfigPath(),
        'create',
        '--dry-run=server',
        '-k',
        'config/samples',
        '-o',
        'name',
      ],
      { cwd: ROOT },
    );
    const created = stdout.trim().split('\n').sort();
    const expected = customResources
      .map((cr) => `${cr.type.kind.toLowerCase()}.${cr.type.group}/${sampleOf(cr).metadata.name}`)
      .sort();
    assert.deepEqual(created, expected);
  });
});
