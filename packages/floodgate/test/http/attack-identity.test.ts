/**
 * The attack suite of issue 14 on all five adapters, each on a real loopback server: a client
 * trying to move its requests to another key, or to mint keys that deny others. In every case the
 * throttled key never passes, newcomers stay admitted, and every request gets an answer.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { byHeader, byIp, type HttpLimitOptions } from '../../src/http/index.js';
import { fixedWindow, Limiter, ManualClock, MemoryStore, tokenBucket } from '../../src/index.js';
import { adapters, type Running } from './servers.js';
import { memoryLogger } from './support.js';

/** A limiter of `limit` per hour on a manual clock, so nothing refills during the test. */
const perHour = (limit: number, store?: MemoryStore): Limiter =>
  new Limiter({
    policy: fixedWindow({ limit, windowMs: 3_600_000 }),
    clock: new ManualClock(0),
    ...(store ? { store } : {}),
  });

for (const [name, start] of Object.entries(adapters)) {
  describe(`attack suite on ${name}`, () => {
    let app: Running | undefined;
    const run = async (options: HttpLimitOptions<unknown>): Promise<string> => {
      app = await start({ logger: memoryLogger(), ...options });
      return app.url;
    };
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });
    /** The status of GET /ok with `headers`; every request must be answered within 5 s. */
    const status = async (url: string, headers: Record<string, string> = {}): Promise<number> => {
      const res = await fetch(`${url}/ok`, { headers, signal: AbortSignal.timeout(5000) });
      await res.arrayBuffer();
      return res.status;
    };
    const statuses = async (url: string, headerSets: Record<string, string>[]): Promise<number[]> => {
      const out: number[] = [];
      for (const h of headerSets) out.push(await status(url, h));
      return out;
    };

    it("spoofed forwarding headers without trustProxy: every request is the socket's", async () => {
      const url = await run({ limiter: perHour(2) });
      const got = await statuses(url, [
        { 'x-forwarded-for': '198.51.100.1' },
        { 'x-forwarded-for': '198.51.100.2' },
        { 'x-forwarded-for': '198.51.100.3' },
        { forwarded: 'for=198.51.100.4' },
      ]);
      assert.deepEqual(got, [200, 200, 429, 429]);
    });

    it("prepended addresses behind one trusted proxy: the proxy's own entry decides", async () => {
      const url = await run({ limiter: perHour(2), trustProxy: 1 });
      // What the proxy forwards: the client's own header, then the client's address (203.0.113.66).
      const got = await statuses(
        url,
        ['', '6.6.6.6', '1.1.1.1, 2.2.2.2', 'garbage', '::1'].map((prefix) => ({
          'x-forwarded-for': `${prefix}${prefix ? ', ' : ''}203.0.113.66`,
        })),
      );
      assert.deepEqual(got, [200, 200, 429, 429, 429]);
    });

    it('quote injection in Forwarded: never keyed (nor allow-listed) as the proxy', async () => {
      const url = await run({
        limiter: perHour(3),
        trustProxy: 1,
        forwardedHeader: 'forwarded',
        allowList: ['127.0.0.1'],
      });
      const injected = ['for="', 'for="\\"', 'proto="http', 'for="[', 'x="a\\', '"'];
      const got = await statuses(
        url,
        injected.flatMap((prefix) => [
          { forwarded: `${prefix}, for=203.0.113.66` },
          { forwarded: `${prefix},for=203.0.113.66` },
        ]),
      );
      assert.equal(got.filter((s) => s === 200).length, 3, `12 injected requests: ${got.join(' ')}`);
      // An element naming nobody gets the shared `unknown` key, never the allow-listed proxy's.
      const unknown = await statuses(
        url,
        Array.from({ length: 5 }, () => ({ forwarded: 'for="unterminated' })),
      );
      assert.deepEqual(unknown, [200, 200, 200, 429, 429]);
    });

    it('IPv6 rotation inside a /56, and inside a /64 when keyed by /64', async () => {
      const url = await run({
        dimensions: [
          { name: 'site', limiter: perHour(3), key: byIp() },
          { name: 'host', limiter: perHour(1000), key: byIp({ ipv6PrefixBits: 64 }) },
        ],
        trustProxy: 1,
      });
      const rotating = Array.from({ length: 6 }, (_, i) => ({
        'x-forwarded-for': `2001:db8:1:${(0x100 + i * 0x11).toString(16)}::${i + 1}`,
      }));
      assert.deepEqual(await statuses(url, rotating), [200, 200, 200, 429, 429, 429]);
      assert.equal(await status(url, { 'x-forwarded-for': '2001:db8:1:200::1' }), 200, 'the next /56 is another site');
    });

    it('IPv6 rotation inside a /64 under byIp({ ipv6PrefixBits: 64 })', async () => {
      const url = await run({ limiter: perHour(2), key: byIp({ ipv6PrefixBits: 64 }), trustProxy: 1 });
      const rotating = ['2001:db8::1', '2001:db8::ffff:1', '2001:db8::dead:beef:1'].map((a) => ({
        'x-forwarded-for': a,
      }));
      assert.deepEqual(await statuses(url, rotating), [200, 200, 429]);
    });

    it('IPv4-mapped IPv6 is the same client as its IPv4 address', async () => {
      const url = await run({ limiter: perHour(2), trustProxy: 1 });
      const forms = ['203.0.113.5', '::ffff:203.0.113.5', '::FFFF:cb00:7105', '[::ffff:203.0.113.5]:80'].map((a) => ({
        'x-forwarded-for': a,
      }));
      assert.deepEqual(await statuses(url, forms), [200, 200, 429, 429]);
    });

    it('200,000 fresh identities while one key is throttled: the key stays throttled, newcomers pass', async () => {
      const store = new MemoryStore({ maxKeys: 20_000 });
      // The stated bound: at 10x maxKeys keys of one unit each, limits of 10 or more (see OverflowSketch).
      const limiter = new Limiter({
        policy: tokenBucket({ capacity: 10, refillPerSecond: 1e-6 }),
        clock: new ManualClock(0),
        store,
      });
      const url = await run({ limiter, key: byHeader('x-id') });
      const victim = await statuses(
        url,
        Array.from({ length: 11 }, () => ({ 'x-id': 'victim' })),
      );
      assert.deepEqual(victim, [...Array.from({ length: 10 }, () => 200), 429]);
      // The flood: 200,000 identities straight into the store, under the keys the gate uses, and more over HTTP.
      for (let i = 0; i < 200_000; i++) limiter.consumeSync(`default/header:x-id:minted-${i}`);
      const minted = await statuses(
        url,
        Array.from({ length: 100 }, (_, i) => ({ 'x-id': `minted-http-${i}` })),
      );
      assert.ok(
        minted.every((s) => s === 200 || s === 429),
        'no 503 store-full for anyone',
      );
      assert.equal(await status(url, { 'x-id': 'victim' }), 429, 'the throttled key never passes');
      const honest = await statuses(
        url,
        Array.from({ length: 100 }, (_, i) => ({ 'x-id': `honest-${i}` })),
      );
      assert.ok(
        honest.filter((s) => s === 200).length >= 99,
        `honest newcomers admitted: ${honest.filter((s) => s === 200).length} of 100`,
      );
      assert.ok(store.size <= 20_000);
    });

    it('oversized headers and keys: hashed into bounded keys, never crashing or hanging', async () => {
      const url = await run({
        limiter: perHour(2),
        key: byHeader('x-id'),
        trustProxy: 1,
        forwardedHeader: 'forwarded',
      });
      const big = 'k'.repeat(12_000); // under node's 16 KB header limit; 1 MB is refused by node itself
      assert.deepEqual(
        await statuses(url, [{ 'x-id': big }, { 'x-id': big }, { 'x-id': big }, { 'x-id': `${big}!` }]),
        [200, 200, 429, 200],
      );
      const huge = await fetch(`${url}/ok`, {
        headers: { 'x-id': 'k'.repeat(1 << 20) },
        signal: AbortSignal.timeout(5000),
      }).then(
        async (r) => (await r.arrayBuffer(), r.status),
        () => 0, // the server may close the connection while the client is still sending
      );
      assert.ok(huge === 431 || huge === 400 || huge === 0, `a 1 MB header: ${huge}`);
      assert.equal(await status(url, { 'x-id': 'after' }), 200, 'the server still answers');
      const longChain = `${'for=192.0.2.1, '.repeat(700)}for=203.0.113.7`;
      assert.equal(await status(url, { 'x-id': 'chain', forwarded: longChain }), 200);
    });

    it('non-ASCII identities keep their own keys', async () => {
      const url = await run({ limiter: perHour(1), key: byHeader('x-id') });
      // Latin-1 bytes (obs-text) are what HTTP/1.1 carries beyond ASCII.
      assert.deepEqual(
        await statuses(url, [
          { 'x-id': 'caf\u00e9' },
          { 'x-id': 'cafe' },
          { 'x-id': 'caf\u00e9' },
          { 'x-id': '\u00ff\u00fe' },
        ]),
        [200, 200, 429, 200],
      );
    });
  });
}
