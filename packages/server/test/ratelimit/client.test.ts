import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FloodgateError } from 'floodgate';
import { RateLimitClient } from '../../src/ratelimit/index.js';
import { domainsOf, run, type Running } from './support.js';
import { closedPort, silentPort } from '../support/ports.js';

const CONFIG =
  'domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: minute, requests_per_unit: 2, name: per-user }\n';

function code(expected: string): (e: unknown) => boolean {
  return (e) => {
    assert.ok(e instanceof FloodgateError, `expected a FloodgateError, got ${String(e)}`);
    assert.equal(e.code, expected, e.message);
    return true;
  };
}

for (const transport of ['http', 'grpc'] as const) {
  describe(`RateLimitClient over ${transport === 'http' ? 'the JSON API' : 'gRPC'}`, () => {
    let r: Running;
    let client: RateLimitClient;
    before(async () => {
      r = await run(domainsOf(CONFIG));
      const port = transport === 'http' ? r.servers.httpPort! : r.servers.grpcPort!;
      client = new RateLimitClient({ url: `${transport}://127.0.0.1:${port}`, timeoutMs: 2000 });
    });
    after(async () => {
      await client.close();
      await r.close();
    });

    it('decides, with statuses and headers, and refuses past the limit', async () => {
      const ask = { domain: 'app', descriptors: [{ entries: [['user', 'ann']] as Array<[string, string]> }] };
      const first = await client.shouldRateLimit(ask);
      assert.equal(first.allowed, true);
      assert.equal(first.reason, 'ok');
      assert.deepEqual(first.statuses, [
        {
          code: 'OK',
          limit: { requestsPerUnit: 2, unit: 'MINUTE', name: 'per-user' },
          remaining: 1,
          durationUntilResetMs: 60_000,
        },
      ]);
      assert.deepEqual(first.headers[0], ['ratelimit-policy', '"per-user";q=2;w=60']);
      await client.shouldRateLimit(ask);
      const third = await client.shouldRateLimit(ask);
      assert.deepEqual([third.allowed, third.reason, third.statuses[0]!.code], [false, 'limit', 'OVER_LIMIT']);
    });

    it('hits 0 asks without counting; a malformed request rejects with INVALID_OPTION whatever onError says', async () => {
      const ask = await client.shouldRateLimit({
        domain: 'app',
        descriptors: [{ entries: [{ key: 'user', value: 'bob' }], hitsAddend: 0 }],
      });
      assert.equal(ask.statuses[0]!.remaining, 2);
      const lenient = new RateLimitClient({
        url: `${transport}://127.0.0.1:${transport === 'http' ? r.servers.httpPort! : r.servers.grpcPort!}`,
        onError: 'fail-open',
      });
      await assert.rejects(
        lenient.shouldRateLimit({ domain: '', descriptors: [{ entries: [['user', 'x']] }] }),
        code('INVALID_OPTION'),
      );
      await lenient.close();
    });
  });

  describe(`RateLimitClient over ${transport}: failures typed as a store's`, () => {
    it('a closed port: STORE_ERROR, or fail-open / fail-closed saying so', async () => {
      const url = `${transport}://127.0.0.1:${await closedPort()}`;
      const strict = new RateLimitClient({ url, timeoutMs: 1000 });
      await assert.rejects(
        strict.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [['user', 'x']] }] }),
        code('STORE_ERROR'),
      );
      const open = new RateLimitClient({ url, timeoutMs: 1000, onError: 'fail-open' });
      const admitted = await open.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [['user', 'x']] }] });
      assert.deepEqual([admitted.allowed, admitted.reason], [true, 'fail-open']);
      const closed = new RateLimitClient({ url, timeoutMs: 1000, onError: 'fail-closed' });
      const refused = await closed.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [['user', 'x']] }] });
      assert.deepEqual(
        [refused.allowed, refused.reason, refused.statuses[0]!.code],
        [false, 'fail-closed', 'OVER_LIMIT'],
      );
      await Promise.all([strict.close(), open.close(), closed.close()]);
    });

    it('a service that never answers: STORE_TIMEOUT at the deadline', async () => {
      const silent = await silentPort();
      const client = new RateLimitClient({ url: `${transport}://127.0.0.1:${silent.port}`, timeoutMs: 150 });
      const started = performance.now();
      await assert.rejects(
        client.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [['user', 'x']] }] }),
        code('STORE_TIMEOUT'),
      );
      assert.ok(performance.now() - started < 3000, 'settles near its deadline, not at some socket timeout');
      await client.close();
      await silent.close();
    });
  });
}

describe('RateLimitClient options', () => {
  it('refuses a bad url, timeoutMs or onError with INVALID_OPTION naming it', () => {
    assert.throws(
      () => new RateLimitClient({ url: 'ftp://x:1' }),
      (e: FloodgateError) => e.option === 'RateLimitClient.url',
    );
    assert.throws(
      () => new RateLimitClient({ url: 'http://127.0.0.1:1', timeoutMs: 0 }),
      (e: FloodgateError) => e.option === 'RateLimitClient.timeoutMs',
    );
    assert.throws(
      () => new RateLimitClient({ url: 'http://127.0.0.1:1', onError: 'maybe' as never }),
      (e: FloodgateError) => e.option === 'RateLimitClient.onError',
    );
  });
});
