// One node's VMs as libvirt domains, against a fake virsh that keeps a
// domain's defined XML and its running copy apart as libvirt does: changes a
// BMC client asks for at once must not interleave. (The real thing, against
// libvirtd, is test/integration/vmhosts-libvirt.test.ts.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VmDefinition } from '../../../../../src/baremetal/virtualhosts/hypervisors/hypervisor.ts';
import type { Virsh } from '../../../../../src/baremetal/virtualhosts/hypervisors/libvirt/virsh.ts';
import { LibvirtVmHost } from '../../../../../src/baremetal/virtualhosts/hypervisors/libvirt/vm-host.ts';

const vm: VmDefinition = {
  id: 'ns-lab-n1-worker-0',
  flavor: { name: 'worker', cpus: 1, memoryMiB: 256 },
  disks: [{ sizeGB: 2 }],
  nics: [{ name: 'enp1s0', mac: '02:00:00:00:00:01', ip: '10.0.0.11', network: 'oam' }],
  credentials: { username: 'admin', password: 'pw' },
};

const cdOf = (xml: string | undefined) => /<source file='([^']*-cd\.iso)'/.exec(xml ?? '')?.[1];

/** libvirt as far as the VM host uses it: `defined` is the config, `live` the running domain's copy. */
function fakeVirsh(uploadGate: Promise<void>) {
  const state = {
    defined: undefined as string | undefined,
    live: undefined as string | undefined,
    /** If set, the next dumpxml answers what was defined when it was asked, only once this settles. */
    slowRead: undefined as Promise<void> | undefined,
  };
  const liveCd = { file: undefined as string | undefined };
  const virsh = {
    defineDomain: async (xml: string) => {
      state.defined = xml;
    },
    domainXml: async () => {
      const then = state.defined;
      const wait = state.slowRead;
      state.slowRead = undefined;
      await wait;
      return then;
    },
    domainState: async () => (state.defined ? (state.live ? 'running' : 'shut off') : undefined),
    start: async () => {
      state.live = state.defined;
      liveCd.file = cdOf(state.defined);
      return '';
    },
    destroy: async () => {
      state.live = undefined;
      liveCd.file = undefined;
      return '';
    },
    reset: async () => '',
    changeMedia: async (_name: string, _target: string, source: string | undefined) => {
      if (state.live) liveCd.file = source;
    },
    ensureNetwork: async () => undefined,
    ensureVolume: async (_pool: string, name: string) => `/pool/${name}`,
    uploadVolume: async (_pool: string, name: string) => {
      await uploadGate;
      return `/pool/${name}`;
    },
    volumePath: async (_pool: string, name: string) => `/pool/${name}`,
    deleteVolume: async () => undefined,
  };
  return { virsh: virsh as unknown as Virsh, state, liveCd };
}

describe('a libvirt VM host', () => {
  it('finishes an insert still uploading before a start asked meanwhile: the started domain has the CD', async () => {
    const { promise: gate, resolve: upload } = Promise.withResolvers<void>();
    const { virsh, liveCd } = fakeVirsh(gate);
    const host = new LibvirtVmHost({ virsh, virtType: 'qemu', dir: '/nonexistent' });
    await host.define(vm);
    // A client gave up on the slow insert and went on: boot from CD once, power on.
    const insert = host.insertMedia(vm.id, 'http://images/live.iso', '/tmp/live.iso', 1024);
    const boot = host.setBoot(vm.id, { target: 'Cd', enabled: 'Once', mode: 'Legacy' });
    const start = host.powerOn(vm.id);
    await new Promise((r) => setImmediate(r));
    upload();
    await Promise.all([insert, boot, start]);
    assert.equal(liveCd.file, `/pool/${vm.id}-cd.iso`);
    assert.equal((await host.get(vm.id))?.record.media, 'http://images/live.iso');
  });

  it('keeps no record read while a change was written: the next start still has the CD', async () => {
    const { virsh, state, liveCd } = fakeVirsh(Promise.resolve());
    const host = new LibvirtVmHost({ virsh, virtType: 'qemu', dir: '/nonexistent' });
    await host.define(vm);
    const { promise, resolve: answer } = Promise.withResolvers<void>();
    state.slowRead = promise;
    // A Systems GET reads the domain before the insert defines it again, and answers after.
    const read = host.get(vm.id);
    await host.insertMedia(vm.id, 'http://images/live.iso', '/tmp/live.iso', 1024);
    answer();
    await read;
    await host.setBoot(vm.id, { target: 'Cd', enabled: 'Once', mode: 'Legacy' });
    await host.powerOn(vm.id);
    assert.equal(liveCd.file, `/pool/${vm.id}-cd.iso`);
  });

  it('runs a change after one that failed', async () => {
    const { virsh } = fakeVirsh(Promise.reject(new Error('vol-upload: no space')));
    const host = new LibvirtVmHost({ virsh, virtType: 'qemu', dir: '/nonexistent' });
    await host.define(vm);
    await assert.rejects(host.insertMedia(vm.id, 'http://images/live.iso', '/tmp/x', 1), /no space/);
    await host.powerOn(vm.id);
    assert.equal((await host.get(vm.id))?.running, true);
  });
});
