// The IPAM decisions as tables: the anchor's cases (ViNO pkg/ipam/ipam_test.go:
// AllocateIP, NewRange, AddSubnetRange, findFreeIP) and ours (release, reuse,
// DHCP blocks, all-or-nothing).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatAddress } from '../../../../src/baremetal/ipam/address.ts';
import {
  addRange,
  allocateAll,
  allocateDhcpRange,
  allocateIP,
  findFreeIP,
  newPool,
  type PoolSpec,
  release,
} from '../../../../src/baremetal/ipam/allocate.ts';

const MAC = '02:00:00:00:00:00';
const v4 = (): PoolSpec => ({
  subnet: '10.0.0.0/16',
  macPrefix: MAC,
  ranges: [{ start: '10.0.1.1', stop: '10.0.1.3' }],
  allocations: [],
});
const v6 = (): PoolSpec => ({
  subnet: '2600:1700:b030:0000::/64',
  macPrefix: MAC,
  ranges: [{ start: '2600:1700:b030:0000::1', stop: '2600:1700:b030:0000::3' }],
  allocations: [],
});
// A range at the very top of a /64, past where a 64-bit counter would wrap.
const v6Top = (): PoolSpec => ({
  subnet: 'fd00::/64',
  macPrefix: MAC,
  ranges: [{ start: 'fd00::ffff:ffff:ffff:fffe', stop: 'fd00::ffff:ffff:ffff:ffff' }],
  allocations: [],
});
const held = (spec: PoolSpec, ...ips: string[]): PoolSpec => ({
  ...spec,
  allocations: ips.map((ip, i) => ({ owner: `old-${i}`, ip, mac: `02:00:00:00:00:0${i}` })),
});

describe('allocateIP', () => {
  const cases: {
    name: string;
    pool: PoolSpec;
    owner: string;
    range?: { start: string; stop: string };
    want: { ip: string; mac: string } | { cause: string };
  }[] = [
    {
      name: 'IPv4: the first address of the range',
      pool: v4(),
      owner: 'vm-a',
      want: { ip: '10.0.1.1', mac: MAC },
    },
    {
      name: 'IPv6: the first address of the range',
      pool: v6(),
      owner: 'vm-a',
      want: { ip: '2600:1700:b030::1', mac: MAC },
    },
    {
      name: 'IPv6 over all 128 bits: the top of a /64',
      pool: held(v6Top(), 'fd00::ffff:ffff:ffff:fffe'),
      owner: 'vm-a',
      want: { ip: 'fd00::ffff:ffff:ffff:ffff', mac: '02:00:00:00:00:01' },
    },
    {
      name: 'skips the addresses and MACs others hold',
      pool: held(v4(), '10.0.1.1'),
      owner: 'vm-b',
      want: { ip: '10.0.1.2', mac: '02:00:00:00:00:01' },
    },
    {
      name: 'idempotent per owner (IPv4): the address it holds, not a new one',
      pool: { ...v4(), allocations: [{ owner: 'vm-a', ip: '10.0.1.3', mac: '02:00:00:00:00:07' }] },
      owner: 'vm-a',
      want: { ip: '10.0.1.3', mac: '02:00:00:00:00:07' },
    },
    {
      name: 'idempotent per owner (IPv6)',
      pool: { ...v6(), allocations: [{ owner: 'vm-a', ip: '2600:1700:b030::2', mac: MAC }] },
      owner: 'vm-a',
      want: { ip: '2600:1700:b030::2', mac: MAC },
    },
    {
      name: 'a range the pool does not have is refused',
      pool: v4(),
      owner: 'vm-a',
      range: { start: '10.0.2.1', stop: '10.0.2.9' },
      want: { cause: 'rangeNotRegistered' },
    },
    {
      name: 'from the named range when given',
      pool: { ...v4(), ranges: [...v4().ranges, { start: '10.0.2.1', stop: '10.0.2.9' }] },
      owner: 'vm-a',
      range: { start: '10.0.2.1', stop: '10.0.2.9' },
      want: { ip: '10.0.2.1', mac: MAC },
    },
    {
      name: 'an exhausted IPv4 range',
      pool: held(v4(), '10.0.1.1', '10.0.1.2', '10.0.1.3'),
      owner: 'vm-d',
      want: { cause: 'exhausted' },
    },
    {
      name: 'an exhausted IPv6 range',
      pool: held(v6(), '2600:1700:b030::1', '2600:1700:b030::2', '2600:1700:b030::3'),
      owner: 'vm-d',
      want: { cause: 'exhausted' },
    },
    {
      name: 'a pool whose subnet is not a CIDR (not registered)',
      pool: { ...v4(), subnet: '10.0.0.0' },
      owner: 'vm-a',
      want: { cause: 'badSubnet' },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const r = allocateIP(c.pool, c.owner, c.range);
      if ('cause' in c.want) {
        assert.equal(r.ok, false);
        assert.equal(!r.ok && r.cause, c.want.cause);
        return;
      }
      assert.ok(r.ok, !r.ok ? r.message : '');
      assert.deepEqual({ ip: r.value.ip, mac: r.value.mac }, c.want);
      assert.equal(r.spec.allocations?.filter((a) => a.owner === c.owner).length, 1);
    });

  it('names the range and subnet when it is exhausted', () => {
    const r = allocateIP(held(v4(), '10.0.1.1', '10.0.1.2', '10.0.1.3'), 'vm-d');
    assert.equal(!r.ok && r.message, 'no free address left in 10.0.1.1-10.0.1.3 (subnet 10.0.0.0/16)');
  });
});

