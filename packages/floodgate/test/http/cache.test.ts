import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BoundedCache } from '../../src/http/cache.js';
import { integerText } from '../../src/http/headers.js';
import { ClientIpResolver, HttpGate, storeKey, type TrustProxyOptions, type Verdict } from '../../src/http/index.js';
import { partitionDigest, StoreKeys } from '../../src/http/keys.js';
import { fixedWindow, Limiter, ManualClock } from '../../src/index.js';
import { FakeView, memoryLogger, type FakeRequest } from './support.js';

describe('BoundedCache', () => {
  it('never holds more than its capacity, and starts over when full', () => {
    const cache = new BoundedCache<number>(3);
    for (let i = 0; i < 10; i++) {
      cache.set(`k${i}`, i);
      assert.ok(cache.size <= 3);
      assert.equal(cache.get(`k${i}`), i);
    }
    assert.equal(cache.get('k0'), undefined);
  });

  it('does not store keys longer than its bound', () => {
    const cache = new BoundedCache<string>(8, 4);
    cache.set('long!', 'x');
    cache.set('tiny', 'y');
    assert.equal(cache.get('long!'), undefined);
    assert.equal(cache.get('tiny'), 'y');
    assert.equal(cache.size, 1);
  });
});

describe('client address memo', () => {
  const resolve = (resolver: ClientIpResolver, request: FakeRequest): string => new FakeView(resolver, request).ip;

  it('answers a repeated forwarding chain as the first time, per peer and header value', () => {
    const resolver = new ClientIpResolver({ trustProxy: ['10.0.0.0/8'] }, memoryLogger());
    const xff = (value: string, remote = '10.0.0.1'): FakeRequest => ({
      remote,
      headers: { 'x-forwarded-for': value },
    });
    for (let round = 0; round < 3; round++) {
      assert.equal(resolve(resolver, xff('198.51.100.7, 10.1.1.1')), '198.51.100.7');
      // The same header from a peer that is no trusted proxy names the peer itself.
      assert.equal(resolve(resolver, xff('198.51.100.7, 10.1.1.1', '203.0.113.5')), '203.0.113.5');
      // The same peer with another chain gets that chain's client.
      assert.equal(resolve(resolver, xff('6.6.6.6, 198.51.100.8')), '198.51.100.8');
      assert.equal(resolve(resolver, { remote: '10.0.0.1' }), '10.0.0.1');
    }
  });

  it('keeps each resolver to its own header: the same address via X-Forwarded-For and Forwarded', () => {
    const options = (forwardedHeader: TrustProxyOptions['forwardedHeader']): TrustProxyOptions => ({
      trustProxy: 1,
      forwardedHeader,
    });
    const xffResolver = new ClientIpResolver(options('x-forwarded-for'), memoryLogger());
    const forwardedResolver = new ClientIpResolver(options('forwarded'), memoryLogger());
    const both = {
      remote: '10.0.0.1',
      headers: { 'x-forwarded-for': '192.0.2.1', forwarded: 'for="[2001:db8::1]:443"' },
    };
    for (let round = 0; round < 2; round++) {
      assert.equal(resolve(xffResolver, both), '192.0.2.1');
      assert.equal(resolve(forwardedResolver, both), '2001:db8::1');
      assert.equal(
        resolve(forwardedResolver, { remote: '10.0.0.1', headers: { forwarded: 'for=192.0.2.1' } }),
        '192.0.2.1',
      );
      assert.equal(resolve(xffResolver, { remote: '10.0.0.1', headers: { forwarded: 'for=192.0.2.1' } }), '10.0.0.1');
    }
  });

  it('stays correct past its bound and for chains too long to remember', () => {
    const resolver = new ClientIpResolver({ trustProxy: 1 }, memoryLogger());
    for (let i = 0; i < 3000; i++) {
      const client = `198.51.${i >> 8}.${i & 255}`;
      assert.equal(resolve(resolver, { remote: '10.0.0.1', headers: { 'x-forwarded-for': client } }), client);
    }
    const long = `${'192.0.2.1, '.repeat(100)}198.51.100.9`;
    assert.equal(resolve(resolver, { remote: '10.0.0.1', headers: { 'x-forwarded-for': long } }), '198.51.100.9');
    assert.equal(resolve(resolver, { remote: '10.0.0.1', headers: { 'x-forwarded-for': long } }), '198.51.100.9');
  });
});

describe('StoreKeys', () => {
  it('gives what storeKey and partitionDigest give, for short and hashed identities alike', () => {
    const secret = Buffer.from('a test secret of 32 characters.');
    const keys = new StoreKeys('d', 128, secret);
    for (const identity of ['ip:192.0.2.1', `fn:${'x'.repeat(300)}`, '#odd', 'ip:192.0.2.1']) {
      const entry = keys.of(identity);
      assert.equal(entry.key, storeKey('d', identity, 128));
      assert.equal(entry.pk, partitionDigest(entry.key, secret).toString('base64'));
    }
    assert.equal(new StoreKeys('d', 256, undefined).of('ip:192.0.2.1').pk, undefined);
  });

  it("keeps one dimension's keys apart from another's", () => {
    assert.notEqual(
      new StoreKeys('a', 256, undefined).of('ip:1.2.3.4').key,
      new StoreKeys('b', 256, undefined).of('ip:1.2.3.4').key,
    );
  });

  it("writes a single dimension's pk from its store key, the same on every request", () => {
    const gate = new HttpGate<FakeRequest>({
      limiter: new Limiter({ policy: fixedWindow({ limit: 5, windowMs: 60_000 }), clock: new ManualClock(0) }),
      partitionKeys: { secret: 'a test secret of 32 characters.' },
    });
    const resolver = new ClientIpResolver({}, memoryLogger());
    const pk = `;pk=:${partitionDigest('default/ip:192.0.2.1', Buffer.from('a test secret of 32 characters.')).toString('base64')}:`;
    for (let i = 0; i < 2; i++) {
      const verdict = gate.check(new FakeView(resolver, { remote: '192.0.2.1' })) as Verdict;
      assert.deepEqual(verdict.headers, [
        ['ratelimit-policy', `"default";q=5;w=60${pk}`],
        ['ratelimit', `"default";r=${4 - i};t=60${pk}`],
      ]);
    }
  });
});

describe('integerText', () => {
  it('writes whole numbers as String does, however large', () => {
    const samples = [
      0,
      7,
      999_999_999,
      1e9,
      1e9 + 1,
      1_000_000_007_000,
      999_999_999_999,
      2 ** 31,
      2 ** 53 - 1,
      1e12 + 5,
    ];
    for (const n of samples) assert.equal(integerText(n), String(n));
    for (const n of [2 ** 53, 1e21, 1.5, -3, Infinity]) assert.equal(integerText(n), String(n));
  });
});
