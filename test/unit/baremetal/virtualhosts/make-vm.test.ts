// makeVm against a tiny fake hypervisor and a recording client: the order of
// its writes, and that a failure before the host leaves no half of it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BareMetalHost } from '../../../../src/api/baremetal.ts';
import type {
  HeldVm,
  Hypervisor,
  Hypervisors,
  VmDefinition,
} from '../../../../src/baremetal/virtualhosts/hypervisors/hypervisor.ts';
import { HypervisorError } from '../../../../src/baremetal/virtualhosts/hypervisors/hypervisor.ts';
import { makeVm, type VmContext } from '../../../../src/baremetal/virtualhosts/make-vm.ts';
import type { Pool } from '../../../../src/baremetal/virtualhosts/objects.ts';
import { ApiError } from '../../../../src/runtime/errors.ts';
import type { K8sObject } from '../../../../src/runtime/resources.ts';

/** Every node's hypervisor in one, recording what each is asked. */
class FakeHypervisors implements Hypervisors {
  readonly agent = { kind: 'pause' } as const;
  defined: (VmDefinition & { node: string })[] = [];
  removed: string[] = [];
  fail: string | undefined;
  /** Ids defined earlier another way: the hypervisor answers 409 until they are removed. */
  stale = new Set<string>();
  of(node: string): Hypervisor {
    return {
      node,
      define: async (vm: VmDefinition): Promise<HeldVm> => {
        if (this.fail) throw new HypervisorError(this.fail, true);
        if (this.stale.has(vm.id)) throw new HypervisorError('defined with another spec', false, 409);
        this.defined.push({ ...vm, node });
        return {
          id: vm.id,
          power: 'Off',
          redfishAddress: `redfish://127.0.0.1:9/redfish/v1/Systems/${vm.id}`,
        };
      },
      remove: async (id: string): Promise<void> => {
        this.removed.push(id);
        this.stale.delete(id);
      },
      list: async (): Promise<HeldVm[]> => [],
    };
  }
}

const pool = (template?: { name: string }): Pool =>
  ({
    apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
    kind: 'VirtualHostPool',
    metadata: { name: 'lab', namespace: 'ns', uid: 'u1', generation: 1 },
    spec: {
      nodeSelector: { matchLabels: { hv: 'true' } },
      networks: [
        {
          name: 'oam',
          subnet: '10.0.0.0/24',
          staticAllocationStart: '10.0.0.10',
          staticAllocationStop: '10.0.0.20',
        },
      ],
      nodes: [
        {
          name: 'worker',
          count: 1,
          cpus: 2,
          memoryMiB: 1024,
          diskGB: 5,
          networkInterfaces: [{ name: 'enp1s0', network: 'oam' }],
          ...(template ? { networkDataTemplate: template } : {}),
        },
      ],
      bmcCredentials: { username: 'admin', password: 'pw' },
    },
  }) as unknown as Pool;

const vm = { name: 'lab-n1-worker-0', node: 'n1', flavor: 'worker', index: 0 };
const nics = [{ nic: 'enp1s0', network: 'oam', ip: '10.0.0.11', mac: '02:00:00:00:00:01' }];

function context(p: Pool, secrets: Record<string, K8sObject> = {}, templates: Record<string, string> = {}) {
  const writes: string[] = [];
  const hv = new FakeHypervisors();
  const ctx = {
    pool: p,
    hypervisors: hv,
    events: { normal() {}, warning() {} },
    cache: { get: (_t: unknown, name: string) => secrets[name] },
    client: {
      async patch(type: { kind: string }, name: string, _ns: string, body: K8sObject) {
        writes.push(`${type.kind}/${name}`);
        return body;
      },
      async get(_t: unknown, name: string) {
        if (!(name in templates)) throw new ApiError(404, 'not found');
        return { data: { template: Buffer.from(templates[name]!).toString('base64') } };
      },
    },
  } as unknown as VmContext;
  return { ctx, writes, hv };
}

