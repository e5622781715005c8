import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  byFunction,
  byHeader,
  byIp,
  byRoute,
  byUser,
  ClientIpResolver,
  firstOf,
  storeKey,
  type TrustProxyOptions,
} from '../../src/http/index.js';
import { FloodgateError } from '../../src/index.js';
import { FakeView, memoryLogger, type FakeRequest } from './support.js';

function clientIp(options: TrustProxyOptions, request: FakeRequest, logger = memoryLogger()): string {
  return new FakeView(new ClientIpResolver(options, logger), request).ip;
}

describe('client address and trustProxy', () => {
  const spoofed = { remote: '203.0.113.9', headers: { 'x-forwarded-for': '1.2.3.4', forwarded: 'for=5.6.7.8' } };

  it('ignores spoofed X-Forwarded-For and Forwarded unless a proxy is trusted, and warns once', () => {
    const logger = memoryLogger();
    const resolver = new ClientIpResolver({}, logger);
    assert.equal(new FakeView(resolver, spoofed).ip, '203.0.113.9');
    assert.equal(new FakeView(resolver, spoofed).ip, '203.0.113.9');
    assert.equal(logger.messages.length, 1);
    assert.match(logger.messages[0]!, /x-forwarded-for.*trustProxy is not set/);
  });

  it('does not warn when no forwarding header arrives', () => {
    const logger = memoryLogger();
    assert.equal(clientIp({}, { remote: '203.0.113.9' }, logger), '203.0.113.9');
    assert.deepEqual(logger.messages, []);
  });

  it('counts trusted hops back from the server', () => {
    const headers = { 'x-forwarded-for': '6.6.6.6, 1.1.1.1, 10.0.0.2' };
    assert.equal(clientIp({ trustProxy: 0 }, { remote: '10.0.0.1', headers }), '10.0.0.1');
    assert.equal(clientIp({ trustProxy: 1 }, { remote: '10.0.0.1', headers }), '10.0.0.2');
    assert.equal(clientIp({ trustProxy: 2 }, { remote: '10.0.0.1', headers }), '1.1.1.1');
    // A client prepending its own entry (6.6.6.6) cannot move the answer of a correct hop count.
    assert.equal(clientIp({ trustProxy: 9 }, { remote: '10.0.0.1', headers }), '6.6.6.6');
  });

  it('steps back through trusted CIDR ranges only', () => {
    const trustProxy = ['10.0.0.0/8', 'fd00::/8'];
    const headers = { 'x-forwarded-for': '6.6.6.6, 198.51.100.7, 10.1.1.1' };
    assert.equal(clientIp({ trustProxy }, { remote: '10.0.0.1', headers }), '198.51.100.7');
    assert.equal(clientIp({ trustProxy }, { remote: 'fd00::5', headers }), '198.51.100.7');
    // From an untrusted peer the header is the peer's own claim, and ignored.
    assert.equal(clientIp({ trustProxy }, { remote: '198.51.100.99', headers }), '198.51.100.99');
  });

  it('reads RFC 7239 Forwarded when told to, with quoting, IPv6 brackets and ports', () => {
    const headers = {
      forwarded: 'for=6.6.6.6, For="[2001:DB8:cafe::17]:4711";proto=https, for=10.0.0.2:80;by=10.0.0.1',
    };
    const options = { trustProxy: ['10.0.0.0/8'], forwardedHeader: 'forwarded' as const };
    assert.equal(clientIp(options, { remote: '10.0.0.1', headers }), '2001:db8:cafe::17');
    assert.equal(clientIp({ ...options, trustProxy: 1 }, { remote: '10.0.0.1', headers }), '10.0.0.2');
  });

  it('stops at an entry that is no address (obfuscated or unknown), which becomes the client, never the proxy', () => {
    const headers = { forwarded: 'for=1.2.3.4, for=_hidden, for=unknown' };
    // The walk ends at the first element naming no address: 1.2.3.4 beyond the gap is not believed,
    // and the request is not keyed by the proxy (10.0.0.1) that other clients share.
    assert.equal(clientIp({ trustProxy: 3, forwardedHeader: 'forwarded' }, { remote: '10.0.0.1', headers }), 'unknown');
    assert.equal(
      clientIp(
        { trustProxy: 3, forwardedHeader: 'forwarded' },
        { remote: '10.0.0.1', headers: { forwarded: 'for=1.2.3.4, for=_hidden' } },
      ),
      '_hidden',
    );
    assert.equal(
      clientIp({ trustProxy: 3 }, { remote: '10.0.0.1', headers: { 'x-forwarded-for': '1.2.3.4, garbage, 10.0.0.2' } }),
      'unknown',
    );
  });

  it('warns when a proxy is trusted but writes the other header', () => {
    const logger = memoryLogger();
    assert.equal(
      clientIp({ trustProxy: 1 }, { remote: '10.0.0.1', headers: { forwarded: 'for=1.2.3.4' } }, logger),
      '10.0.0.1',
    );
    assert.match(logger.messages[0]!, /trustProxy reads "x-forwarded-for" only/);
  });

  it('treats IPv4-mapped IPv6 peers as IPv4, and a missing address as unknown (warned once)', () => {
    assert.equal(clientIp({}, { remote: '::ffff:192.0.2.1' }), '192.0.2.1');
    const logger = memoryLogger();
    assert.equal(clientIp({}, { remote: undefined }, logger), 'unknown');
    assert.match(logger.messages[0]!, /no client address/);
  });

  it('refuses bad trust settings with a typed error', () => {
    for (const trustProxy of [-1, 1.5, true, ['10.0.0.0/99']]) {
      assert.throws(
        () => new ClientIpResolver({ trustProxy } as unknown as TrustProxyOptions, memoryLogger()),
        FloodgateError,
      );
    }
  });
});

