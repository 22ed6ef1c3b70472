import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  needsImageSwitch,
  sameImage,
  sameKubernetesVersion,
} from '../../../src/upgrade/controllers/scalinggroup.ts';
import { nodeVersionOf } from '../../../src/upgrade/names.ts';

describe('which NodeVersion a scaling group follows', () => {
  it('is the one it names', () => {
    assert.equal(nodeVersionOf({ spec: { groupId: 'g', nodeVersion: 'fleet-a' } }), 'fleet-a');
  });

  it('is the default one when it names none, or an empty name', () => {
    assert.equal(nodeVersionOf({ spec: { groupId: 'g' } }), 'default');
    assert.equal(nodeVersionOf({ spec: { groupId: 'g', nodeVersion: '' } }), 'default');
  });
});

describe('comparing image references', () => {
  it('ignores case, as cloud ids come in any case', () => {
    assert.ok(sameImage('/Subscriptions/X/Images/Node-V2', '/subscriptions/x/images/node-v2'));
  });

  it('tells different images apart', () => {
    assert.ok(!sameImage('img-v1', 'img-v2'));
  });

  it('treats v1.37.1 and 1.37.1 as the same Kubernetes release', () => {
    assert.ok(sameKubernetesVersion('v1.37.1', '1.37.1'));
    assert.ok(!sameKubernetesVersion('v1.37.1', 'v1.37.2'));
  });
});

describe('deciding whether to switch the launch image', () => {
  const cases: {
    name: string;
    current: { image: string; kubernetesVersion?: string };
    target: { image: string; kubernetesVersion?: string };
    want: boolean;
  }[] = [
    { name: 'same image', current: { image: 'img-v2' }, target: { image: 'img-v2' }, want: false },
    {
      name: 'same image in another case',
      current: { image: 'IMG-V2' },
      target: { image: 'img-v2' },
      want: false,
    },
    { name: 'another image', current: { image: 'img-v1' }, target: { image: 'img-v2' }, want: true },
    {
      name: 'same image, older Kubernetes',
      current: { image: 'img', kubernetesVersion: '1.36.0' },
      target: { image: 'img', kubernetesVersion: 'v1.37.1' },
      want: true,
    },
    {
      name: 'same image and Kubernetes, written differently',
      current: { image: 'img', kubernetesVersion: '1.37.1' },
      target: { image: 'img', kubernetesVersion: 'v1.37.1' },
      want: false,
    },
    {
      name: 'the cloud does not say which Kubernetes it launches',
      current: { image: 'img' },
      target: { image: 'img', kubernetesVersion: 'v1.37.1' },
      want: false,
    },
    {
      name: 'the NodeVersion asks for no Kubernetes version',
      current: { image: 'img', kubernetesVersion: '1.30.0' },
      target: { image: 'img' },
      want: false,
    },
  ];
  for (const c of cases) {
    it(`${c.want ? 'switches' : 'keeps'} when: ${c.name}`, () => {
      assert.equal(needsImageSwitch(c.current, c.target), c.want);
    });
  }
});
