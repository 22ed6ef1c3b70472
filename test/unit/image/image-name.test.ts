// The image `make image` builds is the one the manifests run by default: the
// chart's values and config/manager's kustomization name its repository, and its
// tag is the app's version, which is the chart's appVersion.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { OPERATOR_IMAGE_REPOSITORY, operatorImageName } from '../../../src/cluster/image/operator-image.ts';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const version = JSON.parse(read('package.json')).version as string;

describe("the operator image's name", () => {
  it('is the repository and the version', () => {
    assert.equal(operatorImageName(version), `localhost/nodewarden:${version}`);
  });

  it("is the chart's default: its repository, and the appVersion as the tag", () => {
    const chart = parse(read('charts/nodewarden/Chart.yaml'));
    const values = parse(read('charts/nodewarden/values.yaml'));
    assert.equal(values.image.repository, OPERATOR_IMAGE_REPOSITORY);
    assert.equal(values.image.tag, '');
    assert.equal(chart.appVersion, version);
  });

  it("is kustomize's default in config/manager", () => {
    const k = parse(read('config/manager/kustomization.yaml'));
    assert.deepEqual(k.images, [{ name: 'nodewarden', newName: OPERATOR_IMAGE_REPOSITORY, newTag: version }]);
  });
});