describe('makeVm', () => {
  it('defines the machine, then writes both Secrets, then the host with the BMC address the hypervisor gave', async () => {
    const { ctx, writes, hv } = context(pool());
    const r = await makeVm(ctx, vm, nics, undefined, { bridge: { oam: { ip: '10.0.0.10' } }, dhcp: {} }, {});
    assert.equal(r.kind, 'made');
    assert.deepEqual(writes, [
      'Secret/lab-n1-worker-0-bmc-secret',
      'Secret/lab-n1-worker-0-network-data',
      'BareMetalHost/lab-n1-worker-0',
    ]);
    assert.deepEqual(
      hv.defined.map((m) => [m.id, m.node, m.flavor.cpus, m.nics[0]?.mac]),
      [['ns-lab-n1-worker-0', 'n1', 2, '02:00:00:00:00:01']],
    );
    const host = (r as { host: BareMetalHost }).host;
    assert.equal(host.spec.bmc?.address, 'redfish://127.0.0.1:9/redfish/v1/Systems/ns-lab-n1-worker-0');
    assert.equal(host.spec.bootMACAddress, '02:00:00:00:00:01');
  });

  it('writes nothing when the hypervisor refuses the machine', async () => {
    const { ctx, writes, hv } = context(pool());
    hv.fail = 'BMC fleet unreachable';
    const r = await makeVm(ctx, vm, nics, undefined, undefined, {});
    assert.deepEqual(r, { kind: 'error', reason: 'HypervisorError', message: 'BMC fleet unreachable' });
    assert.deepEqual(writes, []);
  });

  it('defines nothing and writes nothing when the template Secret is missing, and says so', async () => {
    const { ctx, writes, hv } = context(pool({ name: 'nd-template' }));
    const r = await makeVm(ctx, vm, nics, undefined, undefined, {});
    assert.equal(r.kind, 'error');
    assert.match((r as { message: string }).message, /networkDataTemplate Secret ns\/nd-template not found/);
    assert.deepEqual([writes, hv.defined], [[], []]);
  });

  it('renders the template into the networkData Secret', async () => {
    const { ctx } = context(
      pool({ name: 'nd-template' }),
      {},
      { 'nd-template': 'ip: {{ interfaces.enp1s0.ip }}' },
    );
    let written: K8sObject | undefined;
    const patch = ctx.client.patch.bind(ctx.client);
    ctx.client.patch = (async (type: never, name: string, ns: string, body: K8sObject, o: never) => {
      if (name.endsWith('-network-data')) written = body;
      return patch(type, name, ns, body, o);
    }) as never;
    await makeVm(ctx, vm, nics, undefined, undefined, {});
    const data = (written as { data: { networkData: string } }).data.networkData;
    assert.equal(Buffer.from(data, 'base64').toString(), 'ip: 10.0.0.11');
  });

  it('costs nothing when the host and its Secrets are already as wanted', async () => {
    const first = context(pool());
    const made = await makeVm(first.ctx, vm, nics, undefined, undefined, {});
    const host = (made as { host: BareMetalHost }).host;
    const creds = {
      data: {
        username: Buffer.from('admin').toString('base64'),
        password: Buffer.from('pw').toString('base64'),
      },
    };
    const { ctx, writes, hv } = context(pool(), {
      'lab-n1-worker-0-bmc-secret': creds,
      'lab-n1-worker-0-network-data': { data: {} },
    });
    const r = await makeVm(ctx, vm, nics, host, undefined, {});
    assert.equal(r.kind, 'made');
    assert.deepEqual([writes, hv.defined], [[], []]);
  });

  /** A host made by an earlier round, and a context whose cache holds its Secrets as they were written. */
  async function madeEarlier(): Promise<{ host: BareMetalHost; next: ReturnType<typeof context> }> {
    const made = await makeVm(context(pool()).ctx, vm, nics, undefined, undefined, {});
    const creds = {
      data: {
        username: Buffer.from('admin').toString('base64'),
        password: Buffer.from('pw').toString('base64'),
      },
    };
    const next = context(pool(), {
      'lab-n1-worker-0-bmc-secret': creds,
      'lab-n1-worker-0-network-data': { data: {} },
    });
    return { host: (made as { host: BareMetalHost }).host, next };
  }

  // Found by the soak's libvirt share: a host powered off by its user was switched back on.
  it("keeps the host's spec.online as its user set it, writing nothing", async () => {
    const { host, next } = await madeEarlier();
    const off = { ...host, spec: { ...host.spec, online: false } } as BareMetalHost;
    const r = await makeVm(next.ctx, vm, nics, off, undefined, {});
    assert.equal(r.kind, 'made');
    assert.deepEqual([next.writes, next.hv.defined], [[], []]);
    assert.equal((r as { host: BareMetalHost }).host.spec.online, false);
  });

  const table: [string, (address: string) => HeldVm | null | undefined, number][] = [
    [
      'the hypervisor holds it at that address: nothing',
      (a) => ({ id: 'x', power: 'On', redfishAddress: a }),
      0,
    ],
    ['the hypervisor was not asked: nothing', () => undefined, 0],
    // Found by the soak's libvirt share: a VM host agent started again with a fresh libvirtd.
    ['the hypervisor lost it: defined again, the host written', () => null, 1],
    [
      'the hypervisor holds it at another address: the host written with it',
      () => ({ id: 'x', power: 'Off', redfishAddress: 'redfish://127.0.0.1:1/redfish/v1/Systems/x' }),
      1,
    ],
  ];
  for (const [name, held, defines] of table)
    it(`a host up to date: ${name}`, async () => {
      const { host, next } = await madeEarlier();
      const r = await makeVm(next.ctx, vm, nics, host, undefined, {}, held(host.spec.bmc!.address));
      assert.equal(r.kind, 'made');
      assert.equal(next.hv.defined.length, defines);
      assert.equal(next.writes.includes('BareMetalHost/lab-n1-worker-0'), defines > 0);
      assert.equal((r as { host: BareMetalHost }).host.spec.online, true);
    });

  it('replaces a machine left with another spec by a round that never made its host', async () => {
    const { ctx, writes, hv } = context(pool());
    hv.stale.add('ns-lab-n1-worker-0');
    const r = await makeVm(ctx, vm, nics, undefined, undefined, {});
    assert.equal(r.kind, 'made');
    assert.deepEqual(hv.removed, ['ns-lab-n1-worker-0']);
    assert.equal(writes.length, 3);
  });

  it('waits while the old host of that name is still being deleted', async () => {
    const { ctx, writes } = context(pool());
    const going = {
      metadata: { name: vm.name, deletionTimestamp: '2026-01-01T00:00:00Z' },
      spec: {},
    } as BareMetalHost;
    assert.deepEqual(await makeVm(ctx, vm, nics, going, undefined, {}), { kind: 'waiting' });
    assert.deepEqual(writes, []);
  });
});