describe('identities', () => {
  const resolver = new ClientIpResolver({ trustProxy: 1 }, memoryLogger());
  const from = (xff: string): FakeView =>
    new FakeView(resolver, { remote: '127.0.0.1', headers: { 'x-forwarded-for': xff } });

  it('groups IPv6 clients by /56, so rotating addresses inside it shares one key', () => {
    const ip = byIp();
    const keys = ['2001:db8:1:100::1', '2001:db8:1:1ff:ffff::2', '2001:db8:1:1a0:1234:5678:9abc:def0'].map((a) =>
      ip(from(a)),
    );
    assert.deepEqual(new Set(keys), new Set(['ip:2001:db8:1:100::/56']));
    assert.equal(ip(from('2001:db8:1:200::1')), 'ip:2001:db8:1:200::/56');
    assert.equal(byIp({ ipv6PrefixBits: 64 })(from('2001:db8:1:1ff::1')), 'ip:2001:db8:1:1ff::/64');
    assert.equal(byIp({ ipv6PrefixBits: 128 })(from('2001:db8::1')), 'ip:2001:db8::1');
  });

  it('keys IPv4 by address, or by a prefix when asked, and mapped IPv6 as IPv4', () => {
    assert.equal(byIp()(from('192.0.2.77')), 'ip:192.0.2.77');
    assert.equal(byIp()(from('::ffff:192.0.2.77')), 'ip:192.0.2.77');
    assert.equal(byIp({ ipv4PrefixBits: 24 })(from('192.0.2.77')), 'ip:192.0.2.0/24');
    assert.equal(byIp()(from('garbage')), 'ip:unknown');
    const obfuscated = new FakeView(
      new ClientIpResolver({ trustProxy: 1, forwardedHeader: 'forwarded' }, memoryLogger()),
      { headers: { forwarded: 'for=_c7' } },
    );
    assert.equal(byIp()(obfuscated), 'ip:_c7');
  });

  it('reads headers, users, routes and functions, each under its own kind', () => {
    const view = new FakeView(resolver, { headers: { 'x-api-key': ' k1 ' }, method: 'POST', route: '/a/:id' });
    assert.equal(byHeader('X-API-Key')(view), 'header:x-api-key:k1');
    assert.equal(byHeader('x-missing')(view), undefined);
    assert.equal(byUser((raw: FakeRequest) => raw.method)(view), 'user:POST');
    assert.equal(byUser(() => 42)(view), 'user:42');
    assert.equal(byUser(() => '')(view), undefined);
    assert.equal(byUser(() => null)(view), undefined);
    assert.equal(byRoute()(view), 'route:POST /a/:id');
    assert.equal(byRoute({ method: false })(view), 'route:/a/:id');
    assert.equal(byFunction(() => '')(view), 'fn:');
    assert.equal(
      firstOf(
        byHeader('x-missing'),
        byUser(() => 'u'),
        byIp(),
      )(view),
      'user:u',
    );
  });

  it('refuses identities built from bad arguments', () => {
    assert.throws(() => byHeader('bad name'), FloodgateError);
    assert.throws(() => byIp({ ipv6PrefixBits: 0 }), FloodgateError);
    assert.throws(() => byIp({ ipv4PrefixBits: 33 }), FloodgateError);
    assert.throws(() => firstOf(), FloodgateError);
  });
});

describe('storeKey', () => {
  it('namespaces by dimension, so equal identities in two dimensions never collide', () => {
    assert.notEqual(storeKey('ip', 'user:a', 256), storeKey('user', 'user:a', 256));
    assert.equal(storeKey('d', 'fn:', 256), 'd/fn:');
  });

  it('bounds huge keys by hashing them, keeping a readable prefix', () => {
    const huge = `user:${'x'.repeat(1_000_000)}`;
    const key = storeKey('d', huge, 256);
    assert.ok(key.length <= 256);
    assert.match(key, /^d\/#[A-Za-z0-9_-]{43}:user:x+$/);
    assert.notEqual(storeKey('d', `${huge}y`, 256), key);
  });

  it('keeps unicode and lone surrogates distinct, even when hashed', () => {
    const long = (s: string): string => `fn:${'é'.repeat(300)}${s}`;
    assert.notEqual(storeKey('d', long('\uD800'), 256), storeKey('d', long('\uD801'), 256));
    assert.notEqual(storeKey('d', 'fn:e\u0301', 256), storeKey('d', 'fn:\u00e9', 256));
    const emoji = storeKey('d', `fn:${'😀'.repeat(200)}`, 256);
    assert.ok(!/[\uD800-\uDBFF]$/.test(emoji), 'the readable prefix never ends in half a pair');
  });

  it('cannot be forged: a short identity never equals a hashed key', () => {
    const hashed = storeKey('d', `fn:${'a'.repeat(400)}`, 256);
    const forged = hashed.slice('d/'.length);
    assert.notEqual(storeKey('d', forged, 256), hashed);
  });
});