describe('newPool (the anchor NewRange)', () => {
  const cases = [
    { name: 'IPv4', subnet: '10.0.0.0/16', range: { start: '10.0.0.1', stop: '10.0.0.9' }, cause: undefined },
    { name: 'IPv6', subnet: 'fd00::/64', range: { start: 'fd00::1', stop: 'fd00::9' }, cause: undefined },
    {
      name: 'a subnet that is not a CIDR',
      subnet: '10.0.0.0/33',
      range: { start: '10.0.0.1', stop: '10.0.0.9' },
      cause: 'badSubnet',
    },
    {
      name: 'a range outside the subnet',
      subnet: '10.0.0.0/24',
      range: { start: '10.0.1.1', stop: '10.0.1.9' },
      cause: 'badRange',
    },
    {
      name: 'an inverted range',
      subnet: '10.0.0.0/24',
      range: { start: '10.0.0.9', stop: '10.0.0.1' },
      cause: 'badRange',
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const r = newPool(c.subnet, c.range, MAC);
      assert.equal(r.ok ? undefined : r.cause, c.cause);
      if (r.ok) assert.deepEqual([r.spec.ranges, r.spec.nextMAC, r.spec.allocations], [[c.range], MAC, []]);
    });
});

describe('addRange (the anchor AddSubnetRange)', () => {
  it('adds a new range to the subnet', () => {
    const r = addRange(v4(), { start: '10.0.2.1', stop: '10.0.2.9' }, MAC);
    assert.ok(r.ok);
    assert.equal(r.spec.ranges.length, 2);
  });
  it('leaves the pool as it is when the range is there already', () => {
    const pool = v4();
    const r = addRange(pool, { start: '10.0.1.1', stop: '10.0.1.3' }, MAC);
    assert.ok(r.ok);
    assert.equal(r.spec, pool);
  });
  it('refuses another MAC prefix: the prefix is immutable', () => {
    const r = addRange(v4(), { start: '10.0.2.1', stop: '10.0.2.9' }, '52:54:00:00:00:00');
    assert.equal(!r.ok && r.cause, 'macPrefixChanged');
  });
});

describe('findFreeIP', () => {
  const cases = [
    { name: 'the first address of an empty range', pool: v4(), want: '10.0.1.1' },
    { name: 'the first one no one holds', pool: held(v4(), '10.0.1.1', '10.0.1.3'), want: '10.0.1.2' },
    { name: 'IPv6', pool: held(v6(), '2600:1700:b030::1'), want: '2600:1700:b030::2' },
    { name: 'none in a full range', pool: held(v4(), '10.0.1.1', '10.0.1.2', '10.0.1.3'), want: undefined },
  ];
  for (const c of cases)
    it(c.name, () => {
      const a = findFreeIP(c.pool);
      assert.equal(a && formatAddress(a), c.want);
    });
});

