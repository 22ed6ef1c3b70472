import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  cidrContains,
  formatAddress,
  formatMac,
  netmaskOf,
  parseAddress,
  parseCidr,
  parseMac,
} from '../../../../src/baremetal/ipam/address.ts';

describe('addresses', () => {
  const roundTrips = [
    ['10.0.0.1', '10.0.0.1'],
    ['255.255.255.255', '255.255.255.255'],
    ['2600:1700:b030:0000::1', '2600:1700:b030::1'],
    ['FD00:0:0:0:0:0:0:1', 'fd00::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1:0:0:1:0:0:0:1', '1:0:0:1::1'],
    ['::ffff:10.0.0.1', '::ffff:a00:1'],
    ['fd00::ffff:ffff:ffff:ffff', 'fd00::ffff:ffff:ffff:ffff'],
  ];
  for (const [text, canonical] of roundTrips)
    it(`reads ${text} and writes ${canonical}`, () => {
      const a = parseAddress(text!);
      assert.ok(a);
      assert.equal(formatAddress(a), canonical);
    });
  for (const bad of ['10.0.0', '10.0.0.256', '01.0.0.1', '1::2::3', '1:2:3:4:5:6:7:8:9', 'x::1', ''])
    it(`refuses ${JSON.stringify(bad)}`, () => assert.equal(parseAddress(bad), undefined));
});

describe('CIDRs', () => {
  it('clears host bits and contains its own addresses only', () => {
    const c = parseCidr('192.168.2.7/20');
    assert.ok(c);
    assert.equal(formatAddress({ family: 4, value: c.base }), '192.168.0.0');
    assert.equal(cidrContains(c, parseAddress('192.168.15.255')!), true);
    assert.equal(cidrContains(c, parseAddress('192.168.16.0')!), false);
    assert.equal(cidrContains(c, parseAddress('fd00::1')!), false);
    assert.equal(netmaskOf(c), '255.255.240.0');
  });
  it('refuses a prefix too long for the family', () => {
    assert.equal(parseCidr('10.0.0.0/33'), undefined);
    assert.ok(parseCidr('fd00::/128'));
    assert.equal(parseCidr('fd00::/129'), undefined);
  });
});

describe('MACs', () => {
  it('round-trips in lower case', () => {
    assert.equal(formatMac(parseMac('52:54:00:AB:cd:0F')! + 1n), '52:54:00:ab:cd:10');
    assert.equal(parseMac('52:54:00:ab:cd'), undefined);
  });
});
