import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_FLATCAR_MIRROR, VmAnnotations, VmMounts } from '../../../../src/api/vm-image.ts';
import { kvmOptions, vmOsFromFlags } from '../../../../src/kvm/options.ts';
import { desiredCluster } from '../../../../src/kvm/plan/desired.ts';
import { DEFAULT_VM, type VmOsChoice } from '../../../../src/kvm/plan/desired-node.ts';
import { vmConfigFromEnv } from '../../../../src/kvm/vm/config.ts';
import { clusterPki, firstIndexes, kvmCluster } from '../fixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: reading rendered Deployments
type Any = any;
const kc = kvmCluster({ masters: 1, workers: 1 });
const pki = clusterPki(kc);
const render = (...os: [VmOsChoice] | []) =>
  desiredCluster(kc, firstIndexes(kc), pki, os[0] ? { ...DEFAULT_VM, os: os[0] } : undefined).nodes.map(
    (n) => n.deployment as Any,
  );
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));

describe('--kvm-os-image and --kvm-os-mirror', () => {
  const flags: Array<[string, Record<string, string>, VmOsChoice | RegExp]> = [
    ['nothing given: debian', {}, { image: 'debian' }],
    ['flatcar from the stable server', { 'kvm-os-image': 'flatcar' }, { image: 'flatcar' }],
    [
      'flatcar from a mirror',
      { 'kvm-os-image': 'flatcar', 'kvm-os-mirror': 'https://mirror.example/flatcar/' },
      { image: 'flatcar', mirror: 'https://mirror.example/flatcar/' },
    ],
    [
      'refuses another OS',
      { 'kvm-os-image': 'ubuntu' },
      /--kvm-os-image: "ubuntu" is not one of debian, flatcar/,
    ],
    [
      'refuses a mirror for debian',
      { 'kvm-os-mirror': 'https://m.example/' },
      /only with --kvm-os-image flatcar/,
    ],
    [
      'refuses a mirror that is no URL',
      { 'kvm-os-image': 'flatcar', 'kvm-os-mirror': 'm.example' },
      /not an http\(s\) URL/,
    ],
  ];
  for (const [name, given, want] of flags)
    it(name, () => {
      if (want instanceof RegExp) assert.throws(() => vmOsFromFlags(given), want);
      else assert.deepEqual(vmOsFromFlags(given), want);
    });

  it("the operator's options carry the choice", async () => {
    assert.deepEqual((await kvmOptions({}, 'host')).vm.os, { image: 'debian' });
    assert.deepEqual((await kvmOptions({ 'kvm-os-image': 'flatcar' }, 'host')).vm.os, { image: 'flatcar' });
  });
});

describe('VM pods as each OS renders them', () => {
  it('debian, the default, renders what it rendered before the flag: no mirror, no host cache', () => {
    const [master, worker] = render();
    assert.deepEqual(render({ image: 'debian' }), [master, worker]);
    for (const d of [master, worker]) {
      const c = d.spec.template.spec.containers[0];
      assert.deepEqual(
        c.env.map((e: Any) => e.name),
        [
          'CORES',
          'MEMORY',
          'ROLE',
          'OS_IMAGE',
          'OS_VERSION',
          'DISK_OS',
          'DISK_DOCKER',
          'DISK_KUBELET',
          'HOSTNAME',
          'HEALTH_PORT',
          'GRACE_SECONDS',
        ],
      );
      assert.equal(c.env.find((e: Any) => e.name === 'OS_IMAGE').value, 'debian');
      // What the simulated hypervisor's Node reports: what the real guest's kubelet does (make test-vm checks it).
      assert.equal(
        d.spec.template.metadata.annotations[VmAnnotations.osVersion],
        'Debian GNU/Linux 12 (bookworm)',
      );
      assert.ok(!c.volumeMounts.some((m: Any) => m.mountPath === VmMounts.osCache));
      assert.ok(!d.spec.template.spec.volumes.some((v: Any) => v.hostPath?.path === VmMounts.osCache));
    }
    assert.deepEqual(
      master.spec.template.spec.volumes.map((v: Any) => v.name),
      ['ignition', 'rootfs', 'etcd-data'],
    );
    assert.deepEqual(
      worker.spec.template.spec.volumes.map((v: Any) => v.name),
      ['ignition', 'rootfs'],
    );
  });

  it('flatcar differs only by OS_IMAGE, OS_MIRROR, the host cache mounted, the OS it says, and a spec hash that rolls the VMs', () => {
    const debian = render();
    const flatcar = render({ image: 'flatcar', mirror: 'https://mirror.example/' });
    debian.forEach((d, i) => {
      const f = flatcar[i];
      const want = clone(d);
      const spec = want.spec.template.spec;
      const c = spec.containers[0];
      c.env.find((e: Any) => e.name === 'OS_IMAGE').value = 'flatcar';
      want.spec.template.metadata.annotations[VmAnnotations.osVersion] =
        `Flatcar Container Linux ${kc.spec.release.osVersion}`;
      c.env.splice(5, 0, { name: 'OS_MIRROR', value: 'https://mirror.example/' });
      c.volumeMounts.push({ name: 'os-cache', mountPath: VmMounts.osCache });
      spec.volumes.push({
        name: 'os-cache',
        hostPath: { path: VmMounts.osCache, type: 'DirectoryOrCreate' },
      });
      // The spec hash is the one other difference: copy it over, then everything else must match.
      const hashKey = Object.keys(d.metadata.annotations).find(
        (k) => d.metadata.annotations[k] !== f.metadata.annotations[k],
      );
      assert.ok(hashKey, 'the node spec hash changed');
      want.metadata.annotations[hashKey] = f.metadata.annotations[hashKey];
      want.spec.template.metadata.annotations[hashKey] = f.spec.template.metadata.annotations[hashKey];
      assert.deepEqual(f, want);
    });
  });

  it("flatcar's env is what the VM image's entrypoint reads, the stable server when no mirror is given", () => {
    const [, worker] = render({ image: 'flatcar' });
    const env = Object.fromEntries(
      worker.spec.template.spec.containers[0].env.map((e: Any) => [e.name, e.value ?? 'w1-pod']),
    );
    const config = vmConfigFromEnv(env);
    assert.equal(config.osImage, 'flatcar');
    assert.equal(config.osVersion, kc.spec.release.osVersion);
    assert.deepEqual(config.flatcar, { mirror: DEFAULT_FLATCAR_MIRROR });
  });
});