describe('release and reuse', () => {
  it("frees an owner's address and MAC, and hands the same ones to the next owner", () => {
    let pool = v4();
    for (const owner of ['vm-0', 'vm-1', 'vm-2']) {
      const r = allocateIP(pool, owner);
      assert.ok(r.ok);
      pool = r.spec;
    }
    const freed = release(pool, (o) => o === 'vm-1');
    assert.deepEqual(freed.released, ['vm-1']);
    assert.deepEqual(
      freed.spec.allocations?.map((a) => a.owner),
      ['vm-0', 'vm-2'],
    );
    assert.equal(freed.spec.nextMAC, '02:00:00:00:00:01');
    const again = allocateIP(freed.spec, 'vm-9');
    assert.ok(again.ok);
    assert.deepEqual([again.value.ip, again.value.mac], ['10.0.1.2', '02:00:00:00:00:01']);
  });
  it('releasing an owner that holds nothing changes nothing', () => {
    const pool = held(v4(), '10.0.1.1');
    const r = release(pool, (o) => o === 'nobody');
    assert.equal(r.spec, pool);
    assert.deepEqual(r.released, []);
  });
  it('frees DHCP blocks too', () => {
    const pool: PoolSpec = { ...v4(), dhcpRange: { start: '10.0.4.0', stop: '10.0.4.31' }, dhcpBlockBits: 4 };
    const a = allocateDhcpRange(pool, 'bridge/n1');
    assert.ok(a.ok);
    const r = release(a.spec, (o) => o.startsWith('bridge/'));
    assert.deepEqual(r.spec.dhcpAllocations, []);
  });
});

describe('allocateAll', () => {
  it('gives every owner an address', () => {
    const r = allocateAll(v4(), ['vm/a/nic0', 'vm/a/nic1']);
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.map((a) => a.ip),
      ['10.0.1.1', '10.0.1.2'],
    );
  });
  it('gives none when the range cannot hold them all', () => {
    const r = allocateAll(held(v4(), '10.0.1.1', '10.0.1.2'), ['vm/a/nic0', 'vm/a/nic1']);
    assert.equal(!r.ok && r.cause, 'exhausted');
  });
});

describe('allocateDhcpRange', () => {
  // The anchor's sample: 192.168.4.0-7.255 in blocks of 16 gives 64 blocks.
  const pool: PoolSpec = {
    ...v4(),
    subnet: '192.168.0.0/20',
    ranges: [{ start: '192.168.2.10', stop: '192.168.2.14' }],
    dhcpRange: { start: '192.168.4.0', stop: '192.168.7.255' },
    dhcpBlockBits: 4,
  };
  it('hands out aligned blocks of 2^bits addresses, one per owner, idempotently', () => {
    const a = allocateDhcpRange(pool, 'n1');
    assert.ok(a.ok);
    assert.deepEqual([a.value.start, a.value.stop], ['192.168.4.0', '192.168.4.15']);
    const b = allocateDhcpRange(a.spec, 'n2');
    assert.ok(b.ok);
    assert.deepEqual([b.value.start, b.value.stop], ['192.168.4.16', '192.168.4.31']);
    const again = allocateDhcpRange(b.spec, 'n1');
    assert.ok(again.ok);
    assert.equal(again.spec, b.spec);
  });
  it('has 64 blocks in the sample range, then is exhausted', () => {
    let spec = pool;
    for (let i = 0; i < 64; i++) {
      const r = allocateDhcpRange(spec, `n${i}`);
      assert.ok(r.ok, `block ${i}`);
      spec = r.spec;
    }
    const r = allocateDhcpRange(spec, 'n64');
    assert.equal(!r.ok && r.cause, 'exhausted');
  });
  it('IPv6 blocks', () => {
    const r = allocateDhcpRange(
      { ...v6(), dhcpRange: { start: 'fd00::100', stop: 'fd00::1ff' }, subnet: 'fd00::/64' },
      'n1',
    );
    assert.ok(r.ok);
    assert.deepEqual([r.value.start, r.value.stop], ['fd00::100', 'fd00::10f']);
  });
  it('a pool without a DHCP range', () => {
    const r = allocateDhcpRange(v4(), 'n1');
    assert.equal(!r.ok && r.cause, 'noDhcpRange');
  });
});
