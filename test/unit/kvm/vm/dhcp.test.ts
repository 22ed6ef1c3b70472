import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DHCP, dhcpReply, type Lease, parseRequest, prefixMask } from '../../../../src/kvm/vm/dhcp.ts';

const LEASE: Lease = {
  mac: '0a:58:0a:f4:01:05',
  ip: '10.244.1.5',
  prefix: 24,
  router: '10.244.1.1',
  dns: ['10.96.0.10'],
  mtu: 1450,
  hostname: 'worker-w1-abc',
};

/** A client's message as a guest sends it: BOOTREQUEST, its MAC, the magic cookie, options. */
function request(type: number, mac: string, opts: { requested?: string; ciaddr?: string } = {}): Buffer {
  const b = Buffer.alloc(240);
  b[0] = 1;
  b[1] = 1;
  b[2] = 6;
  b.writeUInt32BE(0xdeadbeef, 4);
  if (opts.ciaddr) Buffer.from(opts.ciaddr.split('.').map(Number)).copy(b, 12);
  Buffer.from(mac.split(':').map((x) => Number.parseInt(x, 16))).copy(b, 28);
  b.writeUInt32BE(0x63825363, 236);
  const o = [53, 1, type];
  if (opts.requested) o.push(50, 4, ...opts.requested.split('.').map(Number));
  return Buffer.concat([b, Buffer.from([...o, 255])]);
}

/** The reply's options by code. */
function options(reply: Buffer): Map<number, Buffer> {
  const m = new Map<number, Buffer>();
  for (let i = 240; i < reply.length && reply[i] !== 255; ) {
    const len = reply[i + 1] ?? 0;
    m.set(reply[i] ?? 0, reply.subarray(i + 2, i + 2 + len));
    i += 2 + len;
  }
  return m;
}
const ip = (b?: Buffer) => [...(b ?? [])].join('.');

describe('DHCP: the pod address handed to its VM', () => {
  it('reads a DISCOVER: its transaction, MAC and type', () => {
    const r = parseRequest(request(DHCP.discover, LEASE.mac));
    assert.deepEqual(r, { xid: 0xdeadbeef, mac: LEASE.mac, type: DHCP.discover, flags: 0 });
  });

  it('offers the pod address, mask, router, DNS, MTU, hostname and an infinite lease', () => {
    const reply = dhcpReply(request(DHCP.discover, LEASE.mac), LEASE, '169.254.77.1');
    assert.ok(reply);
    assert.equal(reply[0], 2, 'BOOTREPLY');
    assert.equal(reply.readUInt32BE(4), 0xdeadbeef);
    assert.equal(ip(reply.subarray(16, 20)), '10.244.1.5');
    const o = options(reply);
    assert.deepEqual([...(o.get(53) ?? [])], [DHCP.offer]);
    assert.equal(ip(o.get(54)), '169.254.77.1');
    assert.equal(ip(o.get(1)), '255.255.255.0');
    assert.equal(ip(o.get(3)), '10.244.1.1');
    assert.equal(ip(o.get(6)), '10.96.0.10');
    assert.equal(o.get(26)?.readUInt16BE(0), 1450);
    assert.equal(o.get(12)?.toString(), 'worker-w1-abc');
    assert.equal(o.get(51)?.readUInt32BE(0), 0xffffffff);
  });

  it('acknowledges a REQUEST for the pod address, or with none named', () => {
    for (const opts of [{ requested: '10.244.1.5' }, {}, { ciaddr: '10.244.1.5' }]) {
      const reply = dhcpReply(request(DHCP.request, LEASE.mac, opts), LEASE, '169.254.77.1');
      assert.deepEqual(
        [...(options(reply ?? Buffer.alloc(0)).get(53) ?? [])],
        [DHCP.ack],
        JSON.stringify(opts),
      );
    }
  });

  it('refuses (NAK, no address) a REQUEST for another address', () => {
    const reply = dhcpReply(
      request(DHCP.request, LEASE.mac, { requested: '10.244.1.9' }),
      LEASE,
      '169.254.77.1',
    );
    assert.ok(reply);
    assert.deepEqual([...(options(reply).get(53) ?? [])], [DHCP.nak]);
    assert.equal(ip(reply.subarray(16, 20)), '0.0.0.0');
  });

  it('answers no other MAC, no RELEASE or INFORM, and nothing that is not a DHCP request', () => {
    assert.equal(dhcpReply(request(DHCP.discover, '02:00:00:00:00:01'), LEASE, '169.254.77.1'), undefined);
    assert.equal(dhcpReply(request(DHCP.release, LEASE.mac), LEASE, '169.254.77.1'), undefined);
    assert.equal(dhcpReply(request(DHCP.inform, LEASE.mac), LEASE, '169.254.77.1'), undefined);
    assert.equal(dhcpReply(Buffer.alloc(100), LEASE, '169.254.77.1'), undefined);
    const reply = request(DHCP.discover, LEASE.mac);
    reply[0] = 2;
    assert.equal(dhcpReply(reply, LEASE, '169.254.77.1'), undefined, 'a reply is not a request');
  });

  for (const [prefix, mask] of [
    [8, '255.0.0.0'],
    [16, '255.255.0.0'],
    [23, '255.255.254.0'],
    [32, '255.255.255.255'],
    [0, '0.0.0.0'],
  ] as const) {
    it(`/${prefix} is ${mask}`, () => assert.equal(prefixMask(prefix), mask));
  }
});
