// Where each provider's template keeps its image, and the flag that names the rest.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  getPath,
  imagePathOf,
  machineImagePath,
  parseImagePaths,
  setPath,
} from '../../../../src/upgrade/providers/clusterapi/image-paths.ts';

describe('image paths', () => {
  const known: [string, string][] = [
    ['AWSMachineTemplate', 'spec.template.spec.ami.id'],
    ['GCPMachineTemplate', 'spec.template.spec.image'],
    ['VSphereMachineTemplate', 'spec.template.spec.template'],
    ['Metal3MachineTemplate', 'spec.template.spec.image.url'],
    ['DockerMachineTemplate', 'spec.template.spec.customImage'],
    ['NodewardenMachineTemplate', 'spec.template.spec.image'],
  ];
  for (const [kind, path] of known) it(`knows ${kind}'s`, () => assert.equal(imagePathOf(kind, {}), path));
  it('an unknown kind has none unless configured; configuration wins over what is known', () => {
    assert.equal(imagePathOf('IBMPowerVSMachineTemplate', {}), undefined);
    const flag = parseImagePaths(
      'IBMPowerVSMachineTemplate=spec.template.spec.image.name, AWSMachineTemplate=spec.template.spec.ami.name',
    );
    assert.equal(imagePathOf('IBMPowerVSMachineTemplate', flag), 'spec.template.spec.image.name');
    assert.equal(imagePathOf('AWSMachineTemplate', flag), 'spec.template.spec.ami.name');
  });
  const bad = ['Kind', 'Kind=status.image', 'kind=spec.template.spec.image', 'Kind=spec.template.spec'];
  for (const b of bad)
    it(`refuses --clusterapi-image-path "${b}"`, () =>
      assert.throws(() => parseImagePaths(b), /Kind=spec\.template\.spec/));
  it('a machine keeps the field below spec.template', () =>
    assert.equal(machineImagePath('spec.template.spec.ami.id'), 'spec.ami.id'));
  it('reads and writes dotted paths', () => {
    const o = { spec: { a: { b: 'x' } } };
    assert.equal(getPath(o, 'spec.a.b'), 'x');
    assert.equal(getPath(o, 'spec.a'), undefined, 'an object is no image');
    assert.deepEqual(setPath(o, 'spec.a.c', 'y'), { spec: { a: { b: 'x', c: 'y' } } });
    assert.deepEqual(o, { spec: { a: { b: 'x' } } });
  });
});
