import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ClientIpResolver, type TrustProxyOptions } from '../../src/http/index.js';
import { forwardedNodes, xForwardedForNodes } from '../../src/http/forwarded.js';
import { FakeView, memoryLogger } from './support.js';
import { runs } from '../support/sweep.js';

const PROXY = '10.0.0.1';

function clientIp(options: TrustProxyOptions, headers: Record<string, string>, remote = PROXY): string {
  return new FakeView(new ClientIpResolver(options, memoryLogger()), { remote, headers }).ip;
}

describe('Forwarded (RFC 7239) read by its grammar', () => {
  const table: [string, string[]][] = [
    ['for=192.0.2.43', ['192.0.2.43']],
    ['For="[2001:db8:cafe::17]:4711"', ['2001:db8:cafe::17']],
    ['for=192.0.2.60;proto=http;by=203.0.113.43', ['192.0.2.60']],
    ['for=192.0.2.43, for=198.51.100.17', ['198.51.100.17', '192.0.2.43']],
    ['for="_gazonk"', ['_gazonk']],
    ['for=_hidden:_port', ['_hidden']],
    ['for=unknown', ['unknown']],
    ['for="192.0.2.1:8080"', ['192.0.2.1']],
    ['for="2001:db8::1"', ['2001:db8::1']], // quoted IPv6 without brackets, as some proxies write it
    ['proto=https;host="a,b;c"', ['unknown']], // no for=: the element names nobody
    ['for=1.2.3.4;for=5.6.7.8', ['unknown']], // a parameter twice
    ['for="1.2.3.4";proto="a\\"b", for=9.9.9.9', ['9.9.9.9', '1.2.3.4']],
    ['host="x, for=6.6.6.6";for=1.2.3.4', ['1.2.3.4']], // a comma inside a quoted string separates nothing
    ['for=1.2.3.4,,  ,for=5.6.7.8', ['5.6.7.8', '1.2.3.4']], // empty list elements are skipped
    ['for=[2001:db8::1', ['unknown']],
    ['for="[2001:db8::1]:99999999"', ['unknown']],
    ['for=01.2.3.4', ['unknown']],
    ['for=1.2.3.4 junk', ['unknown']],
  ];
  for (const [value, nodes] of table) {
    it(`reads ${JSON.stringify(value)}`, () => assert.deepEqual(forwardedNodes(value, 8), nodes));
  }

  it('stops at quotes that do not balance: nothing to their left can be delimited', () => {
    assert.deepEqual(forwardedNodes('for=1.1.1.1, for=", for=203.0.113.66', 8), ['203.0.113.66', 'unknown']);
    assert.deepEqual(forwardedNodes('for="\\", for=203.0.113.66', 8), ['203.0.113.66', 'unknown']);
    assert.deepEqual(forwardedNodes('proto="http, for=203.0.113.66', 8), ['203.0.113.66', 'unknown']);
  });

  it('reads no more elements than asked, however long the value', () => {
    const value = `${'for=192.0.2.1, '.repeat(100_000)}for=198.51.100.1`;
    assert.deepEqual(forwardedNodes(value, 2), ['198.51.100.1', '192.0.2.1']);
  });
});

describe('X-Forwarded-For read as a list', () => {
  it('reads addresses with and without ports, nearest first', () => {
    assert.deepEqual(xForwardedForNodes('192.0.2.1:80, [2001:db8::1]:443 ,2001:db8::2,, 198.51.100.9', 8), [
      '198.51.100.9',
      '2001:db8::2',
      '2001:db8::1',
      '192.0.2.1',
    ]);
    assert.deepEqual(xForwardedForNodes('"1.2.3.4", 1.2.3.4:x, unknown, _x', 8), [
      'unknown',
      'unknown',
      'unknown',
      'unknown',
    ]);
  });
});

describe('quote injection (issue 14): the proxy appends its element to what the client sent', () => {
  const options = { trustProxy: 1, forwardedHeader: 'forwarded' as const };
  for (const prefix of ['for="', 'for="\\"', 'proto="http', 'for="a\\', '"', '\\', 'for=1.2.3.4;x="']) {
    it(`keys ${JSON.stringify(prefix)} + the proxy's element by the client, never by the proxy`, () => {
      assert.equal(clientIp(options, { forwarded: `${prefix}, for=203.0.113.66` }), '203.0.113.66');
    });
  }

  it("gives a trusted element that names no address a key of its own, not the proxy's", () => {
    assert.equal(clientIp(options, { forwarded: 'for=unknown' }), 'unknown');
    assert.equal(clientIp(options, { forwarded: 'for="garbage' }), 'unknown');
    assert.equal(clientIp(options, { forwarded: 'for=_client7' }), '_client7');
    assert.equal(
      clientIp({ trustProxy: [`${PROXY}/32`], forwardedHeader: 'forwarded' }, { forwarded: 'for=_client7' }),
      '_client7',
    );
    assert.equal(clientIp({ trustProxy: 1 }, { 'x-forwarded-for': '6.6.6.6, garbage' }), 'unknown');
    // Deeper than the malformed element is never believed either.
    assert.equal(clientIp({ trustProxy: 3 }, { 'x-forwarded-for': '6.6.6.6, garbage, 192.0.2.8' }), 'unknown');
  });
});

