import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DEFAULT_VM_IMAGE, vmImageName } from '../../../../src/api/vm-image.ts';
import type { OptionsContext } from '../../../../src/capability.ts';
import { kvm } from '../../../../src/kvm/capability.ts';
import { desiredCluster } from '../../../../src/kvm/plan/desired.ts';
import { DEFAULT_VM } from '../../../../src/kvm/plan/desired-node.ts';
import { clusterPki, firstIndexes, kvmCluster } from '../fixtures.ts';

const VERSION = JSON.parse(
  readFileSync(join(import.meta.dirname, '../../../../package.json'), 'utf8'),
).version;
// biome-ignore lint/suspicious/noExplicitAny: reading rendered Deployments
type Any = any;
const images = (vmImage?: string) => {
  const kc = kvmCluster({ masters: 1, workers: 1 });
  return desiredCluster(
    kc,
    firstIndexes(kc),
    clusterPki(kc),
    vmImage ? { ...DEFAULT_VM, image: vmImage } : undefined,
  ).nodes.map((n) => (n.deployment as Any).spec.template.spec.containers[0].image);
};
// The operator on a host: the one field of its context the KVM options read.
const ctx = { runsIn: 'host' } as OptionsContext;

describe('--kvm-vm-image: the image VM pods run', () => {
  it('defaults to what `make vm-image` builds: localhost/nodewarden-vm at the app version', async () => {
    assert.equal(DEFAULT_VM_IMAGE, vmImageName(VERSION));
    const options = await kvm.options?.({}, ctx);
    assert.equal(options?.vm.image, DEFAULT_VM_IMAGE);
    assert.deepEqual(images(), [DEFAULT_VM_IMAGE, DEFAULT_VM_IMAGE]);
  });

  it('names another image for every VM pod when given', async () => {
    const options = await kvm.options?.({ 'kvm-vm-image': 'registry.example.com/k8s-kvm:1.2.3' }, ctx);
    assert.equal(options?.vm.image, 'registry.example.com/k8s-kvm:1.2.3');
    assert.deepEqual(images(options?.vm.image), [
      'registry.example.com/k8s-kvm:1.2.3',
      'registry.example.com/k8s-kvm:1.2.3',
    ]);
  });
});
