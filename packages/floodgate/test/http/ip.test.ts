import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatIp, inRange, maskIp, parseIp, parseIpRange } from '../../src/http/ip.js';
import { FloodgateError } from '../../src/index.js';

const canonical = (text: string): string | undefined => {
  const ip = parseIp(text);
  return ip === undefined ? undefined : formatIp(ip);
};

describe('parseIp and formatIp', () => {
  const table: [string, string | undefined][] = [
    ['192.0.2.1', '192.0.2.1'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['256.1.1.1', undefined],
    ['01.2.3.4', undefined], // leading zero: octal to some parsers
    ['1.2.3', undefined],
    ['', undefined],
    ['not an ip', undefined],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'], // first of two equal runs
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'], // the longer run
    ['2001:db8:1:1:1:1:1:1', '2001:db8:1:1:1:1:1:1'],
    ['2001:db8::1:1:1:1:1', '2001:db8:0:1:1:1:1:1'], // a single zero group is not compressed
    ['::', '::'],
    ['::1', '::1'],
    ['fe80::1%eth0', 'fe80::1'],
    ['::ffff:192.0.2.1', '192.0.2.1'], // IPv4-mapped reads as IPv4
    ['::FFFF:c000:0201', '192.0.2.1'],
    ['64:ff9b::192.0.2.1', '64:ff9b::c000:201'],
    ['1::2::3', undefined],
    ['1:2:3:4:5:6:7:8:9', undefined],
    ['12345::', undefined],
  ];
  for (const [input, want] of table) {
    it(`${JSON.stringify(input)} -> ${String(want)}`, () => assert.equal(canonical(input), want));
  }
});

describe('maskIp and ranges', () => {
  it('masks an IPv6 address to its /56', () => {
    assert.equal(formatIp(maskIp(parseIp('2001:db8:1:1ff:a:b:c:d')!, 56)), '2001:db8:1:100::');
  });

  it('matches addresses against CIDR ranges of both families', () => {
    const v4 = parseIpRange('10.0.0.0/8', 'r');
    const v6 = parseIpRange('2001:db8::/32', 'r');
    const odd = parseIpRange('192.168.1.128/25', 'r');
    assert.ok(inRange(v4, parseIp('10.255.0.1')!));
    assert.ok(!inRange(v4, parseIp('11.0.0.1')!));
    assert.ok(inRange(v4, parseIp('::ffff:10.1.2.3')!));
    assert.ok(inRange(v6, parseIp('2001:db8:ffff::1')!));
    assert.ok(!inRange(v6, parseIp('2001:db9::1')!));
    assert.ok(!inRange(v6, parseIp('10.0.0.1')!));
    assert.ok(inRange(odd, parseIp('192.168.1.200')!));
    assert.ok(!inRange(odd, parseIp('192.168.1.100')!));
    assert.ok(inRange(parseIpRange('::ffff:10.0.0.0/104', 'r'), parseIp('10.9.9.9')!));
    assert.ok(inRange(parseIpRange('127.0.0.1', 'r'), parseIp('127.0.0.1')!));
  });

  it('refuses ranges that are not ranges, naming the option', () => {
    for (const bad of ['10.0.0.0/33', '10.0.0.0/', 'x/8', '::/129', '10.0.0.0/8x']) {
      assert.throws(
        () => parseIpRange(bad, 'trustProxy[0]'),
        (e: unknown) => e instanceof FloodgateError && e.code === 'INVALID_OPTION' && e.option === 'trustProxy[0]',
      );
    }
  });
});
