// `make install` next to a real metal3 installation: metal3's own
// BareMetalHost CRD is never overwritten (nor deleted by uninstall); where
// there is none, nodewarden's structural one is installed, labelled as ours.
// Runs hack/install-crds.sh, the script the Makefile runs, with the cached
// kubectl against the shared test cluster, and puts our CRD back at the end.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BareMetalHosts } from '../../src/api/baremetal.ts';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { CustomResourceDefinitions } from '../../src/runtime/resources.ts';
import { eventually, testKubeConfig, testKubeconfigPath } from '../harness/cluster.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NAME = BareMetalHosts.name;
const client = KubeClient.fromKubeConfig(testKubeConfig());

interface StoredCrd {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { conditions?: { type: string; status: string }[] };
}

async function installCrds(action: string): Promise<string> {
  const { kubectl } = await controlPlaneBinaries({ quiet: true });
  const { stdout } = await run('hack/install-crds.sh', [kubectl, action], {
    cwd: ROOT,
    env: { ...process.env, KUBECONFIG: testKubeconfigPath() },
  });
  return stdout;
}

async function deleteCrd(): Promise<void> {
  await client.delete(CustomResourceDefinitions, NAME).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
  await eventually('the BareMetalHost CRD is gone', async () => {
    try {
      await client.get(CustomResourceDefinitions, NAME);
      return undefined;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  });
}

const established = (crd: StoredCrd) =>
  crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;

describe('make install beside metal3', () => {
  after(() => client.close());

  it("leaves metal3's own BareMetalHost CRD as it is, then installs ours where there is none", async () => {
    await deleteCrd();
    // metal3's CRD as another project ships it: same name, its own schema, no label of ours.
    const theirs = BareMetalHosts.crd();
    const foreign = {
      ...theirs,
      metadata: { name: NAME, annotations: { 'controller-gen.kubebuilder.io/version': 'v0.16.0' } },
    };
    await client.create(CustomResourceDefinitions, foreign as never);
    const said = await installCrds('install');
    assert.match(said, /CRD baremetalhosts\.metal3\.io is installed by another project .*left as it is/);
    const kept = await client.get<StoredCrd>(CustomResourceDefinitions, NAME);
    assert.equal(
      kept.metadata.labels?.['app.kubernetes.io/part-of'],
      undefined,
      'ours was applied over theirs',
    );
    assert.equal(kept.metadata.annotations?.['controller-gen.kubebuilder.io/version'], 'v0.16.0');

    // No metal3 here: ours goes in, labelled, and serves.
    await deleteCrd();
    await installCrds('ecosystem');
    const ours = await eventually('our BareMetalHost CRD is Established', async () => {
      const crd = await client.get<StoredCrd>(CustomResourceDefinitions, NAME);
      return established(crd) ? crd : undefined;
    });
    assert.equal(ours.metadata.labels?.['app.kubernetes.io/part-of'], 'nodewarden');
  });
});
