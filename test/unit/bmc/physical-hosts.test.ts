import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkMachineSpec } from '../../../src/cluster/infra/bmc/machine-spec.ts';
import { parsePhysicalHosts, planPhysicalHosts } from '../../../src/cluster/infra/bmc/physical-hosts.ts';

describe('--bare-metal-hosts', () => {
  for (const [text, want] of [
    ['24', { count: 24, racks: 1 }],
    ['24:racks=4', { count: 24, racks: 4 }],
    ['1:racks=1', { count: 1, racks: 1 }],
  ] as const) {
    it(`reads ${text}`, () => assert.deepEqual(parsePhysicalHosts(text), want));
  }
  for (const [text, message] of [
    ['0', /host count must be 1\.\./],
    ['x', /host count must be a whole number/],
    ['4:racks=5', /racks must be 1\.\.4/],
    ['4:rows=2', /unknown option "rows=2"/],
    ['2000:racks=1', /at most 1014 hosts per rack/],
  ] as const) {
    it(`refuses ${text}`, () => assert.throws(() => parsePhysicalHosts(text), message));
  }
});

describe('planning physical hosts', () => {
  const hosts = planPhysicalHosts('demo', { count: 10, racks: 3 });

  it('fills the racks in turn, the first ones taking the remainder', () => {
    assert.deepEqual(
      hosts.map((h) => `${h.rack}/${h.id}`),
      [
        'rack-0/bm-r0-00',
        'rack-0/bm-r0-01',
        'rack-0/bm-r0-02',
        'rack-0/bm-r0-03',
        'rack-1/bm-r1-00',
        'rack-1/bm-r1-01',
        'rack-1/bm-r1-02',
        'rack-2/bm-r2-00',
        'rack-2/bm-r2-01',
        'rack-2/bm-r2-02',
      ],
    );
  });

  it('makes valid machine specs with unique MACs, addresses and passwords', () => {
    for (const h of hosts) assert.deepEqual(checkMachineSpec(h), h);
    const macs = hosts.flatMap((h) => h.nics.map((n) => n.mac));
    const ips = hosts.map((h) => h.nics[0]?.ip);
    const passwords = hosts.map((h) => h.credentials.password);
    assert.equal(new Set(macs).size, macs.length);
    assert.equal(new Set(ips).size, ips.length);
    assert.equal(new Set(passwords).size, passwords.length);
  });

  it('varies the hardware within its ranges', () => {
    const many = planPhysicalHosts('demo', { count: 64, racks: 4 });
    for (const h of many) {
      assert.ok(h.cpus >= 8 && h.cpus <= 64);
      assert.ok(h.nics.length >= 1 && h.nics.length <= 4);
    }
    assert.ok(new Set(many.map((h) => h.cpus)).size > 2, 'CPU counts vary');
    assert.ok(new Set(many.map((h) => h.memoryMiB)).size > 2, 'memory sizes vary');
  });

  it('repeats itself for a cluster, and differs between clusters', () => {
    assert.deepEqual(planPhysicalHosts('demo', { count: 10, racks: 3 }), hosts);
    const other = planPhysicalHosts('other', { count: 10, racks: 3 });
    assert.notDeepEqual(
      other.map((h) => h.nics[0]?.mac),
      hosts.map((h) => h.nics[0]?.mac),
    );
  });

  it('never changes a host when more are asked for later', () => {
    const more = planPhysicalHosts('demo', { count: 16, racks: 3 });
    for (const h of hosts)
      assert.deepEqual(
        more.find((m) => m.id === h.id),
        h,
      );
    const ips = more.map((h) => h.nics[0]?.ip);
    assert.equal(new Set(ips).size, ips.length);
  });
});