/** Elements a proxy writes: well formed, with a for= node and other pairs in any order. */
const octet = fc.integer({ min: 0, max: 255 });
const ipv4 = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'));
const ipv6 = fc
  .array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 })
  .map((g) => g.map((x) => x.toString(16)).join(':'));
const node = fc.oneof(
  ipv4,
  ipv4.map((a) => `"${a}:8080"`),
  ipv6.map((a) => `"[${a}]"`),
  ipv6.map((a) => `"[${a}]:443"`),
  fc.stringMatching(/^_[a-z0-9]{1,8}$/),
);
const quotedText = fc.string({ maxLength: 12 }).map((s) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`);
const otherPair = fc.oneof(
  fc.constantFrom('proto=https', 'proto=http', 'by=10.0.0.9', 'host=example.com'),
  quotedText.map((q) => `host=${q}`),
);
const element = fc.tuple(node, fc.array(otherPair, { maxLength: 2 }), fc.boolean()).map(([n, others, first]) => {
  const pairs = first ? [`for=${n}`, ...others] : [...others, `for=${n}`];
  return pairs.join(';');
});
/** Anything a client may send, rich in the characters that matter to the grammar. */
const clientPrefix = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc
    .array(fc.constantFrom('"', '\\', ',', ';', '=', 'for', ' ', '[', ']', ':', '1.2.3.4', '_x', 'unknown'), {
      maxLength: 20,
    })
    .map((a) => a.join('')),
);

describe('a client-controlled prefix never changes the element chosen (properties)', () => {
  it('Forwarded: the trusted elements read the same whatever precedes them', () => {
    fc.assert(
      fc.property(
        clientPrefix,
        fc.array(element, { minLength: 1, maxLength: 4 }),
        fc.constantFrom(', ', ',', ' , '),
        (prefix, trusted, join) => {
          const suffix = trusted.join(join);
          const alone = forwardedNodes(suffix, trusted.length);
          assert.equal(alone.length, trusted.length);
          assert.deepEqual(forwardedNodes(`${prefix}${join}${suffix}`, trusted.length), alone);
          const options = { trustProxy: trusted.length, forwardedHeader: 'forwarded' as const };
          assert.equal(
            clientIp(options, { forwarded: `${prefix}${join}${suffix}` }),
            clientIp(options, { forwarded: suffix }),
          );
        },
      ),
      { numRuns: runs(500) },
    );
  });

  it('X-Forwarded-For: the trusted entries read the same whatever precedes them', () => {
    const entry = fc.oneof(
      ipv4,
      ipv4.map((a) => `${a}:1234`),
      ipv6,
      ipv6.map((a) => `[${a}]:443`),
    );
    fc.assert(
      fc.property(clientPrefix, fc.array(entry, { minLength: 1, maxLength: 4 }), (prefix, trusted) => {
        const suffix = trusted.join(', ');
        const alone = clientIp({ trustProxy: trusted.length }, { 'x-forwarded-for': suffix });
        assert.notEqual(alone, 'unknown');
        assert.equal(clientIp({ trustProxy: trusted.length }, { 'x-forwarded-for': `${prefix}, ${suffix}` }), alone);
      }),
      { numRuns: runs(500) },
    );
  });

  it('trusted CIDR ranges: the client is the first untrusted address from the right, whatever precedes it', () => {
    fc.assert(
      fc.property(clientPrefix, ipv4, fc.integer({ min: 0, max: 3 }), (prefix, client, proxies) => {
        const chain = [client, ...Array.from({ length: proxies }, (_, i) => `10.0.0.${i + 2}`)];
        const expected = client.startsWith('10.') ? undefined : client;
        const got = clientIp({ trustProxy: ['10.0.0.0/8'] }, { 'x-forwarded-for': `${prefix}, ${chain.join(', ')}` });
        if (expected !== undefined) assert.equal(got, expected);
      }),
      { numRuns: runs(300) },
    );
  });
});
